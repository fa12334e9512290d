/* mpi_subcomm.c — state belongs to the communicator.
 *
 *   mpi_subcomm all     (GCMPI_COMM=all, a seeded stochastic codec)
 *     A communicator from MPI_Comm_split, freed and made again ten times,
 *     starts afresh each time: its first compressed sum of the same data
 *     has the same bytes every time (no residual or call counter survives
 *     MPI_Comm_free, even when MPI hands out the same handle again). A
 *     duplicate of MPI_COMM_WORLD starts afresh too (attributes are not
 *     copied), whatever happened on MPI_COMM_WORLD before. Results are
 *     within bound of the exact sum and identical on the ranks of each
 *     communicator; a one-rank communicator passes through exactly.
 *   mpi_subcomm world   (GCMPI_COMM=world)
 *     Split communicators are left alone: bit-identical to PMPI_Allreduce,
 *     while duplicates of MPI_COMM_WORLD are still compressed.
 */
#include "mpi_check.h"

enum { N = 30000, ROUNDS = 10 };

/* Sum of fill_gradient over the ranks of comm (world ranks), in double. */
static void exact_over(double *exact, MPI_Comm comm, uint64_t seed)
{
    int size;
    MPI_Comm_size(comm, &size);
    MPI_Group g, world_g;
    MPI_Comm_group(comm, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &world_g);
    float *x = alloc_floats(N);
    memset(exact, 0, N * sizeof *exact);
    for (int r = 0; r < size; r++) {
        int wr;
        MPI_Group_translate_ranks(g, 1, &r, world_g, &wr);
        fill_gradient(x, N, wr, seed);
        for (int i = 0; i < N; i++) exact[i] += x[i];
    }
    free(x);
    MPI_Group_free(&g);
    MPI_Group_free(&world_g);
}

/* One sum of fresh data on comm into out; returns the relative error. */
static double sum_once(MPI_Comm comm, float *out, int world_rank, uint64_t seed)
{
    double *exact = alloc_doubles(N);
    fill_gradient(out, N, world_rank, seed);
    MPI_Allreduce(MPI_IN_PLACE, out, N, MPI_FLOAT, MPI_SUM, comm);
    exact_over(exact, comm, seed);
    double err = relative_error(exact, out, N);
    free(exact);
    return err;
}

static void selected_everywhere(int rank, double bound)
{
    float *first = alloc_floats(N), *out = alloc_floats(N);
    for (int round = 0; round < ROUNDS; round++) {
        MPI_Comm half;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
        int hsize;
        MPI_Comm_size(half, &hsize);
        double err = sum_once(half, out, rank, 77);
        if (hsize == 1) {
            float *x = alloc_floats(N);
            fill_gradient(x, N, rank, 77);
            CHECK(memcmp(x, out, N * sizeof *x) == 0, "one-rank communicator changed the data");
            free(x);
        } else {
            CHECK(err <= bound, "round %d: error %g > bound %g", round, err, bound);
        }
        CHECK(same_on_all_ranks(out, N * sizeof *out, half), "round %d: ranks differ", round);
        if (round == 0) memcpy(first, out, N * sizeof *out);
        CHECK(memcmp(first, out, N * sizeof *out) == 0,
              "round %d: a new communicator did not start afresh", round);
        /* More calls on the same communicator do use its state. */
        for (int i = 0; i < 3; i++) sum_once(half, out, rank, 78);
        MPI_Comm_free(&half);
    }

    /* Duplicates of MPI_COMM_WORLD start without state. */
    MPI_Comm a, b;
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    sum_once(a, first, rank, 79);
    for (int i = 0; i < 3; i++) sum_once(MPI_COMM_WORLD, out, rank, 79);
    sum_once(a, out, rank, 80); /* a has a residual and a call count now */
    MPI_Comm_dup(a, &b);
    double err = sum_once(b, out, rank, 79);
    CHECK(err <= bound, "duplicate: error %g > bound %g", err, bound);
    CHECK(memcmp(first, out, N * sizeof *out) == 0,
          "a duplicate communicator inherited state from its parent");
    MPI_Comm_free(&a);
    MPI_Comm_free(&b);
    free(first);
    free(out);
}

static void world_only(int rank, double bound)
{
    float *in = alloc_floats(N), *want = alloc_floats(N), *got = alloc_floats(N);
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    fill_gradient(in, N, rank, 5);
    PMPI_Allreduce(in, want, N, MPI_FLOAT, MPI_SUM, half);
    MPI_Allreduce(in, got, N, MPI_FLOAT, MPI_SUM, half);
    CHECK(memcmp(got, want, N * sizeof *got) == 0, "a split communicator was compressed");
    MPI_Comm_free(&half);

    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    PMPI_Allreduce(in, want, N, MPI_FLOAT, MPI_SUM, dup);
    double err = sum_once(dup, got, rank, 5);
    CHECK(memcmp(got, want, N * sizeof *got) != 0,
          "a duplicate of MPI_COMM_WORLD was not compressed");
    CHECK(err <= bound, "duplicate: error %g > bound %g", err, bound);
    MPI_Comm_free(&dup);
    free(in);
    free(want);
    free(got);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_library_preloaded();
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double bound = arg_double(argc, argv, 2, 0.1);
    if (argc > 1 && strcmp(argv[1], "world") == 0) world_only(rank, bound);
    else selected_everywhere(rank, bound);
    return check_finish("subcomm");
}
