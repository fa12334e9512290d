/* mpi_exact.c — codec none through the algorithm forced by GCMPI_ALGO
 * (allgather, rsag, native): sums of integer-valued floats are exact and
 * bit-identical on every rank, for counts 0, 1, below p, not divisible by
 * p and large, with and without MPI_IN_PLACE; MPI_Allgather returns every
 * block exactly. */
#include "mpi_check.h"

static void check_allreduce(size_t n, int in_place, int rank, int size, uint64_t seed)
{
    float *in = alloc_floats(n), *out = alloc_floats(n);
    double *exact = alloc_doubles(n);
    fill_integers(in, n, rank, seed);
    reference_sum(exact, n, size, seed, fill_integers);
    if (in_place) {
        memcpy(out, in, n * sizeof *in);
        MPI_Allreduce(MPI_IN_PLACE, out, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    } else {
        MPI_Allreduce(in, out, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++) wrong += out[i] != (float)exact[i];
    CHECK(wrong == 0, "allreduce n=%zu in_place=%d: %zu elements differ from the exact sum", n,
          in_place, wrong);
    CHECK(same_on_all_ranks(out, n * sizeof *out, MPI_COMM_WORLD),
          "allreduce n=%zu in_place=%d: ranks hold different bytes", n, in_place);
    free(in);
    free(out);
    free(exact);
}

static void check_allgather(size_t n, int in_place, int rank, int size, uint64_t seed)
{
    float *block = alloc_floats(n), *all = alloc_floats(n * (size_t)size);
    float *expect = alloc_floats(n * (size_t)size);
    for (int r = 0; r < size; r++) fill_integers(expect + (size_t)r * n, n, r, seed);
    fill_integers(block, n, rank, seed);
    if (in_place) {
        memcpy(all + (size_t)rank * n, block, n * sizeof *block);
        MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, (int)n, MPI_FLOAT, MPI_COMM_WORLD);
    } else {
        MPI_Allgather(block, (int)n, MPI_FLOAT, all, (int)n, MPI_FLOAT, MPI_COMM_WORLD);
    }
    CHECK(memcmp(all, expect, n * (size_t)size * sizeof *all) == 0,
          "allgather n=%zu in_place=%d: blocks differ from the ranks' inputs", n, in_place);
    free(block);
    free(all);
    free(expect);
}

#if MPI_VERSION >= 4
/* MPI-4 MPI_Allreduce_c and MPI_Allgather_c are intercepted like the int
 * versions (MPICH 4; Open MPI 4.1 has no large-count entry points). */
static void check_large_count_entry_points(int rank, int size)
{
    const MPI_Count n = 5000;
    float *x = alloc_floats((size_t)n), *all = alloc_floats((size_t)n * (size_t)size);
    double *exact = alloc_doubles((size_t)n);
    fill_integers(x, (size_t)n, rank, 3);
    reference_sum(exact, (size_t)n, size, 3, fill_integers);
    MPI_Allreduce_c(MPI_IN_PLACE, x, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    size_t wrong = 0;
    for (MPI_Count i = 0; i < n; i++) wrong += x[i] != (float)exact[i];
    CHECK(wrong == 0, "MPI_Allreduce_c: %zu elements differ from the exact sum", wrong);
    fill_integers(x, (size_t)n, rank, 4);
    MPI_Allgather_c(x, n, MPI_FLOAT, all, n, MPI_FLOAT, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++) {
        fill_integers(x, (size_t)n, r, 4);
        CHECK(memcmp(x, all + (size_t)r * (size_t)n, (size_t)n * sizeof *x) == 0,
              "MPI_Allgather_c: block %d differs", r);
    }
    free(x);
    free(all);
    free(exact);
}
#endif

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_library_preloaded();
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const size_t counts[] = {0, 1, (size_t)size - 1, (size_t)size + 1, 7, 1000, 65539};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        for (int in_place = 0; in_place < 2; in_place++) {
            check_allreduce(counts[c], in_place, rank, size, 11 + c);
            check_allgather(counts[c], in_place, rank, size, 101 + c);
        }
    }
    /* The same buffer again: residual memory must not change exact sums. */
    for (int step = 0; step < 3; step++) check_allreduce(1000, 1, rank, size, 7);
#if MPI_VERSION >= 4
    check_large_count_entry_points(rank, size);
#endif
    return check_finish("exact");
}
