/* mlp.h — the 784-512-256-10 ReLU perceptron with a softmax cross-entropy
 * loss. All parameters live in one float array, and so do all gradients, in
 * the order W1 b1 W2 b2 W3 b3: the gradient array is the fusion buffer that
 * one MPI_Allreduce sums (Horovod packs its tensors the same way). */
#ifndef TRAIN_MLP_H
#define TRAIN_MLP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { MLP_IN = 784, MLP_H1 = 512, MLP_H2 = 256, MLP_OUT = 10 };

enum {
    MLP_W1 = 0, MLP_B1 = MLP_W1 + MLP_IN * MLP_H1,
    MLP_W2 = MLP_B1 + MLP_H1, MLP_B2 = MLP_W2 + MLP_H1 * MLP_H2,
    MLP_W3 = MLP_B2 + MLP_H2, MLP_B3 = MLP_W3 + MLP_H2 * MLP_OUT,
    MLP_PARAMS = MLP_B3 + MLP_OUT,
};

enum { MLP_TENSORS = 6 };

typedef struct {
    const char *name;
    size_t offset; /* in floats, into the parameter and gradient arrays */
    size_t count;
    size_t fan_in; /* inputs per output unit; 0 for a bias */
} mlp_tensor;

extern const mlp_tensor mlp_tensors[MLP_TENSORS];

/* Activations and their gradients for minibatches of up to `batch` rows. */
typedef struct {
    size_t batch;
    float *x;  /* batch x MLP_IN, the pixels scaled to [0, 1] */
    float *a1; /* batch x MLP_H1, after ReLU */
    float *a2; /* batch x MLP_H2, after ReLU */
    float *p;  /* batch x MLP_OUT, softmax probabilities, then dLoss/dlogits */
    float *d1; /* batch x MLP_H1 */
    float *d2; /* batch x MLP_H2 */
} mlp_work;

int mlp_work_init(mlp_work *w, size_t batch);
void mlp_work_free(mlp_work *w);

/* He initialisation: W ~ N(0, 2 / fan_in), biases zero. */
void mlp_init(float *params, uint64_t seed);

/* Copies rows idx[0..rows) of `images` (28x28 bytes each) into w->x. */
void mlp_load_batch(mlp_work *w, const uint8_t *images, const uint32_t *idx, size_t rows);

/* Forward pass over w->x; returns the summed cross-entropy of the rows
 * against `labels` and leaves the probabilities in w->p. */
double mlp_forward(const float *params, mlp_work *w, size_t rows, const uint8_t *labels);

/* Backward pass after mlp_forward: writes the gradient of the mean loss over
 * the rows into grads (MLP_PARAMS floats, the fused layout). */
void mlp_backward(const float *params, mlp_work *w, size_t rows, const uint8_t *labels,
                  float *grads);

/* Forward pass over w->x; returns how many rows are classified as `labels`. */
size_t mlp_count_correct(const float *params, mlp_work *w, size_t rows, const uint8_t *labels);

#endif
