/* stream_copy.c — stream_copy.h. */
#include "stream_copy.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* A last-level cache when the system does not say: the size of this
 * project's machines' (2-core VM, 32 MiB L3), on the small side for a
 * server so that streaming is the exception. */
#define DEFAULT_CACHE_BYTES ((size_t)32 << 20)

/* The first word of CPU 0's sysfs cache entry index<i>/<what> into word
 * (size 32); 0 where there is none. */
static int cache_fact(int i, const char *what, char word[32])
{
    char path[96];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/%s", i, what);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    const int got = fscanf(f, "%31s", word) == 1;
    fclose(f);
    return got;
}

/* The largest data or unified cache of CPU 0 as Linux's sysfs describes
 * it ("32768K"), 0 where it says nothing. Asked before sysconf: glibc's
 * _SC_LEVEL3_CACHE_SIZE said 320 MiB on this 2-core VM (every L3 of the
 * host's CPU), sysfs and lscpu 32 MiB. */
static size_t sysfs_last_level(void)
{
    size_t best = 0;
    long best_level = 0;
    char level[32], type[32], size[32];
    for (int i = 0; i < 8 && cache_fact(i, "level", level); i++) {
        if (!cache_fact(i, "type", type) || strcmp(type, "Instruction") == 0) continue;
        if (!cache_fact(i, "size", size) || strtol(level, NULL, 10) < best_level) continue;
        char *end;
        const unsigned long long v = strtoull(size, &end, 10);
        const size_t bytes = *end == 'K' ? (size_t)v << 10 : *end == 'M' ? (size_t)v << 20 : (size_t)v;
        if (bytes) {
            best = bytes;
            best_level = strtol(level, NULL, 10);
        }
    }
    return best;
}

static size_t cache_bytes(void)
{
    static size_t bytes; /* found once: the same answer every call */
    if (bytes) return bytes;
    long got = (long)sysfs_last_level();
#ifdef _SC_LEVEL3_CACHE_SIZE
    if (got <= 0) got = sysconf(_SC_LEVEL3_CACHE_SIZE);
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
