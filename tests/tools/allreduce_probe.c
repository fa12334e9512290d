/* allreduce_probe.c — a minimal MPI job for the tool tests: times a float
 * MPI_Allreduce(MPI_SUM) of --count elements and prints a metric that is 1.5
 * exactly when the sums are right, whatever the number of ranks:
 *   allreduce count=N bytes=B ranks=P iters=K seconds_min=S seconds_max=S
 *   metric=1.5000
 * Rank r contributes 1 + r/(P-1) everywhere, so every sum is 1.5 P.
 * --allgather: an MPI_Allgather of --count elements a rank instead
 * (printed as "allgather ..."), whose gathered values average 1.5. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long parse_positive(const char *s, const char *name)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < 1) {
        fprintf(stderr, "allreduce_probe: %s=%s; expected a positive integer\n", name, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long count = 1 << 20, iters = 3;
    int fail_code = 0, gather = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--count") && i + 1 < argc) count = parse_positive(argv[++i], "--count");
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = parse_positive(argv[++i], "--iters");
        else if (!strcmp(argv[i], "--allgather")) gather = 1;
        /* Lets the tests see how a failing job is reported. */
        else if (!strcmp(argv[i], "--fail") && i + 1 < argc) fail_code = (int)parse_positive(argv[++i], "--fail");
        else {
            if (rank == 0) fprintf(stderr, "allreduce_probe: unknown argument %s\n", argv[i]);
            MPI_Finalize();
            return 2;
        }
    }
    if (fail_code) {
        if (rank == 0) fprintf(stderr, "allreduce_probe: failing on request with status %d\n", fail_code);
        MPI_Finalize();
        return fail_code;
    }
    float *buf = malloc((size_t)count * sizeof *buf);
    float *all = gather ? malloc((size_t)count * (size_t)size * sizeof *all) : NULL;
    if (!buf || (gather && !all)) {
        fprintf(stderr, "allreduce_probe: cannot allocate %ld floats\n", count);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const float mine = size > 1 ? 1.0f + (float)rank / (float)(size - 1) : 1.5f;
    /* A tiny allreduce first, so connection set-up is not timed. */
    float warm = 1.0f;
    MPI_Allreduce(MPI_IN_PLACE, &warm, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);

    double tmin = 1e300, tmax = 0.0, mean = 0.0;
    for (long it = 0; it < iters; it++) {
        for (long i = 0; i < count; i++) buf[i] = mine;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (gather)
            MPI_Allgather(buf, (int)count, MPI_FLOAT, all, (int)count, MPI_FLOAT, MPI_COMM_WORLD);
        else
            MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double t = MPI_Wtime() - t0;
        /* The slowest rank decides how long a collective took. */
        MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        tmin = t < tmin ? t : tmin;
        tmax = t > tmax ? t : tmax;
    }
    double sum = 0.0;
    const long values = gather ? count * size : count;
    for (long i = 0; i < values; i++) sum += gather ? all[i] : buf[i];
    mean = gather ? sum / (double)values : sum / (double)count / (double)size;
    if (rank == 0) {
        printf("%s count=%ld bytes=%ld ranks=%d iters=%ld seconds_min=%.6f seconds_max=%.6f\n",
               gather ? "allgather" : "allreduce", count, count * 4, size, iters, tmin, tmax);
        printf("metric=%.4f\n", mean);
    }
    free(buf);
    free(all);
    MPI_Finalize();
    return 0;
}
