/* node_probe.c — what an MPI job sees of its nodes, and how fast it talks
 * inside and between them. Rank 0 prints:
 *   node=K host=NAME ranks=FIRST-LAST          (one line per node)
 *   nodes=Q ranks=N sizes=S0,S1,... block=B hosts_ok=H
 * Nodes are the communicators of MPI_Comm_split_type(MPI_COMM_TYPE_SHARED),
 * what node-aware collectives build on. block=1 when ranks are placed node by
 * node (ranks 0..S0-1 on node 0, ...); hosts_ok=1 when the ranks of a node
 * share one processor name and no two nodes share one.
 * With --count N it also times float MPI_Allreduce(MPI_SUM) of N elements:
 *   intra_seconds=T  inside every node at once (each node's communicator)
 *   inter_seconds=T  between nodes: one rank per node (local rank 0)
 *   metric=1.5000    exactly when every sum was right
 * (minimum over --iters, the slowest rank of a call deciding its time). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long parse_positive(const char *s, const char *name)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < 1) {
        fprintf(stderr, "node_probe: %s=%s; expected a positive integer\n", name, s);
        exit(2);
    }
    return v;
}

/* Minimum over iters of the slowest rank's time for an allreduce of count
 * floats on comm, every rank contributing 1 + r/(P-1) (so each sum is 1.5 P);
 * *ok is cleared when a sum is wrong. Ranks not in the communicator pass
 * MPI_COMM_NULL and only join the timing barriers. */
static double time_allreduce(MPI_Comm comm, float *buf, long count, long iters, int *ok)
{
    int rank = 0, size = 1;
    if (comm != MPI_COMM_NULL) {
        MPI_Comm_rank(comm, &rank);
        MPI_Comm_size(comm, &size);
    }
    const float mine = size > 1 ? 1.0f + (float)rank / (float)(size - 1) : 1.5f;
    const float want = 1.5f * (float)size;
    double best = 1e300;
    if (comm != MPI_COMM_NULL) { /* connection set-up is not timed */
        float warm = 1.0f;
        MPI_Allreduce(MPI_IN_PLACE, &warm, 1, MPI_FLOAT, MPI_SUM, comm);
    }
    for (long it = 0; it < iters; it++) {
        for (long i = 0; i < count; i++) buf[i] = mine;
        MPI_Barrier(MPI_COMM_WORLD);
        double t = MPI_Wtime();
        if (comm != MPI_COMM_NULL)
            MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, MPI_FLOAT, MPI_SUM, comm);
        t = MPI_Wtime() - t;
        MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        best = t < best ? t : best;
        if (comm != MPI_COMM_NULL)
            for (long i = 0; i < count; i++)
                if (buf[i] - want > 1e-5f * want || want - buf[i] > 1e-5f * want) {
                    *ok = 0;
                    break;
                }
    }
    return best;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long count = 0, iters = 3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--count") && i + 1 < argc) count = parse_positive(argv[++i], "--count");
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = parse_positive(argv[++i], "--iters");
        else {
            if (rank == 0) fprintf(stderr, "node_probe: unknown argument %s\n", argv[i]);
            MPI_Finalize();
            return 2;
        }
    }

    MPI_Comm node, cross;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int local_rank, local_size;
    MPI_Comm_rank(node, &local_rank);
    MPI_Comm_size(node, &local_size);
    /* The ranks of one local rank, one per node, ordered as the nodes' first
     * ranks are: the node's number is the leader's rank among the leaders. */
    MPI_Comm_split(MPI_COMM_WORLD, local_rank, rank, &cross);
    int node_id = 0;
    if (local_rank == 0) MPI_Comm_rank(cross, &node_id);
    MPI_Bcast(&node_id, 1, MPI_INT, 0, node);

    char host[MPI_MAX_PROCESSOR_NAME] = {0};
    int len;
    MPI_Get_processor_name(host, &len);
    int *ids = NULL;
    char *hosts = NULL;
    if (rank == 0) {
        ids = malloc((size_t)size * sizeof *ids);
        hosts = calloc((size_t)size, MPI_MAX_PROCESSOR_NAME);
        if (!ids || !hosts) MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Gather(&node_id, 1, MPI_INT, ids, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
               MPI_COMM_WORLD);
    if (rank == 0) {
        int nodes = 0, block = 1, hosts_ok = 1;
        for (int r = 0; r < size; r++) nodes = ids[r] + 1 > nodes ? ids[r] + 1 : nodes;
        /* Node by node: the node number never goes down along the ranks. */
        for (int r = 1; r < size; r++) block &= ids[r] >= ids[r - 1];
        for (int a = 0; a < size; a++)
            for (int b = a + 1; b < size; b++)
                if ((ids[a] == ids[b]) != !strcmp(hosts + (size_t)a * MPI_MAX_PROCESSOR_NAME,
                                                  hosts + (size_t)b * MPI_MAX_PROCESSOR_NAME))
                    hosts_ok = 0;
        char sizes[4096] = "";
        size_t used = 0;
        for (int k = 0; k < nodes; k++) {
            int first = -1, last = -1, n = 0;
            for (int r = 0; r < size; r++)
                if (ids[r] == k) {
                    first = first < 0 ? r : first;
                    last = r;
                    n++;
                }
            printf("node=%d host=%s ranks=%d-%d\n", k,
                   first >= 0 ? hosts + (size_t)first * MPI_MAX_PROCESSOR_NAME : "?", first, last);
            if (used < sizeof sizes)
                used += (size_t)snprintf(sizes + used, sizeof sizes - used, "%s%d", k ? "," : "", n);
        }
        printf("nodes=%d ranks=%d sizes=%s block=%d hosts_ok=%d\n", nodes, size, sizes, block, hosts_ok);
        free(ids);
        free(hosts);
    }

    if (count) {
        float *buf = malloc((size_t)count * sizeof *buf);
        if (!buf) {
            fprintf(stderr, "node_probe: cannot allocate %ld floats\n", count);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        int ok = 1;
        double intra = time_allreduce(node, buf, count, iters, &ok);
        double inter = time_allreduce(local_rank == 0 ? cross : MPI_COMM_NULL, buf, count, iters, &ok);
        MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (rank == 0)
            printf("count=%ld bytes=%ld iters=%ld intra_seconds=%.6f inter_seconds=%.6f\nmetric=%.4f\n",
                   count, count * 4, iters, intra, inter, ok ? 1.5 : 0.0);
        free(buf);
    }
    MPI_Comm_free(&cross);
    MPI_Comm_free(&node);
    MPI_Finalize();
    return 0;
}
