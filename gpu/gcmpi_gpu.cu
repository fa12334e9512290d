/* gcmpi_gpu.cu — the public API of libgcmpi_gpu (gcmpi_gpu.h): context,
 * memory, and gcmpi_gpu_encode / gcmpi_gpu_decode_add, which reach each
 * codec's kernels through the table of gpu_codecs.cu and write the payload
 * header (write_header, the one place it is written). The codecs'
 * kernels are in gpu/codec_NAME.cu.
 *
 * A device dst gets the body written in place behind the header (a
 * staging buffer from the context's pool only when dst + GC_HEADER_SIZE is
 * not 16-byte aligned); the header is written on the host (with gc_crc32c
 * when the CRC flag is asked for) and copied in with one small copy. A
 * host dst gets the body staged on the device and copied over. Layouts, rounding and summation orders mirror
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

/* One page-locked block: the non-finite word, then the header (at 16).
 * Mapped, so kernels set the word where the host reads it after its wait:
 * no clearing and no copy queued per encode. */
#define HOST_WORDS_BYTES (16 + GC_HEADER_SIZE)

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
        || cudaHostAlloc((void **)&ctx->host_word, HOST_WORDS_BYTES, cudaHostAllocMapped)
               != cudaSuccess
        || cudaHostGetDevicePointer((void **)&ctx->host_word_dev, ctx->host_word, 0) != cudaSuccess
        || cudaStreamSynchronize(ctx->stream) != cudaSuccess)
        goto fail;
    ctx->host_hdr = (uint8_t *)ctx->host_word + 16;
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
    if (ctx->host_word) (void)cudaFreeHost(ctx->host_word);
    free(ctx->shadow.host);
    free(ctx->host_buf);
    (void)cudaGetLastError();
    free(ctx);
}

extern "C" void gcmpi_gpu_set_width_policy(gcmpi_gpu_ctx *ctx, const gc_width_policy *p)
{
    if (!ctx) return;
    ctx->has_width_policy = p && p->choose;
    if (ctx->has_width_policy) ctx->width_policy = *p;
    else memset(&ctx->width_policy, 0, sizeof ctx->width_policy);
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
    /* A device payload's shadow holds only its head so far. */
    if (shadow_device(ctx, body, len)) {
        size_t f = shadow_fill(ctx, (size_t)(body - ctx->shadow.host) + len);
        if (gc_is_error(f)) return f;
    }
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

/* 16 bytes of g read as one load where g is 16-byte aligned. */
struct alignas(16) u32x4 { uint32_t a, b, c, d; };

/* *flag = 1 when g[0..n) holds inf or NaN; the first n / 4 * 4 elements
 * as 16-byte loads when vec. */
__global__ void k_any_nonfinite(const float *g, size_t n, int vec, unsigned *flag)
{
    const size_t nv = vec ? n / 4 : 0;
    const u32x4 *v = (const u32x4 *)g;
    unsigned bad = 0;
    GRID_STRIDE(i, nv) {
        const u32x4 x = v[i];
        bad |= bits_nonfinite(x.a) | bits_nonfinite(x.b) | bits_nonfinite(x.c) | bits_nonfinite(x.d);
    }
    GRID_STRIDE(i, n - 4 * nv) bad |= bits_nonfinite(fbits(g[4 * nv + i]));
    if (bad) *flag = 1u;
}

/* Clear the non-finite word; only while nothing queued may set it. */
static void nonfinite_reset(gcmpi_gpu_ctx *ctx) { *(volatile unsigned *)ctx->host_word = 0; }

/* Whether the word was set; valid once the stream is synchronised. */
static int nonfinite_seen(const gcmpi_gpu_ctx *ctx) { return *(volatile unsigned *)ctx->host_word != 0; }

/* Queue the check of g (device) into the word. 0 or an error. */
static size_t nonfinite_queue(gcmpi_gpu_ctx *ctx, const float *g, size_t n)
{
    if (n == 0) return 0;
    const int vec = ((uintptr_t)g & 15u) == 0;
    const unsigned blocks = blocks_for(vec ? (n + 3) / 4 : n, GPU_THREADS);
    k_any_nonfinite<<<blocks, GPU_THREADS, 0, ctx->stream>>>(g, n, vec, ctx->host_word_dev);
    if (cudaGetLastError() == cudaSuccess) return 0;
    return GC_ERR(GENERIC);
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

/* Queue a copy and note a failure in *r (which keeps the first error). */
/* Steady path (finite input, device dst, no CRC): the non-finite check and
 * the codec's kernels queued back to back, the check folded into the
 * codec's own read of g where it offers (scratch.check; with a residual
 * the check is a pass waited for first: the residual must never take inf
 * or NaN), the body written in place, the header copied in, one wait at
 * the end; the check's result is read then, and a flagged input is
 * encoded again on the host. */
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
    const int crc_on = (p->flags & GC_PF_CRC) != 0;
    const int check_first = residual != NULL || !gpu_codec_encodes_any_input(id, p);

    /* Every kernel that may set the word is waited for by the end of the
     * previous call, so it is cleared here for this one. */
    nonfinite_reset(ctx);
    size_t r = 0;
    if (check_first) {
        r = nonfinite_queue(ctx, g, n);
        if (!gc_is_error(r)) r = sync_status(ctx);
        if (!gc_is_error(r) && nonfinite_seen(ctx))
            return encode_nonfinite_on_host(ctx, c, g, n, p, seed, dst, cap, dst_dev);
    }
    if (gc_is_error(r)) return r;

    scratch s;
    memset(&s, 0, sizeof s);
    if (!check_first) s.check = ctx->host_word_dev;
    uint8_t *in_place = (uint8_t *)dst + GC_HEADER_SIZE;
    const int direct = dst_dev && ((uintptr_t)in_place & 15u) == 0;
    uint8_t *body_dev = direct ? in_place : (uint8_t *)scratch_get(ctx, &s, bound - GC_HEADER_SIZE);
    uint8_t *host_body = NULL;  /* the body on the host, for a host dst or the CRC */
    uint8_t *hdr = ctx->host_hdr;  /* page-locked: the copy to dst is a plain DMA */
    size_t body = 0;
    int synced = 0;  /* the stream was waited for after the last queued work */
    if (!body_dev) { r = GC_ERR(ALLOC); goto out; }
    r = gc->encode(ctx, &s, g, residual, n, p, seed, body_dev, bound - GC_HEADER_SIZE);
    if (gc_is_error(r)) goto out;
    body = r;
    r = check_first || s.checked ? 0 : nonfinite_queue(ctx, g, n);
    if (gc_is_error(r)) goto out;
    if (!dst_dev) host_body = in_place;
    else if (crc_on && !(host_body = (uint8_t *)malloc(body ? body : 1))) r = GC_ERR(ALLOC);
    if (host_body) queue_copy(ctx, host_body, body_dev, body, cudaMemcpyDeviceToHost, &r);
    if (!direct && dst_dev) queue_copy(ctx, in_place, body_dev, body, cudaMemcpyDeviceToDevice, &r);
    if (dst_dev && !crc_on) {
        /* Known now: the header goes in before the one wait. */
        write_header(hdr, id, 0, n, GC_HEADER_SIZE + body, 0);
        queue_copy(ctx, dst, hdr, GC_HEADER_SIZE, cudaMemcpyHostToDevice, &r);
    }
    if (gc_is_error(r)) goto out;
    scratch_release(ctx, &s);  /* stream-ordered: after the copies above */
    r = sync_status(ctx);
    synced = 1;
    if (gc_is_error(r) || nonfinite_seen(ctx)) goto out;
    if (crc_on || !dst_dev) {
        const uint32_t crc = crc_on ? gc_crc32c(0, host_body, body) : 0;
        write_header(hdr, id, crc_on ? GC_HF_CRC : 0, n, GC_HEADER_SIZE + body, crc);
        if (dst_dev) {
            queue_copy(ctx, dst, hdr, GC_HEADER_SIZE, cudaMemcpyHostToDevice, &r);
            if (!gc_is_error(r)) r = sync_status(ctx);
        } else {
            memcpy(dst, hdr, GC_HEADER_SIZE);
        }
    }
out:
    if (dst_dev) free(host_body);
    scratch_release(ctx, &s);
    const size_t done = synced ? 0 : sync_status(ctx);
    if (!gc_is_error(done) && nonfinite_seen(ctx))  /* flagged beside the encode: redo */
        return encode_nonfinite_on_host(ctx, c, g, n, p, seed, dst, cap, dst_dev);
    if (gc_is_error(r)) return r;
    return gc_is_error(done) ? done : GC_HEADER_SIZE + body;
}

/* ---- decode ----------------------------------------------------------------- */

/* The context's shadow (gpu_shadow) of the payload src[0..len) in device
 * memory: header and the first bytes of the body fetched with one copy,
 * then (once the header gave the payload's length) host room for all of
 * it. Fills *info; 0 or an error. */
static size_t shadow_open(gcmpi_gpu_ctx *ctx, const uint8_t *src, size_t len,
                          gc_payload_info *info)
{
    /* Covers every fixed host_head of gpu_codecs.cu in the same copy. */
    uint8_t first[GC_HEADER_SIZE + 32];
    const size_t got = len < sizeof first ? len : sizeof first;
    size_t r = fetch(ctx, first, src, got);
    if (gc_is_error(r)) return r;
    r = gc_payload_info_get(first, len, info);
    if (gc_is_error(r)) return r;
    gpu_shadow *sh = &ctx->shadow;
    const size_t total = (size_t)info->length;
    if (sh->cap < total) {
        /* Grown to the largest payload seen (with room for payloads that
         * vary a little) and kept. Pageable: its pages are only touched
         * where the host reads, so a codec that reads a few fields costs
         * no memory for the rest. */
        const size_t cap = total + total / 4;
        free(sh->host);
        sh->cap = 0;
        if (!(sh->host = (uint8_t *)malloc(cap))) return GC_ERR(ALLOC);
        sh->cap = cap;
    }
    sh->valid = got < total ? got : total;
    memcpy(sh->host, first, sh->valid);
    sh->dev = src;
    sh->len = total;
    return 0;
}

/* src[0..len): a payload in host memory, or in device memory (then decoded
 * through the context's shadow, see gpu_shadow). */
extern "C" size_t gcmpi_gpu_decode_add(gcmpi_gpu_ctx *ctx, const void *src, size_t len,
                                       float *acc, size_t n)
{
    if (n > 0 && !acc) return GC_ERR(GENERIC);
    const int src_dev = gcmpi_gpu_is_device_pointer(src);
    if (src_dev && !ctx) return GC_ERR(GENERIC);
    gc_payload_info info;
    size_t r = src_dev ? shadow_open(ctx, (const uint8_t *)src, len, &info)
                       : gc_payload_info_get(src, len, &info);
    if (gc_is_error(r)) goto done;
    {
        const uint8_t *pay = src_dev ? ctx->shadow.host : (const uint8_t *)src;
        const uint8_t *b = pay + GC_HEADER_SIZE;
        const size_t blen = (size_t)info.length - GC_HEADER_SIZE;
        const gpu_codec *gc = gpu_codec_for(info.codec_id);
        if (info.n != (uint64_t)n) { r = GC_ERR(SIZE_MISMATCH); goto done; }
        if (src_dev) {
            /* The CRC needs the whole body here; else what the codec reads. */
            const size_t head = (info.flags & GC_HF_CRC) ? GPU_HOST_BODY_ALL
                                                         : gpu_codec_host_head(info.codec_id);
            r = shadow_fill(ctx, head > blen ? info.length : GC_HEADER_SIZE + head);
            if (gc_is_error(r)) goto done;
        }
        if ((info.flags & GC_HF_CRC) && gc_crc32c(0, b, blen) != get_u32(pay + 24)) {
            r = GC_ERR(CHECKSUM);
            goto done;
        }
        if (!gc || (info.flags & GC_HF_ZSTD)) { r = GC_ERR(UNSUPPORTED); goto done; }
        if (!ctx) { r = GC_ERR(GENERIC); goto done; }
        if (n > 0 && !gcmpi_gpu_is_device_pointer(acc)) { r = GC_ERR(PARAM); goto done; }

        scratch s;
        memset(&s, 0, sizeof s);
        /* A flagged payload (non-finite input) is payload.c's: decoded on the host. */
        if (info.flags & GC_HF_NONFINITE) r = gpu_host_decode_add(ctx, &s, b, blen, acc, n);
        else r = gc->decode_add(ctx, &s, b, blen, acc, n);
        scratch_release(ctx, &s);
        size_t synced = sync_status(ctx);
        if (!gc_is_error(r)) r = gc_is_error(synced) ? synced : 0;
    }
done:
    if (ctx) ctx->shadow.dev = NULL;  /* no device payload outside this call */
    return r;
}
