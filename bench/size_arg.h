/* size_arg.h — byte sizes on the command lines of the MPI benchmarks. */
#ifndef GCMPI_BENCH_SIZE_ARG_H
#define GCMPI_BENCH_SIZE_ARG_H

#include <stddef.h>

/* "64K" (or "64KB") -> 65536, "1M", "2G", "4096": binary multiples; 0 on
 * a malformed or non-positive size. */
size_t gcmpi_bench_parse_size(const char *s);

#endif
