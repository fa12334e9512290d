/* gcmpi_gpu.cu — the public API of libgcmpi_gpu (gcmpi_gpu.h): context,
 * memory, and gcmpi_gpu_encode / gcmpi_gpu_decode_add, which reach each
 * codec's kernels through the table of gpu_codecs.cu and write the payload
 * header (write_header, the one place it is written). The codecs'
 * kernels are in gpu/codec_NAME.cu.
 *
 * The body is built in a device staging buffer from the context's pool,
 * then copied behind a header written on the host (with gc_crc32c when the
 * CRC flag is asked for). Layouts, rounding and summation orders mirror
 * codecs/codec_*.c and codecs/quant_common.h; a change there must be made
 * here too (tests/gpu/test_gpu_codecs.c compares the bytes). Float
 * exactness: gpu_internal.cuh. */
#include "gpu_internal.cuh"

/* ---- context -------------------------------------------------------------- */

extern "C" int gcmpi_gpu_device_count(void)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return count > 0 ? count : 0;
}

extern "C" int gcmpi_gpu_is_device_pointer(const void *p)
{
    if (!p) return 0;
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

extern "C" int gcmpi_gpu_supports(const gc_codec *c)
{
    return c && gpu_codec_for(gc_codec_id(c)) != NULL;
}

extern "C" gcmpi_gpu_ctx *gcmpi_gpu_create(void)
{
    if (gcmpi_gpu_device_count() == 0) return NULL;
    gcmpi_gpu_ctx *ctx = (gcmpi_gpu_ctx *)calloc(1, sizeof *ctx);
    if (!ctx) return NULL;
    uint64_t keep = UINT64_MAX;
    cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    /* A blocking stream: it waits for work the application queued on the
     * legacy default stream (a gradient still being written). */
    if (cudaGetDevice(&ctx->device) != cudaSuccess || cudaStreamCreate(&ctx->stream) != cudaSuccess)
        goto fail;
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = ctx->device;
    /* Our own pool, so the application's default pool keeps its settings. */
    if (cudaMemPoolCreate(&ctx->pool, &props) != cudaSuccess) {
        ctx->pool = NULL;
        goto fail;
    }
    if (cudaMemPoolSetAttribute(ctx->pool, cudaMemPoolAttrReleaseThreshold, &keep) != cudaSuccess
        || cudaMallocAsync((void **)&ctx->flag, sizeof *ctx->flag, ctx->pool, ctx->stream) != cudaSuccess
        || cudaStreamSynchronize(ctx->stream) != cudaSuccess)
        goto fail;
    return ctx;
fail:
    (void)cudaGetLastError();
    gcmpi_gpu_destroy(ctx);
    return NULL;
}

extern "C" void gcmpi_gpu_destroy(gcmpi_gpu_ctx *ctx)
{
    if (!ctx) return;
    if (ctx->stream) {
        if (ctx->flag) (void)cudaFreeAsync(ctx->flag, ctx->stream);
        (void)cudaStreamSynchronize(ctx->stream);
        (void)cudaStreamDestroy(ctx->stream);
    }
    if (ctx->pool) (void)cudaMemPoolDestroy(ctx->pool);
    (void)cudaGetLastError();
    free(ctx);
}

extern "C" void *gcmpi_gpu_alloc(gcmpi_gpu_ctx *ctx, size_t bytes)
{
    void *p = NULL;
    if (!ctx) return NULL;
    if (cudaMallocFromPoolAsync(&p, bytes ? bytes : 1, ctx->pool, ctx->stream) != cudaSuccess
        || cudaStreamSynchronize(ctx->stream) != cudaSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    return p;
}

extern "C" void gcmpi_gpu_dealloc(gcmpi_gpu_ctx *ctx, void *p)
{
    if (!ctx || !p) return;
    (void)cudaFreeAsync(p, ctx->stream);
    (void)cudaStreamSynchronize(ctx->stream);
    (void)cudaGetLastError();
}

extern "C" size_t gcmpi_gpu_copy(gcmpi_gpu_ctx *ctx, void *dst, const void *src, size_t bytes)
{
    if (!ctx) return GC_ERR(GENERIC);
    if (bytes == 0) return 0;
    if (cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, ctx->stream) != cudaSuccess) {
        (void)cudaGetLastError();
        return GC_ERR(GENERIC);
    }
    return sync_status(ctx);
}

/* ---- shared first pass ------------------------------------------------------ */

__global__ void k_accumulate(const float *g, float *r, size_t n)
{
    GRID_STRIDE(i, n) r[i] = gx_add(g[i], r[i]);
}

void gpu_accumulate(gcmpi_gpu_ctx *ctx, const float *g, float *r, size_t n)
{
    if (n) k_accumulate<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(g, r, n);
}

__global__ void k_add(float *acc, const float *d, size_t n)
{
    GRID_STRIDE(i, n) acc[i] = gx_add(acc[i], d[i]);
}

size_t gpu_host_decode_add(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body, size_t len,
                           float *acc, size_t n)
{
    float *tmp = (float *)malloc((n ? n : 1) * sizeof(float));
    if (!tmp) return GC_ERR(ALLOC);
    for (size_t i = 0; i < n; i++) tmp[i] = -0.0f;
    size_t r = gc_decode_add(body - GC_HEADER_SIZE, GC_HEADER_SIZE + len, tmp, n, NULL);
    if (!gc_is_error(r) && n) {
        float *d = (float *)scratch_get(ctx, s, n * sizeof(float));
        if (!d) {
            r = GC_ERR(ALLOC);
        } else if (cudaMemcpyAsync(d, tmp, n * sizeof(float), cudaMemcpyHostToDevice, ctx->stream)
                   != cudaSuccess) {
            r = GC_ERR(GENERIC);
        } else {
            k_add<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(acc, d, n);
            r = sync_status(ctx);  /* tmp is freed below */
        }
    }
    free(tmp);
    return r;
}

/* ---- non-finite input (codecs/payload.c, GC_HF_NONFINITE) -----------------
 * One flag pass per encode; an overflow step (rare) is encoded by the CPU
 * code on a host copy without the residual, so the payload is payload.c's
 * byte for byte and the residual keeps no inf or NaN. */

__global__ void k_any_nonfinite(const float *g, size_t n, unsigned *flag)
{
    GRID_STRIDE(i, n) if ((fbits(g[i]) & 0x7F800000u) == 0x7F800000u) *flag = 1u;
}

/* 1 when g (device) holds inf or NaN, 0 when not, or a gc error. */
static size_t device_nonfinite(gcmpi_gpu_ctx *ctx, const float *g, size_t n)
{
    if (n == 0) return 0;
    size_t r = flag_clear(ctx);
    if (gc_is_error(r)) return r;
    k_any_nonfinite<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(g, n, ctx->flag);
    unsigned any = 0;
    r = fetch(ctx, &any, ctx->flag, sizeof any);
    return gc_is_error(r) ? r : (size_t)(any != 0);
}

/* The flagged payload of g (device) into dst (host or device). */
static size_t encode_nonfinite_on_host(gcmpi_gpu_ctx *ctx, const gc_codec *c, const float *g,
                                       size_t n, const gc_params *p, uint64_t seed, void *dst,
                                       size_t cap, int dst_dev)
{
    float *host = (float *)malloc(n * sizeof(float));
    uint8_t *out = dst_dev ? (uint8_t *)malloc(cap) : (uint8_t *)dst;
    size_t r = GC_ERR(ALLOC);
    if (host && out) {
        r = fetch(ctx, host, g, n * sizeof(float));
        if (!gc_is_error(r)) r = gc_encode(c, host, NULL, n, p, seed, out, cap, NULL);
        if (!gc_is_error(r) && dst_dev) {
            size_t done = cudaMemcpyAsync(dst, out, r, cudaMemcpyHostToDevice, ctx->stream)
                                  == cudaSuccess ? sync_status(ctx) : GC_ERR(GENERIC);
            if (gc_is_error(done)) r = done;
        }
    }
    free(host);
    if (dst_dev) free(out);
    return r;
}

/* ---- the payload ------------------------------------------------------------ */

/* payload.c write_header: the one place libgcmpi_gpu writes a header. */
static void write_header(uint8_t *d, unsigned id, unsigned flags, uint64_t n, uint64_t length,
                         uint32_t crc)
{
    memset(d, 0, GC_HEADER_SIZE);
    d[0] = 'G';
    d[1] = 'C';
    d[2] = GC_FORMAT_VERSION;
    d[3] = (uint8_t)id;
    d[4] = (uint8_t)flags;
    put_u64(d + 8, n);
    put_u64(d + 16, length);
    put_u32(d + 24, crc);
}

extern "C" size_t gcmpi_gpu_encode(gcmpi_gpu_ctx *ctx, const gc_codec *c, const float *g,
                                   float *residual, size_t n, const gc_params *p,
                                   uint64_t seed, void *dst, size_t cap)
{
    if (!c) return GC_ERR(UNKNOWN_CODEC);
    if (gc_is_error(gc_params_check(c, p, NULL, 0))) return GC_ERR(PARAM);
    const unsigned id = gc_codec_id(c);
    const gpu_codec *gc = gpu_codec_for(id);
    if (!gc || p->zstd_level > 0) return GC_ERR(UNSUPPORTED);
    if (!ctx) return GC_ERR(GENERIC);
    if (n > 0 && (!gcmpi_gpu_is_device_pointer(g)
                  || (residual && !gcmpi_gpu_is_device_pointer(residual))))
        return GC_ERR(PARAM);
    const size_t bound = gc_bound(c, n, p);
    if (gc_is_error(bound)) return bound;
    if (!dst || cap < bound) return GC_ERR(DST_TOO_SMALL);
    const int dst_dev = gcmpi_gpu_is_device_pointer(dst);
    const size_t nonfinite = device_nonfinite(ctx, g, n);
    if (gc_is_error(nonfinite)) return nonfinite;
    if (nonfinite) return encode_nonfinite_on_host(ctx, c, g, n, p, seed, dst, cap, dst_dev);

    scratch s;
    memset(&s, 0, sizeof s);
    uint8_t *stage = (uint8_t *)scratch_get(ctx, &s, bound - GC_HEADER_SIZE);
    uint8_t *host_body = NULL;
    size_t r, body = 0;
    uint8_t hdr[GC_HEADER_SIZE];
    unsigned flags = 0;
    uint32_t crc = 0;
    if (!stage) { r = GC_ERR(ALLOC); goto out; }
    r = gc->encode(ctx, &s, g, residual, n, p, seed, stage, bound - GC_HEADER_SIZE);
    if (gc_is_error(r)) goto out;
    body = r;
    if (!dst_dev) {
        host_body = (uint8_t *)dst + GC_HEADER_SIZE;
    } else if (p->flags & GC_PF_CRC) {
        host_body = (uint8_t *)malloc(body ? body : 1);
        if (!host_body) { r = GC_ERR(ALLOC); goto out; }
    }
    if (host_body && body
        && cudaMemcpyAsync(host_body, stage, body, cudaMemcpyDeviceToHost, ctx->stream) != cudaSuccess) {
        r = GC_ERR(GENERIC);
        goto out;
    }
    if (dst_dev && body
        && cudaMemcpyAsync((uint8_t *)dst + GC_HEADER_SIZE, stage, body, cudaMemcpyDeviceToDevice,
                           ctx->stream) != cudaSuccess) {
        r = GC_ERR(GENERIC);
        goto out;
    }
    r = sync_status(ctx);
    if (gc_is_error(r)) goto out;
    if (p->flags & GC_PF_CRC) {
        flags |= GC_HF_CRC;
        crc = gc_crc32c(0, host_body, body);
    }
    write_header(hdr, id, flags, n, GC_HEADER_SIZE + body, crc);
    if (dst_dev) {
        if (cudaMemcpyAsync(dst, hdr, sizeof hdr, cudaMemcpyHostToDevice, ctx->stream) != cudaSuccess) {
            r = GC_ERR(GENERIC);
            goto out;
        }
        r = sync_status(ctx);
        if (gc_is_error(r)) goto out;
    } else {
        memcpy(dst, hdr, sizeof hdr);
    }
    r = GC_HEADER_SIZE + body;
out:
    if (dst_dev) free(host_body);
    scratch_release(ctx, &s);
    size_t done = sync_status(ctx);
    return gc_is_error(r) ? r : (gc_is_error(done) ? done : r);
}

/* ---- decode ----------------------------------------------------------------- */

extern "C" size_t gcmpi_gpu_decode_add(gcmpi_gpu_ctx *ctx, const void *src, size_t len,
                                       float *acc, size_t n)
{
    if (n > 0 && !acc) return GC_ERR(GENERIC);
    gc_payload_info info;
    size_t r = gc_payload_info_get(src, len, &info);
    if (gc_is_error(r)) return r;
    if (info.n != (uint64_t)n) return GC_ERR(SIZE_MISMATCH);
    const uint8_t *b = (const uint8_t *)src + GC_HEADER_SIZE;
    const size_t blen = (size_t)info.length - GC_HEADER_SIZE;
    if ((info.flags & GC_HF_CRC) && gc_crc32c(0, b, blen) != get_u32((const uint8_t *)src + 24))
        return GC_ERR(CHECKSUM);
    const gpu_codec *gc = gpu_codec_for(info.codec_id);
    if (!gc || (info.flags & GC_HF_ZSTD)) return GC_ERR(UNSUPPORTED);
    if (!ctx) return GC_ERR(GENERIC);
    if (n > 0 && !gcmpi_gpu_is_device_pointer(acc)) return GC_ERR(PARAM);

    scratch s;
    memset(&s, 0, sizeof s);
    /* A flagged payload (non-finite input) is payload.c's: decoded on the host. */
    if (info.flags & GC_HF_NONFINITE) r = gpu_host_decode_add(ctx, &s, b, blen, acc, n);
    else r = gc->decode_add(ctx, &s, b, blen, acc, n);
    scratch_release(ctx, &s);
    size_t done = sync_status(ctx);
    return gc_is_error(r) ? r : (gc_is_error(done) ? done : 0);
}
