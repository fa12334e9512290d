/* mlp.c — forward and backward passes; the matrix products are row-major
 * cblas_sgemm calls, the rest is loops the compiler vectorises. */
#include "mlp.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"

const mlp_tensor mlp_tensors[MLP_TENSORS] = {
    { "W1", MLP_W1, MLP_IN * MLP_H1, MLP_IN },
    { "b1", MLP_B1, MLP_H1, 0 },
    { "W2", MLP_W2, MLP_H1 * MLP_H2, MLP_H1 },
    { "b2", MLP_B2, MLP_H2, 0 },
    { "W3", MLP_W3, MLP_H2 * MLP_OUT, MLP_H2 },
    { "b3", MLP_B3, MLP_OUT, 0 },
};

int mlp_work_init(mlp_work *w, size_t batch)
{
    memset(w, 0, sizeof *w);
    w->batch = batch;
    w->x = malloc(batch * MLP_IN * sizeof(float));
    w->a1 = malloc(batch * MLP_H1 * sizeof(float));
    w->a2 = malloc(batch * MLP_H2 * sizeof(float));
    w->p = malloc(batch * MLP_OUT * sizeof(float));
    w->d1 = malloc(batch * MLP_H1 * sizeof(float));
    w->d2 = malloc(batch * MLP_H2 * sizeof(float));
    if (!w->x || !w->a1 || !w->a2 || !w->p || !w->d1 || !w->d2) {
        mlp_work_free(w);
        return -1;
    }
    return 0;
}

void mlp_work_free(mlp_work *w)
{
    free(w->x);
    free(w->a1);
    free(w->a2);
    free(w->p);
    free(w->d1);
    free(w->d2);
    memset(w, 0, sizeof *w);
}

void mlp_init(float *params, uint64_t seed)
{
    rng r = rng_stream(seed, RNG_PURPOSE_INIT);
    for (size_t t = 0; t < MLP_TENSORS; t++) {
        float *restrict v = params + mlp_tensors[t].offset;
        size_t n = mlp_tensors[t].count;
        if (mlp_tensors[t].fan_in == 0) {
            memset(v, 0, n * sizeof *v);
            continue;
        }
        double stddev = sqrt(2.0 / (double)mlp_tensors[t].fan_in);
        for (size_t i = 0; i < n; i++) v[i] = (float)(stddev * rng_normal(&r));
    }
}

void mlp_load_batch(mlp_work *w, const uint8_t *images, const uint32_t *idx, size_t rows)
{
    const float scale = 1.0f / 255.0f;
    for (size_t r = 0; r < rows; r++) {
        const uint8_t *restrict src = images + (size_t)idx[r] * MLP_IN;
        float *restrict dst = w->x + r * MLP_IN;
        for (size_t i = 0; i < MLP_IN; i++) dst[i] = (float)src[i] * scale;
    }
}

/* out[rows x nout] = act(in[rows x nin] * W[nin x nout] + b). */
static void dense(const float *in, size_t rows, size_t nin, const float *W, const float *b,
                  size_t nout, float *out, bool relu)
{
    for (size_t r = 0; r < rows; r++) memcpy(out + r * nout, b, nout * sizeof *out);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)nout, (int)nin, 1.0f,
                in, (int)nin, W, (int)nout, 1.0f, out, (int)nout);
    if (relu) {
        float *restrict o = out;
        size_t n = rows * nout;
        for (size_t i = 0; i < n; i++) o[i] = o[i] > 0.0f ? o[i] : 0.0f;
    }
}

static void forward_logits(const float *params, mlp_work *w, size_t rows)
{
    dense(w->x, rows, MLP_IN, params + MLP_W1, params + MLP_B1, MLP_H1, w->a1, true);
    dense(w->a1, rows, MLP_H1, params + MLP_W2, params + MLP_B2, MLP_H2, w->a2, true);
    dense(w->a2, rows, MLP_H2, params + MLP_W3, params + MLP_B3, MLP_OUT, w->p, false);
}

double mlp_forward(const float *params, mlp_work *w, size_t rows, const uint8_t *labels)
{
    forward_logits(params, w, rows);
    double loss = 0.0;
    for (size_t r = 0; r < rows; r++) {
        float *z = w->p + r * MLP_OUT;
        float max = z[0];
        for (size_t k = 1; k < MLP_OUT; k++) max = z[k] > max ? z[k] : max;
        float sum = 0.0f;
        for (size_t k = 0; k < MLP_OUT; k++) {
            z[k] = expf(z[k] - max);
            sum += z[k];
        }
        for (size_t k = 0; k < MLP_OUT; k++) z[k] /= sum;
        /* Clamped so that a confidently wrong row gives a large, finite loss. */
        float py = z[labels[r]] > 1e-30f ? z[labels[r]] : 1e-30f;
        loss -= log((double)py);
    }
    return loss;
}

/* sum[j] = sum over rows of d[r][j], in row order. */
static void column_sums(const float *d, size_t rows, size_t cols, float *restrict sum)
{
    memset(sum, 0, cols * sizeof *sum);
    for (size_t r = 0; r < rows; r++) {
        const float *restrict row = d + r * cols;
        for (size_t j = 0; j < cols; j++) sum[j] += row[j];
    }
}

/* d[i] = 0 where the ReLU was inactive (a[i] == 0). */
static void relu_mask(float *restrict d, const float *restrict a, size_t n)
{
    for (size_t i = 0; i < n; i++) d[i] = a[i] > 0.0f ? d[i] : 0.0f;
}

void mlp_backward(const float *params, mlp_work *w, size_t rows, const uint8_t *labels,
                  float *grads)
{
    const int B = (int)rows;
    const float inv = 1.0f / (float)rows;
    /* dLoss/dlogits of the mean loss = (softmax - onehot) / rows. */
    for (size_t r = 0; r < rows; r++) {
        float *restrict d3 = w->p + r * MLP_OUT;
        d3[labels[r]] -= 1.0f;
        for (size_t k = 0; k < MLP_OUT; k++) d3[k] *= inv;
    }
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, MLP_H2, MLP_OUT, B, 1.0f, w->a2,
                MLP_H2, w->p, MLP_OUT, 0.0f, grads + MLP_W3, MLP_OUT);
    column_sums(w->p, rows, MLP_OUT, grads + MLP_B3);

    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, MLP_H2, MLP_OUT, 1.0f, w->p,
                MLP_OUT, params + MLP_W3, MLP_OUT, 0.0f, w->d2, MLP_H2);
    relu_mask(w->d2, w->a2, rows * MLP_H2);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, MLP_H1, MLP_H2, B, 1.0f, w->a1,
                MLP_H1, w->d2, MLP_H2, 0.0f, grads + MLP_W2, MLP_H2);
    column_sums(w->d2, rows, MLP_H2, grads + MLP_B2);

    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, MLP_H1, MLP_H2, 1.0f, w->d2,
                MLP_H2, params + MLP_W2, MLP_H2, 0.0f, w->d1, MLP_H1);
    relu_mask(w->d1, w->a1, rows * MLP_H1);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, MLP_IN, MLP_H1, B, 1.0f, w->x,
                MLP_IN, w->d1, MLP_H1, 0.0f, grads + MLP_W1, MLP_H1);
    column_sums(w->d1, rows, MLP_H1, grads + MLP_B1);
}

size_t mlp_count_correct(const float *params, mlp_work *w, size_t rows, const uint8_t *labels)
{
    forward_logits(params, w, rows);
    size_t correct = 0;
    for (size_t r = 0; r < rows; r++) {
        const float *z = w->p + r * MLP_OUT;
        size_t best = 0;
        for (size_t k = 1; k < MLP_OUT; k++)
            if (z[k] > z[best]) best = k;
        correct += best == labels[r];
    }
    return correct;
}
