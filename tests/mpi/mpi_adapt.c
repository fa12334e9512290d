/* mpi_adapt.c — the adaptive layer under mpirun: K compressed allreduces
 * on inputs whose distribution differs per rank (scale, sparsity, and a
 * drift over the calls), so each rank's entropies, variances and timings
 * differ and only the agreement keeps the ranks' decisions together.
 * Calls alternate between MPI_IN_PLACE on one buffer and a separate send
 * and receive buffer (two per-buffer states). After every call:
 *
 *   - the result is bit-identical on every rank (64-bit hash compared
 *     through MPI_UINT64_T MIN and MAX, which pass through the library);
 *   - the running sum of the results approximates the running sum of the
 *     exact sums (MPI_DOUBLE passes through) within a relative L2 error
 *     bound. With error feedback what one call leaves out a later one
 *     sends, so this error stays small even where a single call's does
 *     not; a decision that breaks the codec or the residuals shows.
 *
 *   mpi_adapt K BOUND [positive]
 *
 * "positive": every value positive and dense (no zeros), for GCT, whose
 * shaping term grows like g / prev and is meant for gradients that do not
 * swing through zero from one call to the next.
 */
#include "mpi_check.h"

static uint64_t hash64(const void *p, size_t len)
{
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* Rank r's input of call t: a signal shared by all ranks, concentrated on
 * a few elements and drifting with t, plus noise of the rank; scaled by
 * 1 + r/2, and a fraction r/(2p) of the elements zero on this rank. */
static void fill_input(float *x, double *xd, size_t n, int rank, int size, int t, int positive)
{
    uint64_t own = 0x51ED2701ull * (uint64_t)(rank + 1) + 7919ull * (uint64_t)t;
    const double scale = 1.0 + 0.5 * rank;
    const double zero_frac = 0.5 * rank / size;
    const double noise = 0.05 * (1.0 + 0.1 * t * (rank + 1));
    for (size_t i = 0; i < n; i++) {
        /* Every 16th element carries the signal; its phase drifts. */
        double signal = i % 16 == 0 ? 4.0 * sin(0.001 * (double)i + 0.2 * t) + 1.0 : 0.0;
        double u = data_unit(&own) - 0.5;
        double v = scale * (signal + noise * u);
        if (positive) v = scale * (3.0 + 0.25 * signal + noise * u);
        else if (data_unit(&own) < zero_frac) v = 0.0;
        x[i] = (float)v;
        xd[i] = (double)x[i];
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_library_preloaded();
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int calls = argc > 1 ? atoi(argv[1]) : 32;
    const double bound = arg_double(argc, argv, 2, 0.5);
    const int positive = argc > 3 && strcmp(argv[3], "positive") == 0;
    const size_t n = 20000;

    float *x = alloc_floats(n), *inplace = alloc_floats(n);
    float *send = alloc_floats(n), *recv = alloc_floats(n);
    double *xd = alloc_doubles(n), *exact = alloc_doubles(n);
    double *sum_out = alloc_doubles(n), *sum_exact = alloc_doubles(n);
    double worst = 0.0, last = 0.0;
    int worst_call = -1;
    for (int t = 0; t < calls; t++) {
        fill_input(x, xd, n, rank, size, t, positive);
        MPI_Allreduce(xd, exact, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        float *out;
        if (t % 2 == 0) {
            memcpy(inplace, x, n * sizeof *x);
            MPI_Allreduce(MPI_IN_PLACE, inplace, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            out = inplace;
        } else {
            memcpy(send, x, n * sizeof *x);
            MPI_Allreduce(send, recv, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            out = recv;
            CHECK(memcmp(send, x, n * sizeof *x) == 0, "call %d changed the send buffer", t);
        }
        uint64_t h = hash64(out, n * sizeof *out), lo = 0, hi = 0;
        MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
        CHECK(lo == hi, "call %d: the result differs between ranks", t);
        double diff = 0.0, norm = 0.0;
        for (size_t i = 0; i < n; i++) {
            sum_out[i] += out[i];
            sum_exact[i] += exact[i];
            diff += (sum_out[i] - sum_exact[i]) * (sum_out[i] - sum_exact[i]);
            norm += sum_exact[i] * sum_exact[i];
        }
        double err = sqrt(diff / norm);
        CHECK(err < bound, "call %d: relative error of the running sum %.4g >= %.4g", t, err,
              bound);
        last = err;
        if (!(err <= worst)) {
            worst = err;
            worst_call = t;
        }
    }
    if (rank == 0)
        printf("relative error of the running sum: largest %.4g (call %d), last %.4g\n", worst,
               worst_call, last);
    free(x);
    free(inplace);
    free(send);
    free(recv);
    free(xd);
    free(exact);
    free(sum_out);
    free(sum_exact);
    return check_finish("adapt");
}
