/* mpi_lossy.c — a lossy codec (GCMPI_CODEC, set by the runner) keeps the
 * sum within a stated relative error of the exact sum, and every rank ends
 * with identical bytes, for MPI_Allreduce (in place or not) and
 * MPI_Allgather (each block against the rank's input).
 *
 *   mpi_lossy ALLREDUCE_BOUND ALLGATHER_BOUND [GATHERS]
 *
 * Bounds are relative L2 errors of one call with no residual yet (the
 * first call on each buffer), chosen per codec in tests/mpi/meson.build.
 * GATHERS more MPI_Allgather calls of one size, in place every other one,
 * each held to its bound: enough for auto's trial of the ways a gather
 * can travel, whichever ran each call. */
#include "mpi_check.h"

enum { N = 100000 };

static void allreduce_within(size_t n, int in_place, double bound, int rank, int size,
                             uint64_t seed)
{
    float *in = alloc_floats(n), *out = alloc_floats(n);
    double *exact = alloc_doubles(n);
    fill_gradient(in, n, rank, seed);
    reference_sum(exact, n, size, seed, fill_gradient);
    if (in_place) {
        memcpy(out, in, n * sizeof *in);
        MPI_Allreduce(MPI_IN_PLACE, out, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    } else {
        MPI_Allreduce(in, out, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    double err = relative_error(exact, out, n);
    if (rank == 0) printf("allreduce n=%zu in_place=%d: relative error %.4g\n", n, in_place, err);
    CHECK(err <= bound, "allreduce n=%zu in_place=%d: relative error %g > bound %g", n,
          in_place, err, bound);
    CHECK(same_on_all_ranks(out, n * sizeof *out, MPI_COMM_WORLD),
          "allreduce n=%zu in_place=%d: ranks hold different bytes", n, in_place);
    free(in);
    free(out);
    free(exact);
}

static void allgather_within(size_t n, int in_place, double bound, int rank, int size,
                             uint64_t seed)
{
    float *block = alloc_floats(n), *all = alloc_floats(n * (size_t)size);
    fill_gradient(block, n, rank, seed);
    if (in_place) {
        memcpy(all + (size_t)rank * n, block, n * sizeof *block);
        MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, (int)n, MPI_FLOAT, MPI_COMM_WORLD);
    } else {
        MPI_Allgather(block, (int)n, MPI_FLOAT, all, (int)n, MPI_FLOAT, MPI_COMM_WORLD);
    }
    double worst = 0;
    double *exact = alloc_doubles(n);
    for (int r = 0; r < size; r++) {
        fill_gradient(block, n, r, seed);
        for (size_t i = 0; i < n; i++) exact[i] = block[i];
        double err = relative_error(exact, all + (size_t)r * n, n);
        if (err > worst) worst = err;
    }
    if (rank == 0)
        printf("allgather n=%zu in_place=%d: worst block error %.4g\n", n, in_place, worst);
    CHECK(worst <= bound, "allgather n=%zu in_place=%d: block error %g > bound %g", n, in_place,
          worst, bound);
    CHECK(same_on_all_ranks(all, n * (size_t)size * sizeof *all, MPI_COMM_WORLD),
          "allgather n=%zu in_place=%d: ranks hold different bytes", n, in_place);
    free(exact);
    free(block);
    free(all);
}

/* Small and awkward counts: only agreement between ranks is checked (a
 * sparse codec keeps a single element of a handful). */
static void small_counts_agree(int rank, int size)
{
    const size_t counts[] = {1, (size_t)size - 1, (size_t)size + 1, 1001};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        size_t n = counts[c];
        float *x = alloc_floats(n), *all = alloc_floats(n * (size_t)size);
        fill_gradient(x, n, rank, 50 + c);
        MPI_Allreduce(MPI_IN_PLACE, x, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        CHECK(same_on_all_ranks(x, n * sizeof *x, MPI_COMM_WORLD),
              "allreduce n=%zu: ranks hold different bytes", n);
        MPI_Allgather(x, (int)n, MPI_FLOAT, all, (int)n, MPI_FLOAT, MPI_COMM_WORLD);
        CHECK(same_on_all_ranks(all, n * (size_t)size * sizeof *all, MPI_COMM_WORLD),
              "allgather n=%zu: ranks hold different bytes", n);
        free(x);
        free(all);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_library_preloaded();
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double allreduce_bound = arg_double(argc, argv, 1, 0.1);
    double allgather_bound = arg_double(argc, argv, 2, allreduce_bound);

    allreduce_within(N, 0, allreduce_bound, rank, size, 1);
    allreduce_within(N, 1, allreduce_bound, rank, size, 2);
    allgather_within(N / 4, 0, allgather_bound, rank, size, 3);
    allgather_within(N / 4, 1, allgather_bound, rank, size, 4);
    const int gathers = (int)arg_double(argc, argv, 3, 0);
    for (int i = 0; i < gathers; i++)
        allgather_within(N / 4, i % 2, allgather_bound, rank, size, 10 + (uint64_t)i);
    small_counts_agree(rank, size);
    return check_finish("lossy");
}
