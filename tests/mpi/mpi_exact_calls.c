/* mpi_exact_calls.c — calls that look like gradients but are not stay bit
 * exact, while the gradient call beside them is compressed. Run with
 * GCMPI_IN_PLACE_ONLY=1, GCMPI_EXACT_COUNTS=3000, GCMPI_MAX_BYTES=1M and
 * GCMPI_COMM=all,!metrics and a lossy GCMPI_CODEC:
 *   - a gradient bucket, MPI_IN_PLACE, 20000 floats: compressed (differs
 *     from PMPI_Allreduce);
 *   - a metric reduction into another buffer: exact (in_place_only);
 *   - 3000 floats in place: exact (exact_counts);
 *   - 300000 floats (1.2 MB) in place: exact (max_bytes);
 *   - the gradient call on a duplicate named "metrics": exact
 *     (comm_excluded); on a half-size communicator named "grads":
 *     compressed;
 *   - MPI_Allgather of 20000-float feature blocks: exact under the default
 *     GCMPI_ALLGATHER_CODEC=auto (argv[1] "exact"), lossy when a lossy
 *     codec is named (argv[1] "lossy").
 * The reference is the same call through PMPI_*, which the library does
 * not intercept; the statistics (run_mpi.py --json-expect) check why each
 * call passed through. */
#include "mpi_check.h"

enum { GRAD = 20000, EXACT_COUNT = 3000, LARGE = 300000 };

/* MPI_Allreduce of rank-dependent gradient-like data against
 * PMPI_Allreduce: returns 1 when the bytes are identical. */
static int allreduce_is_exact(const char *what, int n, int in_place, MPI_Comm comm, int rank)
{
    float *in = alloc_floats((size_t)n), *got = alloc_floats((size_t)n);
    float *want = alloc_floats((size_t)n);
    fill_gradient(in, (size_t)n, rank, (uint64_t)n + 7);
    PMPI_Allreduce(in, want, n, MPI_FLOAT, MPI_SUM, comm);
    if (in_place) {
        memcpy(got, in, (size_t)n * sizeof(float));
        MPI_Allreduce(MPI_IN_PLACE, got, n, MPI_FLOAT, MPI_SUM, comm);
    } else {
        MPI_Allreduce(in, got, n, MPI_FLOAT, MPI_SUM, comm);
    }
    int exact = memcmp(got, want, (size_t)n * sizeof(float)) == 0;
    /* Compressed or not, the sum must be closer to the sum than zero is
     * (topk 0.1 of a 2-rank sum keeps about 0.3 of it). */
    double d = 0, e = 0;
    for (int i = 0; i < n; i++) {
        d += ((double)got[i] - want[i]) * ((double)got[i] - want[i]);
        e += (double)want[i] * want[i];
    }
    CHECK(d < e, "%s: relative error %g is not a sum", what, sqrt(d / e));
    free(in);
    free(got);
    free(want);
    /* Every rank must have seen the same: agree through MPI_INT. */
    int all = 0;
    MPI_Allreduce(&exact, &all, 1, MPI_INT, MPI_MIN, comm);
    return all;
}

static int allgather_is_exact(int n, MPI_Comm comm, int rank, int size)
{
    float *block = alloc_floats((size_t)n);
    float *got = alloc_floats((size_t)n * (size_t)size);
    float *want = alloc_floats((size_t)n * (size_t)size);
    /* Normalised features: one unit vector per rank. */
    fill_gradient(block, (size_t)n, rank, 99);
    double norm = 0;
    for (int i = 0; i < n; i++) norm += (double)block[i] * block[i];
    for (int i = 0; i < n; i++) block[i] = (float)(block[i] / sqrt(norm));
    PMPI_Allgather(block, n, MPI_FLOAT, want, n, MPI_FLOAT, comm);
    MPI_Allgather(block, n, MPI_FLOAT, got, n, MPI_FLOAT, comm);
    int exact = memcmp(got, want, (size_t)n * (size_t)size * sizeof(float)) == 0, all = 0;
    free(block);
    free(got);
    free(want);
    MPI_Allreduce(&exact, &all, 1, MPI_INT, MPI_MIN, comm);
    return all;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_library_preloaded();
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int gather_exact = argc < 2 || strcmp(argv[1], "lossy") != 0;

    CHECK(!allreduce_is_exact("gradient bucket (in place)", GRAD, 1, MPI_COMM_WORLD, rank),
          "the in-place gradient bucket was not compressed");
    CHECK(allreduce_is_exact("metric (not in place)", GRAD, 0, MPI_COMM_WORLD, rank),
          "a reduction that is not in place was compressed under GCMPI_IN_PLACE_ONLY=1");
    CHECK(allreduce_is_exact("count in GCMPI_EXACT_COUNTS", EXACT_COUNT, 1, MPI_COMM_WORLD, rank),
          "a count listed in GCMPI_EXACT_COUNTS was compressed");
    CHECK(allreduce_is_exact("above GCMPI_MAX_BYTES", LARGE, 1, MPI_COMM_WORLD, rank),
          "a call above GCMPI_MAX_BYTES was compressed");

    MPI_Comm metrics, grads;
    MPI_Comm_dup(MPI_COMM_WORLD, &metrics);
    MPI_Comm_set_name(metrics, "metrics");
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &grads);
    MPI_Comm_set_name(grads, "grads");
    CHECK(allreduce_is_exact("excluded communicator", GRAD, 1, metrics, rank),
          "a call on the communicator excluded by !metrics was compressed");
    int grads_size;
    MPI_Comm_size(grads, &grads_size);
    if (grads_size >= 2) /* np >= 4: every half has two ranks */
        CHECK(!allreduce_is_exact("selected communicator", GRAD, 1, grads, rank),
              "the gradient bucket on 'grads' was not compressed under GCMPI_COMM=all,!metrics");
    MPI_Comm_free(&metrics);
    MPI_Comm_free(&grads);

    int exact = allgather_is_exact(GRAD, MPI_COMM_WORLD, rank, size);
    if (gather_exact)
        CHECK(exact, "MPI_Allgather of features was not exact under GCMPI_ALLGATHER_CODEC=auto");
    else
        CHECK(!exact, "MPI_Allgather was exact although GCMPI_ALLGATHER_CODEC names a lossy codec");
    return check_finish("exact_calls");
}
