/* codec_powersgd.cu — codecs/codec_powersgd.c on the device: P = M Q (one
 * thread per element of P, the CPU's accumulation chain), modified
 * Gram-Schmidt in double (one thread: rows x r^2 work, sequential in the
 * CPU's order, with x86's NaN rules for doubles and conversions), Q = M^T P
 * (one thread per element of Q, rows taken in the CPU's groups of four),
 * residual and decode M +- P Q^T one thread per element. The starting Q,
 * Box-Muller normals from libm's log and cos (which CUDA's do not match bit
 * for bit), is made on the host by gc_powersgd_init_q: cols x r floats. */
#include "gpu_internal.cuh"

#define PS_HEAD 12
#define PS_MAX_RANK 1024u

/* ---- doubles as x86 rounds them (NaN operands kept and made quiet) ---- */

__device__ static inline uint64_t dbits(double d) { return (uint64_t)__double_as_longlong(d); }
__device__ static inline double bitsd(uint64_t u) { return __longlong_as_double((long long)u); }
__device__ static inline bool d_is_nan(double d) { return (dbits(d) & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull; }
__device__ static inline double dx_nan(double a, double b, double res)
{
    if (d_is_nan(a)) return bitsd(dbits(a) | 0x0008000000000000ull);
    if (d_is_nan(b)) return bitsd(dbits(b) | 0x0008000000000000ull);
    if (d_is_nan(res)) return bitsd(0xFFF8000000000000ull);
    return res;
}
__device__ static inline double dx_add(double a, double b) { return dx_nan(a, b, __dadd_rn(a, b)); }
__device__ static inline double dx_sub(double a, double b) { return dx_nan(a, b, __dsub_rn(a, b)); }
__device__ static inline double dx_mul(double a, double b) { return dx_nan(a, b, __dmul_rn(a, b)); }
/* cvtss2sd / cvtsd2ss: a NaN keeps its sign and top payload bits, quiet. */
__device__ static inline double f2d(float f)
{
    const uint32_t u = fbits(f);
    if (!is_nan(f)) return (double)f;
    return bitsd((uint64_t)(u & 0x80000000u) << 32 | 0x7FF8000000000000ull
                 | (uint64_t)(u & 0x003FFFFFu) << 29);
}
__device__ static inline float d2f(double d)
{
    const uint64_t u = dbits(d);
    if (!d_is_nan(d)) return __double2float_rn(d);
    return bitsf(((uint32_t)(u >> 32) & 0x80000000u) | 0x7FC00000u | ((uint32_t)(u >> 29) & 0x003FFFFFu));
}

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

/* gc_powersgd_orthonormalize, one thread. */
__global__ void k_ps_orthonormalize(float *p, size_t rows, size_t r)
{
    for (size_t j = 0; j < r; j++) {
        double before = 0.0;
        for (size_t i = 0; i < rows; i++)
            before = dx_add(before, dx_mul(f2d(p[i * r + j]), f2d(p[i * r + j])));
        for (int pass = 0; pass < 2; pass++) {
            for (size_t l = 0; l < j; l++) {
                double d = 0.0;
                for (size_t i = 0; i < rows; i++)
                    d = dx_add(d, dx_mul(f2d(p[i * r + l]), f2d(p[i * r + j])));
                for (size_t i = 0; i < rows; i++)
                    p[i * r + j] = d2f(dx_sub(f2d(p[i * r + j]), dx_mul(d, f2d(p[i * r + l]))));
            }
        }
        double after = 0.0;
        for (size_t i = 0; i < rows; i++)
            after = dx_add(after, dx_mul(f2d(p[i * r + j]), f2d(p[i * r + j])));
        const double norm = d_is_nan(after) ? after : __dsqrt_rn(after);
        if (norm > 0.0 && norm <= 1.7976931348623157e308 && after > 1e-12 * before) {
            const double inv = __ddiv_rn(1.0, norm);
            for (size_t i = 0; i < rows; i++) p[i * r + j] = d2f(dx_mul(f2d(p[i * r + j]), inv));
        } else {
            for (size_t i = 0; i < rows; i++) p[i * r + j] = 0.0f;
        }
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
    float *hq = (float *)malloc(c * rk * sizeof(float));
    float *q = (float *)scratch_get(ctx, s, c * rk * sizeof(float));
    float *pm = (float *)scratch_get(ctx, s, sh.rows * rk * sizeof(float));
    size_t e = hq && q && pm ? 0 : GC_ERR(ALLOC);
    if (!e) {
        gc_powersgd_init_q(sh, seed, hq);
        if (cudaMemcpyAsync(q, hq, c * rk * sizeof(float), cudaMemcpyHostToDevice, st) != cudaSuccess)
            e = GC_ERR(GENERIC);
        else
            e = sync_status(ctx);  /* hq is freed below */
    }
    free(hq);
    if (gc_is_error(e)) return e;
    k_ps_p<<<blocks_for(sh.rows * rk, GPU_THREADS), GPU_THREADS, 0, st>>>(m, n, sh.rows, c, rk, q, pm);
    k_ps_orthonormalize<<<1, 1, 0, st>>>(pm, sh.rows, rk);
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
