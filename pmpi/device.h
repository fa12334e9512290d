/* device.h — where a buffer lives, and the GPU library behind it
 * (DESIGN.md "GPU"). libgcmpi.so never links CUDA: it dlopen()s
 * libgcmpi_gpu.so (gpu/gcmpi_gpu.h) only once CUDA is in the process, and
 * reaches it through a table of function pointers resolved with dlsym.
 * Host-only jobs pay one cheap check per intercepted call (has a library
 * been loaded since the last look?), nothing else.
 *
 * Everything here is used under the device lock (gcmpi_device_lock): the
 * pools and the GPU context are per process, shared by all threads. */
#ifndef GCMPI_DEVICE_H
#define GCMPI_DEVICE_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "gcmpi_config.h"
#include "gcmpi_gpu.h"

/* The GPU library's functions (gcmpi_gpu.h), resolved by dlsym. */
typedef struct gcmpi_gpu_table {
    int (*is_device_pointer)(const void *p);
    int (*supports)(const gc_codec *c);
    gcmpi_gpu_ctx *(*create)(void);
    void (*destroy)(gcmpi_gpu_ctx *ctx);
    void *(*alloc)(gcmpi_gpu_ctx *ctx, size_t bytes);
    void (*dealloc)(gcmpi_gpu_ctx *ctx, void *p);
    size_t (*copy)(gcmpi_gpu_ctx *ctx, void *dst, const void *src, size_t bytes);
    size_t (*encode)(gcmpi_gpu_ctx *ctx, const gc_codec *c, const float *g, float *residual,
                     size_t n, const gc_params *p, uint64_t seed, void *dst, size_t cap);
    size_t (*decode_add)(gcmpi_gpu_ctx *ctx, const void *src, size_t len, float *acc,
                         size_t n);
    void *(*host_alloc)(size_t bytes);
    void (*host_free)(void *p);
    size_t (*zero)(gcmpi_gpu_ctx *ctx, void *p, size_t bytes);
    size_t (*all_finite)(gcmpi_gpu_ctx *ctx, const float *g, size_t n);
    size_t (*momentum_accumulate)(gcmpi_gpu_ctx *ctx, float *u, const float *g, size_t n,
                                  float beta);
    size_t (*momentum_unfold)(gcmpi_gpu_ctx *ctx, float *s, float *m, size_t n, float beta);
    size_t (*native_int8_max)(gcmpi_gpu_ctx *ctx, const float *g, float *r, size_t n,
                              size_t bucket, float *top);
    size_t (*native_int8_quantise)(gcmpi_gpu_ctx *ctx, const float *g, float *r, size_t n,
                                   size_t bucket, const float *top, float levels, size_t elem,
                                   void *q);
    size_t (*native_int8_dequantise)(gcmpi_gpu_ctx *ctx, const void *q, size_t elem, size_t n,
                                     size_t bucket, const float *top, float levels, float *out);
    size_t (*randk_indices)(gcmpi_gpu_ctx *ctx, size_t n, size_t k, uint64_t seed,
                            uint32_t *idx);
    size_t (*native_randk_values)(gcmpi_gpu_ctx *ctx, const float *g, float *r, size_t n,
                                  const uint32_t *idx, size_t k, float scale, float *vals);
    size_t (*native_randk_marks)(gcmpi_gpu_ctx *ctx, const float *g, size_t n, size_t block,
                                 float *marks);
    size_t (*native_randk_out)(gcmpi_gpu_ctx *ctx, const uint32_t *idx, size_t k,
                               const float *vals, const float *marks, size_t block, size_t n,
                               float *out);
    size_t (*native_powersgd_p)(gcmpi_gpu_ctx *ctx, const float *g, float *r, size_t n,
                                size_t rank, const float *q, float *p);
    size_t (*native_powersgd_q)(gcmpi_gpu_ctx *ctx, const float *m, size_t n, size_t rank,
                                const float *p, float *q, float *r_sub);
    size_t (*native_powersgd_out)(gcmpi_gpu_ctx *ctx, const float *p, const float *q, size_t n,
                                  size_t rank, float *out);
    int (*encode_momentum_supports)(const gc_codec *c);
    size_t (*encode_momentum)(gcmpi_gpu_ctx *ctx, const gc_codec *c, const float *g, float *u,
                              float *v, size_t n, float momentum, const gc_params *p,
                              uint64_t seed, void *dst, size_t cap);
    size_t (*sparse_rd_set)(gcmpi_gpu_ctx *ctx, const float *d, size_t n, uint32_t *units,
                            size_t cap);
    size_t (*sparse_rd_out)(gcmpi_gpu_ctx *ctx, const uint32_t *units, size_t m, size_t n,
                            float *out);
    void (*set_width_policy)(gcmpi_gpu_ctx *ctx, const gc_width_policy *p);
    size_t (*adapt_sample)(gcmpi_gpu_ctx *ctx, const float *x, size_t n, size_t m,
                           uint64_t seed, float *sample);
    size_t (*adapt_gct_shape)(gcmpi_gpu_ctx *ctx, const float *g, const float *prev, size_t n,
                              int with_prev, float c, float eps, int eq9, float *out);
    size_t (*adapt_remember)(gcmpi_gpu_ctx *ctx, const float *sum, size_t n, int ranks,
                             float *prev);
    size_t (*adapt_var_moves)(gcmpi_gpu_ctx *ctx, const float *sum, size_t n, int ranks,
                              float *prev, double *moved, double *norm);
} gcmpi_gpu_table;

/* What the device path did in this process (summed over ranks in the
 * report's "device" object). */
typedef struct gcmpi_device_stats {
    uint64_t calls;            /* intercepted calls with a device buffer       */
    uint64_t compressed;       /* ... compressed by the GPU kernels            */
    uint64_t compressed_host;  /* ... compressed on the host (codec or algorithm
                                  without device kernels): staged both ways   */
    uint64_t staged;           /* uncompressed calls staged through pinned memory */
    uint64_t staged_bytes;     /* bytes copied device->host and host->device   */
    uint64_t passed;           /* uncompressed calls handed to a CUDA-aware MPI */
    double   device_s;         /* seconds in GPU encode/decode/copies          */
    uint64_t residual_allocs;  /* error-feedback entries allocated on the device */
    uint64_t residual_bytes_peak; /* most device memory they held at once     */
    uint64_t pool_grows;       /* page-locked or device pool buffers (re)allocated:
                                  bounded, whatever the number of calls      */
} gcmpi_device_stats;

/* MPI_Init: remembers the configuration (GCMPI_GPU_LIB, GCMPI_CUDA_AWARE);
 * loads nothing. */
void gcmpi_device_setup(const gcmpi_config *cfg);
/* MPI_Finalize: frees pools and the context. */
void gcmpi_device_teardown(void);

/* 1 when any of the (up to two) pointers is device memory, 0 when both are
 * host memory (NULL and MPI_IN_PLACE count as host). Loads the GPU library
 * the first time CUDA is seen in the process; when CUDA is there but the
 * library cannot be loaded and a pointer is device memory (asked of the
 * driver directly), prints why and aborts the job. */
int gcmpi_device_any(const void *a, const void *b);

/* The table and the process's context; NULL before a device buffer was
 * seen or when the GPU has no context (then the call fails cleanly). */
const gcmpi_gpu_table *gcmpi_device_gpu(void);
gcmpi_gpu_ctx *gcmpi_device_ctx(void);

/* 1 when device pointers may be handed to the MPI library
 * (GCMPI_CUDA_AWARE=1, or auto and MPIX_Query_cuda_support() says so). */
int gcmpi_device_cuda_aware(void);

/* Pools: page-locked host buffers and device buffers in fixed slots, grown
 * (contents not kept) and reused, so steady-state calls allocate nothing. */
enum {
    GCMPI_DEV_HOST_IN = 0, /* staged input / host copy of a vector      */
    GCMPI_DEV_HOST_OUT,    /* staged output                             */
    GCMPI_DEV_HOST_PAYLOAD,/* payloads encoded on the device            */
    GCMPI_DEV_HOST_STATE,  /* host copies of residual/server/state       */
    GCMPI_DEV_HOST_NODE,   /* hier: the vector's host copy for the node  */
    GCMPI_DEV_HOST_SLOTS
};
enum {
    GCMPI_DEV_BUF_CHUNK = 0, /* a chunk or payload in device memory         */
    GCMPI_DEV_BUF_SHAPED,    /* the adaptive layer's GCT-shaped gradient    */
    GCMPI_DEV_BUF_INDICES,   /* the native algorithm's randk indices        */
    GCMPI_DEV_BUF_SLOTS
};
void *gcmpi_device_host_buffer(unsigned slot, size_t bytes);
void *gcmpi_device_buffer(unsigned slot, size_t bytes);

/* Device memory for error-feedback state, zeroed; NULL when unavailable. */
void *gcmpi_device_alloc_zeroed(size_t bytes);
void gcmpi_device_free(void *p, size_t bytes);

/* Copies in any direction; 0 on success, an MPI error code otherwise.
 * Counted as staged bytes when count_staged. */
int gcmpi_device_copy(void *dst, const void *src, size_t bytes, int count_staged);

/* Serialises device work of concurrent threads. */
void gcmpi_device_lock(void);
void gcmpi_device_unlock(void);

gcmpi_device_stats *gcmpi_device_stats_mut(void);
/* Collective over comm: the sums (maximum of nothing) at root 0. */
void gcmpi_device_stats_reduce(gcmpi_device_stats *sum, MPI_Comm comm);

#endif /* GCMPI_DEVICE_H */
