/* params.c — defaults and the range checks codecs share. */
#include "codec_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

void gc_params_default(gc_params *p)
{
    memset(p, 0, sizeof *p);
    p->ratio = 0.01;
    p->bits = 4;
    p->bucket = 512;
    p->rank = 4;
    p->eg_n = GC_AUTO;
    p->eg_k = GC_AUTO;
    p->dgc_sample = 0.01;
    p->dgc_tolerance = 0.2;
    p->zstd_level = 0;
    p->flags = 0;
}

size_t gc_param_error(char *msg, size_t msglen, const char *fmt, ...)
{
    if (msg && msglen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, msglen, fmt, ap);
        va_end(ap);
    }
    return GC_ERROR(PARAM);
}

size_t gc_check_ratio(const gc_params *p, char *msg, size_t msglen)
{
    if (!(p->ratio > 0.0 && p->ratio <= 1.0))
        return gc_param_error(msg, msglen,
                              "ratio=%g is out of range; expected a number in (0, 1]", p->ratio);
    return 0;
}

size_t gc_check_bucket(const gc_params *p, char *msg, size_t msglen)
{
    if (p->bucket < 1 || p->bucket > ((size_t)1 << 31))
        return gc_param_error(msg, msglen,
                              "bucket=%zu is out of range; expected an integer in [1, 2^31]", p->bucket);
    return 0;
}

size_t gc_check_bits(const gc_params *p, unsigned lo, unsigned hi, char *msg, size_t msglen)
{
    if (p->bits < lo || p->bits > hi)
        return gc_param_error(msg, msglen,
                              "bits=%u is out of range; expected an integer in [%u, %u]", p->bits, lo, hi);
    return 0;
}

size_t gc_check_rank(const gc_params *p, char *msg, size_t msglen)
{
    if (p->rank < 1 || p->rank > 1024)
        return gc_param_error(msg, msglen,
                              "rank=%u is out of range; expected an integer in [1, 1024]", p->rank);
    return 0;
}

size_t gc_kept_count(size_t n, double ratio)
{
    if (n == 0) return 0;
    double k = ceil(ratio * (double)n);
    if (k < 1) return 1;
    if (k >= (double)n) return n;
    return (size_t)k;
}
