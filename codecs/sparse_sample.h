/* sparse_sample.h — the rule of top-k's one-pass path, shared by the CPU
 * (sparse_index.c) and the GPU (gpu/gpu_select.cu) so that both take it
 * where the other does: a threshold from a strided sample of v that some
 * 1.3 k elements reach, the elements reaching it collected, and the exact
 * top-k among them. Plain C that a C++ (CUDA) unit includes too. */
#ifndef GC_SPARSE_SAMPLE_H
#define GC_SPARSE_SAMPLE_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* Vectors of at least GC_SAMPLE_MIN_N elements, keeping at most
 * 1/GC_SAMPLE_MAX_SHARE of them, from a sample of every
 * GC_SAMPLE_EVERY-th element, at most GC_SAMPLE_MAX. Each candidate past
 * k costs the collecting pass a mispredicted branch and the list a slot:
 * with 4096 samples a 1 % top-k of 16 Mi elements collected 2 k, and ran
 * slower without error feedback than the two-pass path; 16384 samples
 * give about 1.3 k. */
#define GC_SAMPLE_MIN_N     65536u
#define GC_SAMPLE_MAX_SHARE 16u
#define GC_SAMPLE_EVERY     64u
#define GC_SAMPLE_MAX       16384u

/* The sample: ns keys of v[stride / 2 + j * stride]; the threshold is the
 * key of the want-th largest of them, which about expect elements of v
 * reach. */
typedef struct gc_sample_plan {
    size_t ns, stride, want, expect;
} gc_sample_plan;

/* 1 with *pl filled where the one-pass path applies to a top-k of n
 * elements, else 0. want is chosen so that fewer than k elements reach
 * the threshold only some four standard deviations of the sample's count
 * away. */
static inline int gc_sample_plan_for(size_t n, size_t k, gc_sample_plan *pl)
{
    if (n < GC_SAMPLE_MIN_N || n > UINT32_MAX || k == 0 || k > n / GC_SAMPLE_MAX_SHARE) return 0;
    const size_t ns = n / GC_SAMPLE_EVERY < GC_SAMPLE_MAX ? n / GC_SAMPLE_EVERY : GC_SAMPLE_MAX;
    const double hits = (double)ns * (double)k / (double)n;
    const size_t want = (size_t)ceil(hits + 4.0 * sqrt(hits) + 4.0);
    if (want >= ns) return 0;
    pl->ns = ns;
    pl->stride = n / ns;
    pl->want = want;
    pl->expect = want * pl->stride;
    return 1;
}

#endif
