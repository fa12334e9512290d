/* warmup.c — the per-size call counter and ratio schedule of warmup.h. */
#include "warmup.h"

#include <math.h>

double gcmpi_warmup_ratio(gcmpi_warmup *w, uint64_t count, double ratio, uint64_t n)
{
    if (n == 0 || count == 0 || !(ratio < GCMPI_WARMUP_START)) return ratio;
    /* Open addressing, linear probing; slots are never freed, so the probe
     * sequence of a size is the same at every call and on every rank. */
    size_t i = (size_t)((count * 0x9E3779B97F4A7C15ull) >> 56) % GCMPI_WARMUP_SIZES;
    for (size_t probe = 0; probe < GCMPI_WARMUP_SIZES; probe++, i = (i + 1) % GCMPI_WARMUP_SIZES) {
        if (w->slot[i].count == 0) w->slot[i].count = count;
        if (w->slot[i].count != count) continue;
        const uint64_t t = w->slot[i].calls;
        if (t >= n) return ratio;
        w->slot[i].calls = t + 1;
        const double r = GCMPI_WARMUP_START * pow(ratio / GCMPI_WARMUP_START, (double)t / (double)n);
        return r > ratio ? r : ratio;
    }
    return ratio;
}
