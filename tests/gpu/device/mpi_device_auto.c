/* mpi_device_auto.c — a training loop's allreduce on one device buffer,
 * the same call again and again, as GCMPI_ALGO=auto meets it: its trial
 * runs each candidate on the device buffer, then it settles.
 *
 *   mpi_device_auto CALLS FLOATS BOUND [allgather]
 *
 * Device memory comes from the GPU library (device_api.h). Each call sums
 * a new gradient in place; every result is within BOUND (relative L2) of
 * the exact sum and the same bytes on every rank. With "allgather" each
 * call is an MPI_Allgather of FLOATS a rank instead, in place every other
 * call, each block within BOUND of its rank's input. What auto chose is in
 * the library's JSON report, which the test reads. Exit status 0 when all
 * hold. */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_api.h"

static int rank, size, failures;

/* Exactly representable values whose sums over ranks are exact too. */
static float value(int r, size_t i, int call)
{
    return (float)((int)((i * 7 + (size_t)call * 13) % 97) - 48) * (float)(r + 1) * 0.125f;
}

static double relative_error(const float *got, const float *want, size_t n)
{
    double d = 0.0, w = 0.0;
    for (size_t i = 0; i < n; i++) {
        d += ((double)got[i] - want[i]) * ((double)got[i] - want[i]);
        w += (double)want[i] * want[i];
    }
    return w > 0 ? sqrt(d / w) : sqrt(d);
}

static int same_on_all_ranks(const void *buf, size_t bytes)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < bytes; i++) h = (h ^ ((const uint8_t *)buf)[i]) * 1099511628211ull;
    uint64_t lo = h, hi = h;
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    return lo == hi;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: mpi_device_auto CALLS FLOATS BOUND [allgather]\n");
        return 2;
    }
    const int calls = atoi(argv[1]);
    const size_t n = (size_t)atol(argv[2]);
    const double bound = atof(argv[3]);
    const int gather = argc > 4 && strcmp(argv[4], "allgather") == 0;
    gpu_api api;
    if (gpu_api_load(&api, "mpi_device_auto") != 0) return 2;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    void *ctx = api.create();
    const size_t total = gather ? n * (size_t)size : n; /* floats received */
    float *dev = ctx ? api.alloc(ctx, total * sizeof(float)) : NULL;
    float *block = gather && ctx ? api.alloc(ctx, n * sizeof(float)) : NULL;
    float *host = malloc(total * sizeof(float)), *want = malloc(total * sizeof(float));
    if (!dev || (gather && !block) || !host || !want) {
        fprintf(stderr, "mpi_device_auto: rank %d: no device or no memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int call = 0; call < calls && gather; call++) {
        for (int r = 0; r < size; r++)
            for (size_t i = 0; i < n; i++) want[(size_t)r * n + i] = value(r, i, call);
        const int in_place = call % 2;
        float *mine = in_place ? dev + (size_t)rank * n : block;
        api.copy(ctx, mine, want + (size_t)rank * n, n * sizeof(float));
        MPI_Allgather(in_place ? MPI_IN_PLACE : (const void *)block, in_place ? 0 : (int)n,
                      in_place ? MPI_DATATYPE_NULL : MPI_FLOAT, dev, (int)n, MPI_FLOAT,
                      MPI_COMM_WORLD);
        api.copy(ctx, host, dev, total * sizeof(float));
        for (int r = 0; r < size; r++) {
            const double err = relative_error(host + (size_t)r * n, want + (size_t)r * n, n);
            if (!(err <= bound)) {
                fprintf(stderr, "mpi_device_auto: rank %d: gather %d: block %d off by %.6g, "
                                "bound %.6g\n", rank, call, r, err, bound);
                failures++;
            }
        }
        if (!same_on_all_ranks(host, total * sizeof(float))) {
            fprintf(stderr, "mpi_device_auto: rank %d: gather %d: ranks differ\n", rank, call);
            failures++;
        }
    }
    for (int call = 0; call < calls && !gather; call++) {
        for (size_t i = 0; i < n; i++) {
            host[i] = value(rank, i, call);
            want[i] = 0.0f;
            for (int r = 0; r < size; r++) want[i] += value(r, i, call);
        }
        api.copy(ctx, dev, host, n * sizeof(float));
        MPI_Allreduce(MPI_IN_PLACE, dev, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        api.copy(ctx, host, dev, n * sizeof(float));
        const double err = relative_error(host, want, n);
        if (!(err <= bound)) {
            fprintf(stderr, "mpi_device_auto: rank %d: call %d: relative error %.6g, bound %.6g\n",
                    rank, call, err, bound);
            failures++;
        }
        if (!same_on_all_ranks(host, n * sizeof(float))) {
            fprintf(stderr, "mpi_device_auto: rank %d: call %d: ranks differ\n", rank, call);
            failures++;
        }
    }
    api.dealloc(ctx, dev);
    if (block) api.dealloc(ctx, block);
    api.destroy(ctx);
    free(host);
    free(want);
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    return all ? 1 : 0;
}
