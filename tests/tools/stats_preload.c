/* stats_preload.c — a stand-in for libgcmpi in gcmpi-ab's tests, so they run
 * before (or without) the real library. Preloaded the same way, it passes
 * every call through unchanged, counts the float MPI_Allreduce traffic, and at
 * MPI_Finalize rank 0 writes $GCMPI_STATS as a JSON report with one entry per
 * communicator (bytes_offered, bytes_sent) plus env_ranks: how many ranks saw
 * GCMPI_CODEC, which shows whether the launcher forwarded the variables. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned long long calls, bytes;

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm)
{
    if (datatype == MPI_FLOAT && comm == MPI_COMM_WORLD) {
        calls++;
        bytes += (unsigned long long)count * sizeof(float);
    }
    return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

int MPI_Finalize(void)
{
    int rank = 0, seen = getenv("GCMPI_CODEC") != NULL, ranks_seen = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Reduce(&seen, &ranks_seen, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    const char *path = getenv("GCMPI_STATS");
    if (rank == 0 && path) {
        FILE *f = fopen(path, "w");
        if (f) {
            fprintf(f,
                    "{\"library\": \"stats_preload\", \"env_ranks\": %d, \"communicators\": "
                    "[{\"name\": \"MPI_COMM_WORLD\", \"calls\": %llu, \"bytes_offered\": %llu, "
                    "\"bytes_sent\": %llu}]}\n",
                    ranks_seen, calls, bytes, bytes);
            fclose(f);
        }
    }
    return PMPI_Finalize();
}
