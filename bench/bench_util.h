/* bench_util.h — what the MPI benchmarks share: byte sizes on their
 * command lines, and the median of their timings. */
#ifndef GCMPI_BENCH_UTIL_H
#define GCMPI_BENCH_UTIL_H

#include <stddef.h>

/* "64K" (or "64KB") -> 65536, "1M", "2G", "4096": binary multiples; 0 on
 * a malformed or non-positive size. */
size_t gcmpi_bench_parse_size(const char *s);

/* The median of t[0..n) (n >= 1; the mean of the middle two when n is
 * even); sorts t. */
double gcmpi_bench_median(double *t, int n);

#endif
