/* mpi_check.h — helpers for the MPI integration programs. Each program is a
 * plain MPI application (it never includes a libgcmpi header): the library
 * is preloaded by run_mpi.py, exactly as users run it.
 *
 * Checks record a failure and go on, so every rank keeps making the same
 * collective calls; check_finish() agrees on the outcome and sets the exit
 * status. Reference results come from PMPI_* (which the preloaded library
 * does not intercept) or are computed locally in double precision from
 * every rank's deterministic input. */
#ifndef GCMPI_MPI_CHECK_H
#define GCMPI_MPI_CHECK_H

#include <dlfcn.h>
#include <math.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failures;

static void check_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void check_fail(const char *file, int line, const char *fmt, ...)
{
    int rank = -1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "FAIL rank %d %s:%d: ", rank, file, line);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    check_failures++;
}

#define CHECK(cond, ...)                                          \
    do {                                                          \
        if (!(cond)) check_fail(__FILE__, __LINE__, __VA_ARGS__); \
    } while (0)

/* The programs test the preloaded library; without it they would pass
 * vacuously. gc_codec_count is exported by libgcmpi.so. */
static inline void check_library_preloaded(void)
{
    if (!dlsym(RTLD_DEFAULT, "gc_codec_count")) {
        fprintf(stderr, "FAIL: libgcmpi.so is not preloaded (set LD_PRELOAD)\n");
        exit(2);
    }
}

/* Agrees on the outcome (MPI_INT passes through the library), finalizes
 * and returns the exit status. */
static inline int check_finish(const char *name)
{
    int failed = check_failures > 0, any = 0, rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) printf("%s: %s\n", name, any ? "FAILED" : "ok");
    MPI_Finalize();
    return any ? 1 : 0;
}

/* ---- deterministic data -------------------------------------------------- */

static inline uint64_t data_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline double data_unit(uint64_t *s)
{
    return ((double)(data_next(s) >> 11) + 0.5) * 0x1p-53;
}

/* Gradient-like values of rank r: a signal shared by all ranks plus
 * heavy-tailed (Laplace) noise of the rank, so sums neither cancel nor are
 * trivially equal to p times one vector. */
static inline void fill_gradient(float *x, size_t n, int rank, uint64_t seed)
{
    uint64_t shared = seed * 0x2545F4914F6CDD1Dull + 1;
    uint64_t own = seed * 0x2545F4914F6CDD1Dull + 1000003ull * (uint64_t)(rank + 1);
    for (size_t i = 0; i < n; i++) {
        double u = data_unit(&own) - 0.5;
        double noise = -(u < 0 ? -1.0 : 1.0) * log(1.0 - 2.0 * fabs(u));
        double signal = 2.0 * data_unit(&shared) - 1.0;
        x[i] = (float)(signal + 0.5 * noise);
    }
}

/* Integer values in [-100, 100]: float sums of up to 2^17 ranks are exact
 * in any order, so lossless paths must return the exact sum. */
static inline void fill_integers(float *x, size_t n, int rank, uint64_t seed)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + (uint64_t)rank * 7919u + 17u;
    for (size_t i = 0; i < n; i++) x[i] = (float)((int)(data_next(&s) % 201) - 100);
}

/* sum[i] = sum over ranks of fill(rank), in double. */
static inline void reference_sum(double *sum, size_t n, int size, uint64_t seed,
                                 void (*fill)(float *, size_t, int, uint64_t))
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    if (!x) abort();
    memset(sum, 0, n * sizeof *sum);
    for (int r = 0; r < size; r++) {
        fill(x, n, r, seed);
        for (size_t i = 0; i < n; i++) sum[i] += x[i];
    }
    free(x);
}

static inline double relative_error(const double *exact, const float *got, size_t n)
{
    double d = 0, e = 0;
    for (size_t i = 0; i < n; i++) {
        d += (exact[i] - got[i]) * (exact[i] - got[i]);
        e += exact[i] * exact[i];
    }
    return e > 0 ? sqrt(d / e) : sqrt(d);
}

/* ---- identical bytes on every rank --------------------------------------- */

static inline uint32_t bytes_hash(const void *p, size_t len)
{
    const unsigned char *b = p;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++) h = (h ^ b[i]) * 16777619u;
    return h;
}

/* 1 if every rank of comm holds the same bytes (compared through MPI_INT
 * minimum and maximum, which the library passes through). */
static inline int same_on_all_ranks(const void *p, size_t len, MPI_Comm comm)
{
    uint32_t h = bytes_hash(p, len);
    int v[2] = {(int)(h & 0x7fffffff), (int)(h >> 1)};
    int lo[2], hi[2];
    MPI_Allreduce(v, lo, 2, MPI_INT, MPI_MIN, comm);
    MPI_Allreduce(v, hi, 2, MPI_INT, MPI_MAX, comm);
    return lo[0] == hi[0] && lo[1] == hi[1];
}

static inline float *alloc_floats(size_t n)
{
    float *p = calloc(n ? n : 1, sizeof *p);
    if (!p) abort();
    return p;
}

static inline double *alloc_doubles(size_t n)
{
    double *p = calloc(n ? n : 1, sizeof *p);
    if (!p) abort();
    return p;
}

/* A double from argv or the environment, for bounds chosen per codec. */
static inline double arg_double(int argc, char **argv, int i, double fallback)
{
    return argc > i ? atof(argv[i]) : fallback;
}

#endif /* GCMPI_MPI_CHECK_H */
