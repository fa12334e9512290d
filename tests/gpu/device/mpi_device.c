/* mpi_device.c — an unmodified-style MPI program whose buffers are CUDA
 * device memory, run under mpirun with libgcmpi.so preloaded.
 *
 *   mpi_device MODE BOUND [same [REPEATS]]
 *
 * Device memory comes from the GPU library (device_api.h). Checks, each
 * on every rank:
 *   - float sums (sendbuf, then MPI_IN_PLACE three times on one buffer,
 *     REPEATS more in place (steady state: no result check), twice more
 *     with the last rank on another buffer (its state new, the others'
 *     kept), once with odd ranks on host buffers, then a host sendbuf
 *     into a device recvbuf),
 *     float allgathers (sendbuf and MPI_IN_PLACE): relative L2 error of
 *     the result against the exact one at most BOUND (0: bit-exact), and
 *     every rank holds the same bytes;
 *   - with a third argument "same": each of those results equals, byte
 *     for byte, the same call made on host buffers (the GPU kernels write
 *     the CPU codecs' payloads and residuals; deterministic codecs only);
 *   - calls no codec may touch, exact: int and double sums, a float
 *     MPI_MAX, a float sum of 16 elements, an int allgather;
 *   - calls the shim only stages: MPI_Bcast (contiguous, and a strided
 *     type whose holes keep their bytes) and MPI_Allgatherv (blocks of
 *     different sizes with gaps between them that keep their bytes; in
 *     place too).
 * MODE is a label for the messages. Exit status 0 when all hold. */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_api.h"

static gpu_api api;
static void *ctx;
static int rank, size, failures;
static const char *mode;

static void fail(const char *what, double got, double want)
{
    fprintf(stderr, "mpi_device %s: rank %d: %s: got %.9g, expected %.9g\n", mode, rank, what,
            got, want);
    failures++;
}

static void *dev_alloc(size_t bytes)
{
    void *p = api.alloc(ctx, bytes);
    if (!p) {
        fprintf(stderr, "mpi_device: rank %d: device allocation of %zu bytes failed\n", rank, bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

static void put(void *dev, const void *host, size_t bytes) { api.copy(ctx, dev, host, bytes); }
static void get(void *host, const void *dev, size_t bytes) { api.copy(ctx, host, dev, bytes); }

/* Same bytes on every rank? (uint64 MPI_MAX/MIN: passed through) */
static void same_on_all_ranks(const char *what, const void *buf, size_t bytes)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < bytes; i++) h = (h ^ ((const uint8_t *)buf)[i]) * 1099511628211ull;
    uint64_t lo = h, hi = h;
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    if (lo != hi) fail(what, 1.0, 0.0);
}

static void close_enough(const char *what, const float *got, const float *want, size_t n,
                         double bound)
{
    double d = 0.0, w = 0.0;
    for (size_t i = 0; i < n; i++) {
        d += ((double)got[i] - want[i]) * ((double)got[i] - want[i]);
        w += (double)want[i] * want[i];
    }
    double rel = w > 0 ? sqrt(d / w) : sqrt(d);
    if (bound == 0.0 ? memcmp(got, want, n * sizeof(float)) != 0 : !(rel <= bound))
        fail(what, rel, bound);
}

/* Exactly representable values whose sums over ranks are exact too. */
static float value(int r, size_t i, int call) { return (float)((int)((i * 7 + (size_t)call) % 97) - 48) * (float)(r + 1) * 0.125f; }

int main(int argc, char **argv)
{
    mode = argc > 1 ? argv[1] : "?";
    const double bound = argc > 2 ? atof(argv[2]) : 0.0;
    /* same: every device call is checked against the same call on host
     * buffers; seeded: only where both run on communicators whose seeds
     * agree (codecs that draw from the call's seed) */
    const int same = argc > 3 && strcmp(argv[3], "same") == 0;
    const int seeded = argc > 3 && strcmp(argv[3], "seeded") == 0;
    const int repeats = argc > 4 ? atoi(argv[4]) : 0; /* extra in-place calls */
    if (gpu_api_load(&api, "mpi_device") != 0) return 2;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    ctx = api.create();
    if (!ctx) {
        fprintf(stderr, "mpi_device: rank %d: no device\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    const size_t n = 16384; /* 64 KiB of floats: compressed when a codec is set */
    float *host = malloc(n * sizeof(float)), *want = malloc(n * sizeof(float)),
          *got = malloc(n * sizeof(float) * (size_t)size);
    float *h_in = malloc(n * sizeof(float)), *h_out = malloc(n * sizeof(float) * (size_t)size);
    float *d_in = dev_alloc(n * sizeof(float)), *d_out = dev_alloc(n * sizeof(float)),
          *d_all = dev_alloc(n * sizeof(float) * (size_t)size);
    /* The overflow section's pair, taken before anything is freed: a
     * reused address would be a buffer with a history (error feedback is
     * keyed by address and count). */
    float *d_ovf = dev_alloc(n * sizeof(float)), *h_ovf = malloc(n * sizeof(float));

    /* ---- float sums ---- */
    for (int call = 0; call < 4; call++) {
        for (size_t i = 0; i < n; i++) {
            host[i] = value(rank, i, call);
            want[i] = 0.0f;
            for (int r = 0; r < size; r++) want[i] += value(r, i, call);
        }
        put(d_in, host, n * sizeof(float));
        memcpy(h_in, host, n * sizeof(float));
        if (call == 0) {
            MPI_Allreduce(d_in, d_out, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            get(got, d_out, n * sizeof(float));
            if (same) MPI_Allreduce(h_in, h_out, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        } else {
            MPI_Allreduce(MPI_IN_PLACE, d_in, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            get(got, d_in, n * sizeof(float));
            if (same) MPI_Allreduce(MPI_IN_PLACE, h_in, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            memcpy(h_out, h_in, n * sizeof(float));
        }
        if (same && memcmp(got, h_out, n * sizeof(float)) != 0)
            fail("allreduce: device result differs from the host one", 1, 0);
        close_enough(call ? "allreduce in place" : "allreduce", got, want, n, bound);
        same_on_all_ranks("allreduce: ranks differ", got, n * sizeof(float));
    }

    /* ---- steady state: the same in-place call again and again ---- */
    for (int k = 0; k < repeats; k++) {
        for (size_t i = 0; i < n; i++) host[i] = value(rank, i, 3);
        put(d_in, host, n * sizeof(float));
        MPI_Allreduce(MPI_IN_PLACE, d_in, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }

    /* ---- one rank's buffer moves (a framework reallocated it): that
     * rank's state is new, the others' kept; under GCMPI_MOMENTUM it takes
     * the result and m of a rank that kept them, as on host buffers ---- */
    float *d_alt = dev_alloc(n * sizeof(float)), *h_alt = malloc(n * sizeof(float));
    for (int call = 6; call < 8; call++) {
        const int moved = rank == size - 1;
        for (size_t i = 0; i < n; i++) {
            host[i] = value(rank, i, call);
            want[i] = 0.0f;
            for (int r = 0; r < size; r++) want[i] += value(r, i, call);
        }
        float *dev = moved ? d_alt : d_in, *twin = moved ? h_alt : h_in;
        put(dev, host, n * sizeof(float));
        MPI_Allreduce(MPI_IN_PLACE, dev, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        get(got, dev, n * sizeof(float));
        if (same) {
            memcpy(twin, host, n * sizeof(float));
            MPI_Allreduce(MPI_IN_PLACE, twin, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            if (memcmp(got, twin, n * sizeof(float)) != 0)
                fail("allreduce, one rank's buffer moved: device result differs from the host one",
                     1, 0);
        }
        close_enough("allreduce, one rank's buffer moved", got, want, n, bound);
        same_on_all_ranks("allreduce, one rank's buffer moved: ranks differ", got,
                          n * sizeof(float));
    }
    api.dealloc(ctx, d_alt);
    free(h_alt);

    /* ---- one call, even ranks on device buffers and odd ranks on host
     * buffers: the same messages either way (GCMPI_MOMENTUM's agreement
     * too), so they meet ---- */
    {
        for (size_t i = 0; i < n; i++) {
            host[i] = value(rank, i, 8);
            want[i] = 0.0f;
            for (int r = 0; r < size; r++) want[i] += value(r, i, 8);
        }
        float *mixed = malloc(n * sizeof(float));
        memcpy(mixed, host, n * sizeof(float));
        if (rank % 2 == 0) {
            put(d_in, host, n * sizeof(float));
            MPI_Allreduce(MPI_IN_PLACE, d_in, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            get(got, d_in, n * sizeof(float));
        } else {
            MPI_Allreduce(MPI_IN_PLACE, mixed, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            memcpy(got, mixed, n * sizeof(float));
        }
        close_enough("allreduce, device and host ranks in one call", got, want, n, bound);
        same_on_all_ranks("allreduce, device and host ranks in one call: ranks differ", got,
                          n * sizeof(float));
        free(mixed);
    }

    /* ---- an overflow step (an fp16 loss scale's inf, a NaN) on rank 0
     * between two finite calls, on a device buffer and its host twin that
     * are new on every rank (the mixed call above advanced d_in's state on
     * some ranks only): the device path sends it as the host path does (no
     * residual takes the value), so the results, NaN bits included, and the
     * next call's are the host's ---- */
    if (same) {
        for (int call = 13; call < 16; call++) {
            for (size_t i = 0; i < n; i++) host[i] = value(rank, i, call);
            if (call == 14 && rank == 0) {
                host[5] = INFINITY;
                host[n / 2 + 3] = NAN;
            }
            put(d_ovf, host, n * sizeof(float));
            memcpy(h_ovf, host, n * sizeof(float));
            MPI_Allreduce(MPI_IN_PLACE, d_ovf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            MPI_Allreduce(MPI_IN_PLACE, h_ovf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            get(got, d_ovf, n * sizeof(float));
            const char *what = call == 13   ? "allreduce before inf and NaN"
                               : call == 14 ? "allreduce of inf and NaN"
                                            : "allreduce after inf and NaN";
            if (memcmp(got, h_ovf, n * sizeof(float)) != 0) fail(what, 1, 0);
            if (call == 14 && isfinite(got[5])) fail("allreduce of inf: finite sum", got[5], INFINITY);
            same_on_all_ranks(what, got, n * sizeof(float));
        }
    }
    /* ---- the same calls on two duplicates of MPI_COMM_WORLD, device
     * buffers on one and host buffers on the other: each communicator's
     * call seeds advance alike, so codecs that draw from the seed
     * (randk's indices, powersgd's starting Q) compare byte for byte too
     * ("seeded"); the second of five calls is an overflow step on rank 0,
     * and three follow it, so state a call left wrong shows in a later sum ---- */
    if (same || seeded) {
        MPI_Comm on_dev, on_host;
        MPI_Comm_dup(MPI_COMM_WORLD, &on_dev);
        MPI_Comm_dup(MPI_COMM_WORLD, &on_host);
        for (int call = 16; call < 21; call++) {
            for (size_t i = 0; i < n; i++) host[i] = value(rank, i, call);
            if (call == 17 && rank == 0) {
                host[n - 1] = -INFINITY;
                host[7] = NAN;
            }
            put(d_ovf, host, n * sizeof(float));
            memcpy(h_ovf, host, n * sizeof(float));
            MPI_Allreduce(MPI_IN_PLACE, d_ovf, (int)n, MPI_FLOAT, MPI_SUM, on_dev);
            MPI_Allreduce(MPI_IN_PLACE, h_ovf, (int)n, MPI_FLOAT, MPI_SUM, on_host);
            get(got, d_ovf, n * sizeof(float));
            if (memcmp(got, h_ovf, n * sizeof(float)) != 0)
                fail("allreduce on twin communicators: device result differs from the host one", 1, 0);
            same_on_all_ranks("allreduce on twin communicators: ranks differ", got, n * sizeof(float));
        }
        MPI_Comm_free(&on_dev);
        MPI_Comm_free(&on_host);
    }
    api.dealloc(ctx, d_ovf);
    free(h_ovf);

    /* ---- a host send buffer into a device receive buffer ---- */
    for (size_t i = 0; i < n; i++) {
        host[i] = value(rank, i, 4);
        want[i] = 0.0f;
        for (int r = 0; r < size; r++) want[i] += value(r, i, 4);
    }
    MPI_Allreduce(host, d_out, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    get(got, d_out, n * sizeof(float));
    close_enough("allreduce host to device", got, want, n, bound);
    same_on_all_ranks("allreduce host to device: ranks differ", got, n * sizeof(float));

    /* ---- float allgathers: blocks of m ---- */
    const size_t m = n / 2;
    for (int in_place = 0; in_place < 2; in_place++) {
        for (size_t i = 0; i < m; i++) host[i] = value(rank, i, 5);
        for (int r = 0; r < size; r++)
            for (size_t i = 0; i < m; i++) got[(size_t)r * m + i] = value(r, i, 5);
        float *wantall = malloc(m * sizeof(float) * (size_t)size);
        memcpy(wantall, got, m * sizeof(float) * (size_t)size);
        if (in_place) {
            put(d_all + (size_t)rank * m, host, m * sizeof(float));
            MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, d_all, (int)m, MPI_FLOAT,
                          MPI_COMM_WORLD);
        } else {
            put(d_in, host, m * sizeof(float));
            MPI_Allgather(d_in, (int)m, MPI_FLOAT, d_all, (int)m, MPI_FLOAT, MPI_COMM_WORLD);
        }
        get(got, d_all, m * sizeof(float) * (size_t)size);
        if (same) {
            memcpy(h_out + (size_t)rank * m, host, m * sizeof(float));
            memcpy(h_in, host, m * sizeof(float));
            if (in_place)
                MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, h_out, (int)m, MPI_FLOAT,
                              MPI_COMM_WORLD);
            else
                MPI_Allgather(h_in, (int)m, MPI_FLOAT, h_out, (int)m, MPI_FLOAT, MPI_COMM_WORLD);
            if (memcmp(got, h_out, m * sizeof(float) * (size_t)size) != 0)
                fail("allgather: device result differs from the host one", 1, 0);
        }
        close_enough(in_place ? "allgather in place" : "allgather", got, wantall,
                     m * (size_t)size, bound);
        same_on_all_ranks("allgather: ranks differ", got, m * sizeof(float) * (size_t)size);
        free(wantall);
    }

    /* ---- calls that must stay exact (staged, never compressed) ---- */
    int *ih = malloc(n * sizeof(int)), *iw = malloc(n * sizeof(int));
    for (size_t i = 0; i < n; i++) {
        ih[i] = (int)(i * 2654435761u % 100000u) + rank;
        iw[i] = 0;
        for (int r = 0; r < size; r++) iw[i] += (int)(i * 2654435761u % 100000u) + r;
    }
    put(d_in, ih, n * sizeof(int));
    MPI_Allreduce(d_in, d_out, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    get(ih, d_out, n * sizeof(int));
    if (memcmp(ih, iw, n * sizeof(int)) != 0) fail("int sum", 1, 0);

    for (size_t i = 0; i < n; i++) {
        host[i] = value(rank, i, 9);
        want[i] = host[i];
        for (int r = 0; r < size; r++) want[i] = fmaxf(want[i], value(r, i, 9));
    }
    put(d_in, host, n * sizeof(float));
    MPI_Allreduce(MPI_IN_PLACE, d_in, (int)n, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
    get(got, d_in, n * sizeof(float));
    if (memcmp(got, want, n * sizeof(float)) != 0) fail("float max", 1, 0);

    const size_t small = 16;
    for (size_t i = 0; i < small; i++) {
        host[i] = value(rank, i, 11) / 3.0f; /* not exact: must be summed as MPI does */
        want[i] = 0.0f;
    }
    float ref[16];
    MPI_Allreduce(host, ref, (int)small, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); /* host: exact path */
    put(d_in, host, small * sizeof(float));
    MPI_Allreduce(d_in, d_out, (int)small, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    get(got, d_out, small * sizeof(float));
    if (memcmp(got, ref, small * sizeof(float)) != 0) fail("small float sum", 1, 0);

    double *dh = malloc(n * sizeof(double)), *dref = malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) dh[i] = (double)value(rank, i, 13) / 7.0;
    MPI_Allreduce(dh, dref, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double *d_dbl = dev_alloc(n * sizeof(double)), *d_dbl_out = dev_alloc(n * sizeof(double));
    put(d_dbl, dh, n * sizeof(double));
    MPI_Allreduce(d_dbl, d_dbl_out, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    get(dh, d_dbl_out, n * sizeof(double));
    if (memcmp(dh, dref, n * sizeof(double)) != 0) fail("double sum", 1, 0);

    int mine[4] = {rank, rank * 10, -rank, 7}, all[4 * 64];
    put(d_in, mine, sizeof mine);
    MPI_Allgather(d_in, 4, MPI_INT, d_all, 4, MPI_INT, MPI_COMM_WORLD);
    get(all, d_all, sizeof(int) * 4 * (size_t)size);
    for (int r = 0; r < size && r < 64; r++)
        if (all[4 * r] != r || all[4 * r + 1] != 10 * r || all[4 * r + 2] != -r || all[4 * r + 3] != 7)
            fail("int allgather", all[4 * r], r);

    /* ---- MPI_Bcast and MPI_Allgatherv: never compressed, staged ---- */
    {
        /* The initial weights from the last rank, whole and through a
         * strided type (every other float): the holes keep their bytes. */
        const int root = size - 1;
        for (size_t i = 0; i < n; i++) host[i] = rank == root ? value(root, i, 15) : -1.0f;
        put(d_in, host, n * sizeof(float));
        MPI_Bcast(d_in, (int)n, MPI_FLOAT, root, MPI_COMM_WORLD);
        get(got, d_in, n * sizeof(float));
        for (size_t i = 0; i < n; i++)
            if (got[i] != value(root, i, 15)) {
                fail("bcast", got[i], value(root, i, 15));
                break;
            }
        MPI_Datatype every_other;
        MPI_Type_vector((int)(n / 2), 1, 2, MPI_FLOAT, &every_other);
        MPI_Type_commit(&every_other);
        for (size_t i = 0; i < n; i++) host[i] = rank == 0 ? value(0, i, 16) : -2.0f;
        put(d_in, host, n * sizeof(float));
        MPI_Bcast(d_in, 1, every_other, 0, MPI_COMM_WORLD);
        get(got, d_in, n * sizeof(float));
        for (size_t i = 0; i < n; i++) {
            const float w = rank == 0 || i % 2 == 0 ? value(0, i, 16) : -2.0f;
            if (got[i] != w) {
                fail("bcast of a strided type", got[i], w);
                break;
            }
        }
        MPI_Type_free(&every_other);

        /* Rank r gives r + 1 blocks of 64 floats at displacement
         * (r + 1) * r / 2 * 64 + 64 * r: one 64-float gap before each
         * block but the first, which keeps its bytes. Then in place. */
        size_t total = 0;
        int counts[64], displs[64];
        for (int r = 0; r < size && r < 64; r++) {
            counts[r] = 64 * (r + 1);
            displs[r] = (int)total + 64 * r;
            total += (size_t)counts[r];
        }
        const size_t span = total + 64 * (size_t)(size - 1);
        if (span <= n * (size_t)size) {
            for (int in_place = 0; in_place < 2; in_place++) {
                for (size_t i = 0; i < span; i++) got[i] = -3.0f;
                for (int i = 0; i < counts[rank]; i++)
                    got[displs[rank] + i] = value(rank, (size_t)i, 17);
                put(d_all, got, span * sizeof(float));
                for (int i = 0; i < counts[rank]; i++) host[i] = value(rank, (size_t)i, 17);
                put(d_in, host, (size_t)counts[rank] * sizeof(float));
                if (in_place)
                    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, d_all, counts, displs,
                                   MPI_FLOAT, MPI_COMM_WORLD);
                else
                    MPI_Allgatherv(d_in, counts[rank], MPI_FLOAT, d_all, counts, displs,
                                   MPI_FLOAT, MPI_COMM_WORLD);
                get(got, d_all, span * sizeof(float));
                for (int r = 0, bad = 0; r < size && !bad; r++) {
                    const size_t gap = r ? (size_t)displs[r] - 64 : 0;
                    for (size_t i = gap; r && i < (size_t)displs[r] && !bad; i++)
                        if (got[i] != -3.0f) bad = 1, fail("allgatherv: a gap changed", got[i], -3.0f);
                    for (int i = 0; i < counts[r] && !bad; i++)
                        if (got[displs[r] + i] != value(r, (size_t)i, 17))
                            bad = 1, fail(in_place ? "allgatherv in place" : "allgatherv",
                                          got[displs[r] + i], value(r, (size_t)i, 17));
                }
            }
        }
    }

    api.dealloc(ctx, d_in);
    api.dealloc(ctx, d_out);
    api.dealloc(ctx, d_all);
    api.dealloc(ctx, d_dbl);
    api.dealloc(ctx, d_dbl_out);
    free(h_in); free(h_out);
    free(host); free(want); free(got); free(ih); free(iw); free(dh); free(dref);
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && total == 0) printf("mpi_device %s: all checks passed on %d ranks\n", mode, size);
    MPI_Finalize();
    api.destroy(ctx);
    return total ? 1 : 0;
}
