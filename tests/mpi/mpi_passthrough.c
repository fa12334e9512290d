/* mpi_passthrough.c — calls the library must not touch come out bit for bit
 * as the MPI library computes them: integer, double and user-op
 * reductions, MPI_MAX on floats, float sums below GCMPI_MIN_BYTES, float
 * sums on a one-rank communicator and on a communicator GCMPI_COMM does
 * not select, MPI_Allgather whose types or counts differ, and the
 * nonblocking MPI_Iallreduce and MPI_Iallgather (never compressed). The
 * reference is the same call made through PMPI_*, which the preloaded
 * library does not intercept. Run with a lossy codec (int8) so that any
 * call compressed by mistake changes bits; an eligible float sum is made
 * too, to show the library is really active. */
#include "mpi_check.h"

enum { N = 5000 };

static void fill_bytes(void *p, size_t len, int rank, uint64_t seed)
{
    uint64_t s = seed + (uint64_t)rank * 0x9E3779B97F4A7C15ull;
    unsigned char *b = p;
    for (size_t i = 0; i < len; i++) b[i] = (unsigned char)data_next(&s);
}

/* Finite values only: random bytes could be NaNs, which never compare. */
static void fill_typed(void *p, int n, MPI_Datatype type, int rank, uint64_t seed)
{
    if (type == MPI_FLOAT) fill_gradient(p, (size_t)n, rank, seed);
    else if (type == MPI_DOUBLE) {
        float *f = alloc_floats((size_t)n);
        fill_gradient(f, (size_t)n, rank, seed);
        for (int i = 0; i < n; i++) ((double *)p)[i] = f[i] * 1.000001;
        free(f);
    } else {
        int size;
        MPI_Type_size(type, &size);
        fill_bytes(p, (size_t)n * (size_t)size, rank, seed);
        if (type == MPI_INT) /* keep sums of 4 ranks from overflowing */
            for (int i = 0; i < n; i++) ((int *)p)[i] >>= 4;
    }
}

/* MPI_Allreduce and PMPI_Allreduce on the same input give the same bytes,
 * out of place and in place. */
static void same_as_pmpi(const char *what, int n, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                         int rank)
{
    int tsize;
    MPI_Type_size(type, &tsize);
    size_t bytes = (size_t)n * (size_t)tsize;
    void *in = calloc(bytes + 1, 1), *got = calloc(bytes + 1, 1), *want = calloc(bytes + 1, 1);
    if (!in || !got || !want) abort();
    fill_typed(in, n, type, rank, (uint64_t)n);
    PMPI_Allreduce(in, want, n, type, op, comm);
    MPI_Allreduce(in, got, n, type, op, comm);
    CHECK(memcmp(got, want, bytes) == 0, "%s: MPI_Allreduce differs from PMPI_Allreduce", what);
    memcpy(got, in, bytes);
    MPI_Allreduce(MPI_IN_PLACE, got, n, type, op, comm);
    CHECK(memcmp(got, want, bytes) == 0, "%s (in place): differs from PMPI_Allreduce", what);
    free(in);
    free(got);
    free(want);
}

static void max_abs(void *invec, void *inoutvec, int *len, MPI_Datatype *type)
{
    (void)type;
    float *a = invec, *b = inoutvec;
    for (int i = 0; i < *len; i++) b[i] = fabsf(a[i]) > fabsf(b[i]) ? a[i] : b[i];
}

static void allgather_same_as_pmpi(const char *what, const void *block, int scount,
                                   MPI_Datatype stype, int rcount, MPI_Datatype rtype,
                                   size_t total_bytes, MPI_Comm comm)
{
    void *got = calloc(total_bytes, 1), *want = calloc(total_bytes, 1);
    if (!got || !want) abort();
    PMPI_Allgather(block, scount, stype, want, rcount, rtype, comm);
    MPI_Allgather(block, scount, stype, got, rcount, rtype, comm);
    CHECK(memcmp(got, want, total_bytes) == 0, "%s: MPI_Allgather differs from PMPI", what);
    free(got);
    free(want);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_library_preloaded();
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    same_as_pmpi("int sum", N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, rank);
    same_as_pmpi("int band", N, MPI_INT, MPI_BAND, MPI_COMM_WORLD, rank);
    same_as_pmpi("double sum", N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, rank);
    same_as_pmpi("float max", N, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD, rank);
    same_as_pmpi("float min", N, MPI_FLOAT, MPI_MIN, MPI_COMM_WORLD, rank);
    same_as_pmpi("float sum below GCMPI_MIN_BYTES", 100, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                 rank);
    same_as_pmpi("float sum on MPI_COMM_SELF", N, MPI_FLOAT, MPI_SUM, MPI_COMM_SELF, rank);

    MPI_Op user_op;
    MPI_Op_create(max_abs, 1, &user_op);
    same_as_pmpi("float user op", N, MPI_FLOAT, user_op, MPI_COMM_WORLD, rank);
    MPI_Op_free(&user_op);

    /* GCMPI_COMM=world: a split communicator is not selected. */
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    same_as_pmpi("float sum on a split communicator", N, MPI_FLOAT, MPI_SUM, half, rank);
    MPI_Comm_free(&half);

    /* MPI_Allgather: ints, float blocks received as a derived type, and
     * float blocks below GCMPI_MIN_BYTES. */
    int *iblock = calloc(N, sizeof *iblock);
    float *fblock = alloc_floats(N);
    if (!iblock) abort();
    fill_typed(iblock, N, MPI_INT, rank, 3);
    fill_gradient(fblock, N, rank, 4);
    allgather_same_as_pmpi("int allgather", iblock, N, MPI_INT, N, MPI_INT,
                           (size_t)N * sizeof(int) * (size_t)size, MPI_COMM_WORLD);
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_FLOAT, &pair);
    MPI_Type_commit(&pair);
    allgather_same_as_pmpi("float allgather into pairs", fblock, N, MPI_FLOAT, N / 2, pair,
                           (size_t)N * sizeof(float) * (size_t)size, MPI_COMM_WORLD);
    MPI_Type_free(&pair);
    allgather_same_as_pmpi("small float allgather", fblock, 100, MPI_FLOAT, 100, MPI_FLOAT,
                           100 * sizeof(float) * (size_t)size, MPI_COMM_WORLD);

    /* Nonblocking float sums and gathers are not compressed (they pass
     * through, counted in the report's nonblocking_passed: here 2 calls of
     * N floats on MPI_COMM_WORLD; the one on the split communicator, which
     * GCMPI_COMM does not select, is not counted). */
    float *nb_got = alloc_floats((size_t)N * (size_t)size);
    float *nb_want = alloc_floats((size_t)N * (size_t)size);
    MPI_Request req;
    /* The reference is the same nonblocking call through PMPI_* (Open MPI
     * sums an MPI_Iallreduce in another order than an MPI_Allreduce). */
    PMPI_Iallreduce(fblock, nb_want, N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req);
    PMPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Iallreduce(fblock, nb_got, N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    CHECK(memcmp(nb_got, nb_want, N * sizeof(float)) == 0, "MPI_Iallreduce differs from PMPI");
    PMPI_Iallgather(fblock, N, MPI_FLOAT, nb_want, N, MPI_FLOAT, MPI_COMM_WORLD, &req);
    PMPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Iallgather(fblock, N, MPI_FLOAT, nb_got, N, MPI_FLOAT, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    CHECK(memcmp(nb_got, nb_want, (size_t)N * (size_t)size * sizeof(float)) == 0,
          "MPI_Iallgather differs from PMPI");
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Iallreduce(fblock, nb_got, N, MPI_FLOAT, MPI_SUM, half, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Comm_free(&half);
    free(nb_got);
    free(nb_want);

    /* The library is active: an eligible float sum is compressed (int8 of
     * these values cannot be exact) and still close to the exact sum. */
    float *g = alloc_floats(N), *want = alloc_floats(N);
    fill_gradient(g, N, rank, 9);
    PMPI_Allreduce(g, want, N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, g, N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(memcmp(g, want, N * sizeof *g) != 0, "eligible float sum was not compressed");
    double *exact = alloc_doubles(N);
    for (int i = 0; i < N; i++) exact[i] = want[i];
    CHECK(relative_error(exact, g, N) < 0.05, "compressed sum error %g",
          relative_error(exact, g, N));

    free(exact);
    free(g);
    free(want);
    free(iblock);
    free(fblock);
    return check_finish("passthrough");
}
