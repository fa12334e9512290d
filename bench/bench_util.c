/* bench_util.c — bench_util.h. */
#include "bench_util.h"

#include <ctype.h>
#include <stdlib.h>

size_t gcmpi_bench_parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    size_t mult = 1;
    switch (toupper((unsigned char)*end)) {
    case 'K': mult = (size_t)1 << 10, end++; break;
    case 'M': mult = (size_t)1 << 20, end++; break;
    case 'G': mult = (size_t)1 << 30, end++; break;
    default: break;
    }
    if (toupper((unsigned char)*end) == 'B' || toupper((unsigned char)*end) == 'I') end++;
    if (*end || !(v > 0)) return 0;
    return (size_t)(v * (double)mult);
}

static int by_value(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double gcmpi_bench_median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, by_value);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}
