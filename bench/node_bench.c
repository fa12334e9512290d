/* node_bench.c — hier's two phases inside a node (pmpi/node_shm.c) alone:
 * the window's reduce-scatter, then its allgather with the chunks copied
 * out through the cache and past it (stream_copy.h), in turns, call by
 * call, so a drift of the machine hits both alike.
 *
 *   mpirun -np 8 build/bench/gcmpi-node-bench --sizes 4M,16M,64M --reps 15
 *
 * The ranks sharing memory with rank 0's are the node (all of them on one
 * host). Prints the median over calls of the slowest rank's time of each
 * phase, and whether the sums of each way's first call were exact. */
#include "node_shm.h"
#include "coll_impl.h"
#include "size_arg.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_REPS 101

static int by_value(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, by_value);
    return t[n / 2];
}

/* The slowest rank's seconds. */
static double slowest(double mine, MPI_Comm node)
{
    double all = mine;
    MPI_Allreduce(&mine, &all, 1, MPI_DOUBLE, MPI_MAX, node);
    return all;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int q, me;
    MPI_Comm_size(node, &q);
    MPI_Comm_rank(node, &me);
    const char *sizes = "4M,16M,64M";
    int reps = 11;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sizes") && i + 1 < argc) sizes = argv[++i];
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else {
            if (me == 0)
                fprintf(stderr, "usage: mpirun -np N gcmpi-node-bench [--sizes LIST] [--reps N]\n"
                                "  LIST: bytes of each rank's vector, K/M/G suffixes (default "
                                "4M,16M,64M); N: calls of each way, 1..%d (default 11)\n",
                        MAX_REPS);
            MPI_Finalize();
            return 2;
        }
    }
    if (reps < 1 || reps > MAX_REPS) reps = reps < 1 ? 1 : MAX_REPS;
    if (me == 0)
        printf("%d ranks sharing memory; medians of %d calls, slowest rank (ms)\n"
               "%10s %10s %12s %12s %8s %6s\n", q, reps, "bytes", "rs", "ag cached",
               "ag streamed", "ratio", "exact");
    char list[1024];
    snprintf(list, sizeof list, "%s", sizes);
    int all_exact = 1;
    for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        const size_t n = gcmpi_bench_parse_size(t) / sizeof(float);
        float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
        int *counts = malloc((size_t)q * sizeof *counts), *displs = malloc((size_t)q * sizeof *displs);
        if (!n || !in || !out || !counts || !displs) {
            if (me == 0) fprintf(stderr, "gcmpi-node-bench: bad size '%s' or no memory\n", t);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        /* Small integers: every sum exact in float, checkable. */
        for (size_t i = 0; i < n; i++) in[i] = (float)((i + (size_t)me) % 61);
        for (int i = 0; i < q; i++) {
            counts[i] = (int)gcmpi_chunk_len(n, q, i);
            displs[i] = (int)gcmpi_chunk_start(n, q, i);
        }
        gcmpi_node_shm *shm = NULL;
        double rs[MAX_REPS], ag[2][MAX_REPS];
        size_t wrong = 0;
        for (int r = 0; r < reps; r++)
            for (int way = 0; way < 2; way++) {
                const int streamed = (r + way) % 2; /* each round starts with the other */
                gcmpi_node_shm_set_streaming(streamed);
                MPI_Barrier(node);
                double t0 = MPI_Wtime();
                int rc = gcmpi_node_shm_reduce_scatter(&shm, node, in, out, counts, displs);
                const double t_rs = MPI_Wtime() - t0;
                int worst = MPI_SUCCESS;
                MPI_Barrier(node);
                t0 = MPI_Wtime();
                if (rc == MPI_SUCCESS)
                    rc = gcmpi_node_shm_allgather(&shm, node, out, counts, displs, MPI_SUCCESS,
                                                  &worst);
                const double t_ag = MPI_Wtime() - t0;
                if (rc != MPI_SUCCESS || worst != MPI_SUCCESS) {
                    if (me == 0) fprintf(stderr, "gcmpi-node-bench: the window failed (%d)\n", rc);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
                /* Checked on the first round of each way (the check is
                 * slower than the call). */
                for (size_t i = 0; r == 0 && i < n; i++) {
                    size_t want = 0;
                    for (int k = 0; k < q; k++) want += (i + (size_t)k) % 61;
                    wrong += out[i] != (float)want;
                }
                if (way == 0) rs[r] = slowest(t_rs, node);
                else (void)slowest(t_rs, node);
                ag[streamed][r] = slowest(t_ag, node);
            }
        unsigned long long bad = wrong, all_bad = 0;
        MPI_Allreduce(&bad, &all_bad, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, node);
        all_exact &= all_bad == 0;
        const double m_rs = median(rs, reps), m0 = median(ag[0], reps), m1 = median(ag[1], reps);
        if (me == 0)
            printf("%10zu %10.2f %12.2f %12.2f %7.2fx %6s\n", n * sizeof(float), m_rs * 1e3,
                   m0 * 1e3, m1 * 1e3, m0 / m1, all_bad ? "NO" : "yes");
        gcmpi_node_shm_set_streaming(-1);
        gcmpi_node_shm_free(shm);
        free(in), free(out), free(counts), free(displs);
    }
    MPI_Comm_free(&node);
    MPI_Finalize();
    return all_exact ? 0 : 1;
}
