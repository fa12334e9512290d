/* gpu_host_sparse.c — the host side of sparse decoding for libgcmpi_gpu:
 * validation reuses codecs/sparse_index.c, so a body the CPU refuses is
 * refused with the same error (gpu_sparse.cuh). */
#include "sparse_index.h"

/* Declared for C++ in gpu_sparse.cuh; internal to libgcmpi_gpu. */
GC_INTERNAL size_t gcmpi_gpu_host_index_open(const uint8_t *body, size_t len, size_t n, size_t *k);
GC_INTERNAL size_t gcmpi_gpu_host_sparse_open(const uint8_t *body, size_t len, size_t n,
                                              size_t *k, size_t *vals_off);

size_t gcmpi_gpu_host_index_open(const uint8_t *body, size_t len, size_t n, size_t *k)
{
    return gc_sparse_index_open(body, len, n, k);
}

size_t gcmpi_gpu_host_sparse_open(const uint8_t *body, size_t len, size_t n, size_t *k,
                                  size_t *vals_off)
{
    /* The order of gc_sparse_body_apply's checks, so errors agree. */
    if (len < GC_SPARSE_HEAD) return GC_ERROR(TRUNCATED);
    size_t kk = gc_get_u32(body);
    if (kk > n || body[4] > GC_SPARSE_BITMAP) return GC_ERROR(CORRUPT);
    if (kk > (len - GC_SPARSE_HEAD) / 4) return GC_ERROR(TRUNCATED);
    size_t section = gc_sparse_index_open(body, len, n, k);
    if (gc_is_error(section)) return section;
    if (section > len - 4 * kk) return GC_ERROR(TRUNCATED);
    if (section < len - 4 * kk) return GC_ERROR(CORRUPT);
    *vals_off = section;
    return 0;
}
