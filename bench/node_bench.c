/* node_bench.c — hier's two phases inside a node (pmpi/node_shm.c) alone:
 * the window's reduce-scatter, then its allgather with the chunks copied
 * out through the cache and past it (stream_copy.h), for each window part
 * size asked, all in turns, call by call, so a drift of the machine hits
 * every way alike.
 *
 *   mpirun -np 8 build/bench/gcmpi-node-bench --sizes 4M,16M,64M --reps 15
 *   mpirun -np 8 build/bench/gcmpi-node-bench --node-size 4 --parts 512K,1M
 *
 * The nodes: the ranks sharing memory, or --node-size consecutive ranks
 * (one host emulating several nodes, as GCMPI_NODE_SIZE); every node runs
 * at once, as in hier. Prints the median over calls of the slowest rank's
 * time of each phase, and whether the sums of each way's first call were
 * exact; beside them, in the same turns, every rank copying its vector
 * once (memcpy in to out, all ranks at once): the least the two phases
 * could take, since together they read every input and write every
 * output at least once, and what "x copy" (rs + streamed ag over it)
 * measures them against. */
#include "node_shm.h"
#include "coll_impl.h"
#include "bench_util.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_REPS 101
#define MAX_PARTS 8

/* The slowest rank's seconds, over every node. */
static double slowest(double mine)
{
    double all = mine;
    MPI_Allreduce(&mine, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return all;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int world_rank, world_size;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    const char *sizes = "4M,16M,64M", *part_list = NULL;
    int reps = 11, node_size = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sizes") && i + 1 < argc) sizes = argv[++i];
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--node-size") && i + 1 < argc) node_size = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--parts") && i + 1 < argc) part_list = argv[++i];
        else {
            if (world_rank == 0)
                fprintf(stderr,
                        "usage: mpirun -np N gcmpi-node-bench [--sizes LIST] [--reps N] "
                        "[--node-size Q] [--parts LIST]\n"
                        "  --sizes: bytes of each rank's vector, K/M/G suffixes (default "
                        "4M,16M,64M)\n"
                        "  --reps: calls of each way, 1..%d (default 11)\n"
                        "  --node-size: nodes of Q consecutive ranks, all timed together "
                        "(default: the ranks sharing memory)\n"
                        "  --parts: floats a rank's part of the window holds, K/M suffixes, "
                        "each timed in turns with the others (default the library's, %zu)\n",
                        MAX_REPS, GCMPI_NODE_SHM_MAX_FLOATS);
            MPI_Finalize();
            return 2;
        }
    }
    if (reps < 1 || reps > MAX_REPS) reps = reps < 1 ? 1 : MAX_REPS;
    size_t parts[MAX_PARTS];
    int n_parts = 0;
    char plist[256];
    snprintf(plist, sizeof plist, "%s", part_list ? part_list : "");
    for (char *save = NULL, *t = strtok_r(plist, ",", &save); t && n_parts < MAX_PARTS;
         t = strtok_r(NULL, ",", &save))
        parts[n_parts++] = gcmpi_bench_parse_size(t);
    if (n_parts == 0) parts[n_parts++] = GCMPI_NODE_SHM_MAX_FLOATS;
    for (int k = 0; k < n_parts; k++)
        if (parts[k] == 0) {
            if (world_rank == 0) fprintf(stderr, "gcmpi-node-bench: bad --parts '%s'\n", part_list);
            MPI_Finalize();
            return 2;
        }
    MPI_Comm node;
    if (node_size > 0)
        MPI_Comm_split(MPI_COMM_WORLD, world_rank / node_size, world_rank, &node);
    else
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int q, me, possible = 0;
    MPI_Comm_size(node, &q);
    MPI_Comm_rank(node, &me);
    gcmpi_node_shm_possible(node, &possible);
    int all_possible = 0;
    MPI_Allreduce(&possible, &all_possible, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_possible) {
        if (world_rank == 0) fprintf(stderr, "gcmpi-node-bench: a node's ranks do not share memory\n");
        MPI_Finalize();
        return 2;
    }
    if (world_rank == 0)
        printf("%d ranks, nodes of %d sharing memory; medians of %d calls, slowest rank (ms)\n"
               "%10s %10s %10s %12s %12s %8s %6s %8s %7s\n", world_size, q, reps, "bytes", "part",
               "rs", "ag cached", "ag streamed", "ratio", "exact", "copy", "x copy");
    char list[1024];
    snprintf(list, sizeof list, "%s", sizes);
    int all_exact = 1;
    for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        const size_t n = gcmpi_bench_parse_size(t) / sizeof(float);
        float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
        int *counts = malloc((size_t)q * sizeof *counts), *displs = malloc((size_t)q * sizeof *displs);
        if (!n || !in || !out || !counts || !displs) {
            if (world_rank == 0) fprintf(stderr, "gcmpi-node-bench: bad size '%s' or no memory\n", t);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        /* Small integers: every sum exact in float, checkable. */
        for (size_t i = 0; i < n; i++) in[i] = (float)((i + (size_t)me) % 61);
        for (int i = 0; i < q; i++) {
            counts[i] = (int)gcmpi_chunk_len(n, q, i);
            displs[i] = (int)gcmpi_chunk_start(n, q, i);
        }
        gcmpi_node_shm *shm = NULL;
        static double rs[MAX_PARTS][MAX_REPS], ag[MAX_PARTS][2][MAX_REPS], copy[MAX_REPS];
        size_t wrong = 0;
        const int ways = 2 * n_parts + 1; /* the last: the copy */
        for (int r = 0; r < reps; r++)
            for (int w = 0; w < ways; w++) {
                /* Each round starts one way later: a drift hits all alike. */
                const int way = (r + w) % ways, part = way / 2, streamed = way % 2;
                if (way == ways - 1) {
                    MPI_Barrier(MPI_COMM_WORLD);
                    const double t0 = MPI_Wtime();
                    memcpy(out, in, n * sizeof(float));
                    copy[r] = slowest(MPI_Wtime() - t0);
                    continue;
                }
                /* A larger window is kept: the rounds follow the part size. */
                gcmpi_node_shm_set_max_floats(parts[part]);
                gcmpi_node_shm_set_streaming(streamed);
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                int rc = gcmpi_node_shm_reduce_scatter(&shm, node, in, out, counts, displs, 0, NULL);
                const double t_rs = MPI_Wtime() - t0;
                int worst = MPI_SUCCESS;
                MPI_Barrier(MPI_COMM_WORLD);
                t0 = MPI_Wtime();
                if (rc == MPI_SUCCESS)
                    rc = gcmpi_node_shm_allgather(&shm, node, out, counts, displs, MPI_SUCCESS,
                                                  &worst);
                const double t_ag = MPI_Wtime() - t0;
                if (rc != MPI_SUCCESS || worst != MPI_SUCCESS) {
                    if (world_rank == 0)
                        fprintf(stderr, "gcmpi-node-bench: the window failed (%d)\n", rc);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
                /* Checked on each way's first round (the check is slower
                 * than the call). */
                for (size_t i = 0; r == 0 && i < n; i++) {
                    size_t want = 0;
                    for (int k = 0; k < q; k++) want += (i + (size_t)k) % 61;
                    wrong += out[i] != (float)want;
                }
                const double s_rs = slowest(t_rs), s_ag = slowest(t_ag);
                if (!streamed) rs[part][r] = s_rs; /* the phase is the same either way */
                ag[part][streamed][r] = s_ag;
            }
        unsigned long long bad = wrong, all_bad = 0;
        MPI_Allreduce(&bad, &all_bad, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        all_exact &= all_bad == 0;
        const double m_copy = gcmpi_bench_median(copy, reps);
        for (int k = 0; k < n_parts; k++) {
            const double m_rs = gcmpi_bench_median(rs[k], reps), m0 = gcmpi_bench_median(ag[k][0], reps),
                         m1 = gcmpi_bench_median(ag[k][1], reps);
            if (world_rank == 0)
                printf("%10zu %10zu %10.3f %12.3f %12.3f %7.2fx %6s %8.3f %6.2fx\n",
                       n * sizeof(float), parts[k], m_rs * 1e3, m0 * 1e3, m1 * 1e3, m0 / m1,
                       all_bad ? "NO" : "yes", m_copy * 1e3, (m_rs + m1) / m_copy);
        }
        gcmpi_node_shm_set_streaming(-1);
        gcmpi_node_shm_set_max_floats(GCMPI_NODE_SHM_MAX_FLOATS);
        gcmpi_node_shm_free(shm);
        free(in), free(out), free(counts), free(displs);
    }
    MPI_Comm_free(&node);
    MPI_Finalize();
    return all_exact ? 0 : 1;
}
