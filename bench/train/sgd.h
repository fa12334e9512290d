/* sgd.h — stochastic gradient descent with heavy-ball momentum and L2 weight
 * decay (PyTorch's SGD: v = mu v + g + wd w; w -= lr v). */
#ifndef TRAIN_SGD_H
#define TRAIN_SGD_H

#include <stddef.h>

typedef struct {
    float lr;
    float momentum;
    float weight_decay; /* applied to weight matrices only, not biases */
} sgd_options;

/* One step over the fused parameter layout of mlp.h; velocity starts zeroed. */
void sgd_step(const sgd_options *o, float *params, float *velocity, const float *grads);

#endif
