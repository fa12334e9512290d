/* sgd.c — the update, tensor by tensor so biases can skip weight decay. */
#include "sgd.h"

#include "mlp.h"

static void update(float *restrict w, float *restrict v, const float *restrict g, size_t n,
                   float lr, float mu, float wd)
{
    for (size_t i = 0; i < n; i++) {
        v[i] = mu * v[i] + g[i] + wd * w[i];
        w[i] -= lr * v[i];
    }
}

void sgd_step(const sgd_options *o, float *params, float *velocity, const float *grads)
{
    for (size_t t = 0; t < MLP_TENSORS; t++) {
        const mlp_tensor *T = &mlp_tensors[t];
        float wd = T->fan_in ? o->weight_decay : 0.0f;
        update(params + T->offset, velocity + T->offset, grads + T->offset, T->count, o->lr,
               o->momentum, wd);
    }
}
