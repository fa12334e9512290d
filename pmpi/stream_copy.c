/* stream_copy.c — stream_copy.h. */
#include "stream_copy.h"

#include <stdint.h>
#include <string.h>
#include <unistd.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* A last-level cache when the system does not say: the size of this
 * project's machines' (2-core VM, 32 MiB L3), on the small side for a
 * server so that streaming is the exception. */
#define DEFAULT_CACHE_BYTES ((size_t)32 << 20)

static size_t cache_bytes(void)
{
    static size_t bytes; /* found once: the same answer every call */
    if (bytes) return bytes;
    long got = -1;
#ifdef _SC_LEVEL3_CACHE_SIZE
    got = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (got <= 0) got = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    bytes = got > 0 ? (size_t)got : DEFAULT_CACHE_BYTES;
    return bytes;
}

int gcmpi_outgrows_cache(size_t bytes)
{
    return bytes > cache_bytes();
}

void gcmpi_copy_past_cache(float *dst, const float *src, size_t n)
{
#if defined(__SSE2__)
    size_t i = 0;
    /* Up to a 16-byte boundary one by one: streaming stores are aligned. */
    for (; i < n && ((uintptr_t)(dst + i) & 15) != 0; i++) dst[i] = src[i];
    for (; i + 16 <= n; i += 16) {
        _mm_stream_ps(dst + i, _mm_loadu_ps(src + i));
        _mm_stream_ps(dst + i + 4, _mm_loadu_ps(src + i + 4));
        _mm_stream_ps(dst + i + 8, _mm_loadu_ps(src + i + 8));
        _mm_stream_ps(dst + i + 12, _mm_loadu_ps(src + i + 12));
    }
    for (; i < n; i++) dst[i] = src[i];
    /* Streaming stores are weakly ordered: visible before what follows
     * (the fence that lets the node read on). */
    _mm_sfence();
#else
    memcpy(dst, src, n * sizeof(float));
#endif
}
