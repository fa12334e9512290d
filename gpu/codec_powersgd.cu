/* codec_powersgd.cu — codecs/codec_powersgd.c on the device: P = M Q (one
 * thread per element of P, the CPU's accumulation chain), Q = M^T P (one
 * thread per element of Q, rows taken in the CPU's groups of four),
 * residual and decode M +- P Q^T one thread per element. Two steps run on
 * the host, by the CPU code itself: the starting Q, Box-Muller normals
 * from libm's log and cos (which CUDA's do not match bit for bit;
 * gc_powersgd_init_q, cols x r floats), and the modified Gram-Schmidt of
 * P (gc_powersgd_orthonormalize, rows x r floats there and back): its sums
 * run in one sequential order, which a GPU kernel followed on one thread
 * (the encode of 64 MiB ran at 3 GB/s on the H100 then) and a CPU core
 * follows in 0.1 ms (4096 x 4, this machine). */
#include "gpu_internal.cuh"

#define PS_HEAD 12
#define PS_MAX_RANK 1024u

/* ---- the steps ---------------------------------------------------------- */

/* M = r + g in place (the CPU's rr[i] += g[i]). */
__global__ void k_ps_accumulate(const float *g, float *r, size_t n)
{
    GRID_STRIDE(i, n) r[i] = gx_add(r[i], g[i]);
}

/* p[i][j] = sum over the row's elements k of m[i c + k] q[k][j], in k order. */
__global__ void k_ps_p(const float *m, size_t n, size_t rows, size_t c, size_t r, const float *q,
                       float *p)
{
    GRID_STRIDE(t, rows * r) {
        const size_t i = t / r, j = t % r, start = i * c, len = n - start < c ? n - start : c;
        float acc = 0.0f;
        for (size_t k = 0; k < len; k++) acc = gx_add(acc, gx_mul(m[start + k], q[k * r + j]));
        p[t] = acc;
    }
}

/* q[k][j] = sum over rows of m[i c + k] p[i][j]: full rows four at a time
 * as ((a0 p0 + a1 p1) + (a2 p2 + a3 p3)), then one at a time, then the
 * partial last row (gc_powersgd_q). */
__global__ void k_ps_q(const float *m, size_t n, size_t c, size_t r, const float *p, float *q)
{
    const size_t full = n / c, tail = n % c;
    GRID_STRIDE(t, c * r) {
        const size_t k = t / r, j = t % r;
        float acc = 0.0f;
        size_t i = 0;
        for (; i + 4 <= full; i += 4) {
            const float x01 = gx_add(gx_mul(m[i * c + k], p[i * r + j]),
                                     gx_mul(m[(i + 1) * c + k], p[(i + 1) * r + j]));
            const float x23 = gx_add(gx_mul(m[(i + 2) * c + k], p[(i + 2) * r + j]),
                                     gx_mul(m[(i + 3) * c + k], p[(i + 3) * r + j]));
            acc = gx_add(acc, gx_add(x01, x23));
        }
        for (; i < full; i++) acc = gx_add(acc, gx_mul(m[i * c + k], p[i * r + j]));
        if (tail && k < tail) acc = gx_add(acc, gx_mul(m[i * c + k], p[i * r + j]));
        q[t] = acc;
    }
}

/* out[e] += sign * (P Q^T)[e / c][e % c] (lowrank_add). */
__global__ void k_ps_lowrank_add(const float *p, const float *q, size_t n, size_t c, size_t r,
                                 float sign, float *out)
{
    GRID_STRIDE(e, n) {
        const size_t i = e / c, k = e % c;
        float d = 0.0f;
        for (size_t j = 0; j < r; j++) d = gx_add(d, gx_mul(p[i * r + j], q[k * r + j]));
        out[e] = gx_add(out[e], gx_mul(sign, d));
    }
}

__global__ void k_ps_head(uint8_t *body, uint32_t rows, uint32_t cols, uint32_t r)
{
    st_u32(body, rows);
    st_u32(body + 4, cols);
    st_u32(body + 8, r);
}

static size_t body_size(gc_powersgd_shape s) { return PS_HEAD + 4 * (s.rows + s.cols) * s.rank; }

static size_t ps_encode(gcmpi_gpu_ctx *ctx, scratch *s, const float *g, float *r, size_t n,
                        const gc_params *p, uint64_t seed, uint8_t *body, size_t cap)
{
    const gc_powersgd_shape sh = gc_powersgd_shape_of(n, p->rank);
    const size_t size = body_size(sh), rk = sh.rank, c = sh.cols;
    if (cap < size) return GC_ERR(DST_TOO_SMALL);
    cudaStream_t st = ctx->stream;
    k_ps_head<<<1, 1, 0, st>>>(body, (uint32_t)sh.rows, (uint32_t)c, (uint32_t)rk);
    if (r) k_ps_accumulate<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, st>>>(g, r, n);
    if (rk == 0) return size;
    const float *m = r ? r : g;
    const size_t np = sh.rows * rk, nq = c * rk;
    float *hq = (float *)host_scratch(ctx, (nq + np) * sizeof(float)), *hp = hq ? hq + nq : NULL;
    float *q = (float *)scratch_get(ctx, s, nq * sizeof(float));
    float *pm = (float *)scratch_get(ctx, s, np * sizeof(float));
    size_t e = hq && hp && q && pm ? 0 : GC_ERR(ALLOC);
    if (!e) {
        gc_powersgd_init_q(sh, seed, hq);  /* while the device adds g to r */
        queue_copy(ctx, q, hq, nq * sizeof(float), cudaMemcpyHostToDevice, &e);
    }
    if (!gc_is_error(e)) {
        k_ps_p<<<blocks_for(np, GPU_THREADS), GPU_THREADS, 0, st>>>(m, n, sh.rows, c, rk, q, pm);
        e = fetch(ctx, hp, pm, np * sizeof(float));
    }
    if (!gc_is_error(e)) {
        gc_powersgd_orthonormalize(sh, hp);
        queue_copy(ctx, pm, hp, np * sizeof(float), cudaMemcpyHostToDevice, &e);
        if (!gc_is_error(e)) e = sync_status(ctx);  /* the copy from hp is done */
    }
    if (gc_is_error(e)) return e;
    k_ps_q<<<blocks_for(c * rk, GPU_THREADS), GPU_THREADS, 0, st>>>(m, n, c, rk, pm, q);
    if (r) k_ps_lowrank_add<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, st>>>(pm, q, n, c, rk, -1.0f, r);
    if (cudaMemcpyAsync(body + PS_HEAD, pm, 4 * sh.rows * rk, cudaMemcpyDeviceToDevice, st) != cudaSuccess
        || cudaMemcpyAsync(body + PS_HEAD + 4 * sh.rows * rk, q, 4 * c * rk, cudaMemcpyDeviceToDevice,
                           st) != cudaSuccess)
        return GC_ERR(GENERIC);
    return size;
}

static size_t ps_decode_add(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body, size_t len,
                            float *acc, size_t n)
{
    if (len < PS_HEAD) return GC_ERR(TRUNCATED);
    const uint32_t rows = get_u32(body), cols = get_u32(body + 4), rank = get_u32(body + 8);
    if (rank > PS_MAX_RANK || (n > 0 && rank == 0)) return GC_ERR(CORRUPT);
    const gc_powersgd_shape sh = gc_powersgd_shape_of(n, rank);
    if (sh.rows != rows || sh.cols != cols || sh.rank != rank) return GC_ERR(CORRUPT);
    const size_t size = body_size(sh);
    if (len < size) return GC_ERR(TRUNCATED);
    if (len > size) return GC_ERR(CORRUPT);
    if (n == 0) return 0;
    uint8_t *d = body_to_device(ctx, s, body, len);
    if (!d) return GC_ERR(ALLOC);
    const float *pm = (const float *)(d + PS_HEAD), *q = pm + sh.rows * sh.rank;
    k_ps_lowrank_add<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(
        pm, q, n, sh.cols, sh.rank, 1.0f, acc);
    return 0;
}

extern const gpu_codec gpu_codec_powersgd;
const gpu_codec gpu_codec_powersgd = {ID_POWERSGD, ps_encode, ps_decode_add};

/* ---- the native algorithm's steps (pmpi/coll_device_native.c, gcmpi_gpu.h)
 * coll_native.c's powersgd on device vectors with the codec's kernels:
 * the small P and Q live on the host, where the MPI library sums them and
 * P is orthonormalised by the CPU code (rows x rank^2 work). */

extern "C" size_t gcmpi_gpu_native_powersgd_p(gcmpi_gpu_ctx *ctx, const float *g, float *r,
                                              size_t n, size_t rank, const float *q, float *p)
{
    if (!ctx || rank == 0) return GC_ERR(GENERIC);
    const gc_powersgd_shape sh = gc_powersgd_shape_of(n, rank);
    const size_t np = sh.rows * sh.rank, nq = sh.cols * sh.rank;
    cudaStream_t st = ctx->stream;
    size_t finite = 1;
    if (r && n) {
        k_ps_accumulate<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, st>>>(g, r, n);
        finite = gcmpi_gpu_all_finite(ctx, r, n);  /* waits */
        if (gc_is_error(finite)) return finite;
    }
    if (np == 0) return finite;
    scratch s;
    memset(&s, 0, sizeof s);
    float *qd = (float *)scratch_get(ctx, &s, nq * sizeof(float));
    float *pd = (float *)scratch_get(ctx, &s, np * sizeof(float));
    size_t e = qd && pd ? 0 : GC_ERR(ALLOC);
    queue_copy(ctx, qd, q, nq * sizeof(float), cudaMemcpyHostToDevice, &e);
    if (!gc_is_error(e))
        k_ps_p<<<blocks_for(np, GPU_THREADS), GPU_THREADS, 0, st>>>(r ? r : g, n, sh.rows, sh.cols, sh.rank, qd, pd);
    queue_copy(ctx, p, pd, np * sizeof(float), cudaMemcpyDeviceToHost, &e);
    e = release_and_wait(ctx, &s, e);
    return gc_is_error(e) ? e : finite;
}

extern "C" size_t gcmpi_gpu_native_powersgd_q(gcmpi_gpu_ctx *ctx, const float *m, size_t n,
                                              size_t rank, const float *p, float *q, float *r_sub)
{
    if (!ctx || rank == 0) return GC_ERR(GENERIC);
    const gc_powersgd_shape sh = gc_powersgd_shape_of(n, rank);
    const size_t np = sh.rows * sh.rank, nq = sh.cols * sh.rank;
    if (np == 0 || nq == 0) return 0;
    cudaStream_t st = ctx->stream;
    scratch s;
    memset(&s, 0, sizeof s);
    float *pd = (float *)scratch_get(ctx, &s, np * sizeof(float));
    float *qd = (float *)scratch_get(ctx, &s, nq * sizeof(float));
    size_t e = qd && pd ? 0 : GC_ERR(ALLOC);
    queue_copy(ctx, pd, p, np * sizeof(float), cudaMemcpyHostToDevice, &e);
    if (!gc_is_error(e)) {
        k_ps_q<<<blocks_for(nq, GPU_THREADS), GPU_THREADS, 0, st>>>(m, n, sh.cols, sh.rank, pd, qd);
        if (r_sub) k_ps_lowrank_add<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, st>>>(pd, qd, n, sh.cols, sh.rank, -1.0f, r_sub);
    }
    queue_copy(ctx, q, qd, nq * sizeof(float), cudaMemcpyDeviceToHost, &e);
    return release_and_wait(ctx, &s, e);
}

extern "C" size_t gcmpi_gpu_native_powersgd_out(gcmpi_gpu_ctx *ctx, const float *p, const float *q,
                                                size_t n, size_t rank, float *out)
{
    if (!ctx || rank == 0) return GC_ERR(GENERIC);
    const gc_powersgd_shape sh = gc_powersgd_shape_of(n, rank);
    const size_t np = sh.rows * sh.rank, nq = sh.cols * sh.rank;
    cudaStream_t st = ctx->stream;
    scratch s;
    memset(&s, 0, sizeof s);
    float *pd = (float *)scratch_get(ctx, &s, (np ? np : 1) * sizeof(float));
    float *qd = (float *)scratch_get(ctx, &s, (nq ? nq : 1) * sizeof(float));
    size_t e = qd && pd ? 0 : GC_ERR(ALLOC);
    if (!gc_is_error(e) && n && cudaMemsetAsync(out, 0, n * sizeof(float), st) != cudaSuccess) {
        (void)cudaGetLastError();
        e = GC_ERR(GENERIC);
    }
    queue_copy(ctx, pd, p, np * sizeof(float), cudaMemcpyHostToDevice, &e);
    queue_copy(ctx, qd, q, nq * sizeof(float), cudaMemcpyHostToDevice, &e);
    if (!gc_is_error(e) && np && n)
        k_ps_lowrank_add<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, st>>>(pd, qd, n, sh.cols, sh.rank, 1.0f, out);
    return release_and_wait(ctx, &s, e);
}
