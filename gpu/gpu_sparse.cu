/* gpu_sparse.cu — the sparse body on the device (gpu_sparse.cuh), byte for
 * byte the one codecs/sparse_index.c writes. The delta coding is sized per
 * block of 128 indices (one thread each: width from the OR of its deltas),
 * a prefix scan places the blocks, and each thread then writes its block's
 * bits LSB first; the bitmap is set with atomic ORs on aligned words and
 * copied behind the head. */
#include "gpu_sparse.cuh"

#include "gpu_scan.cuh"

__device__ static inline unsigned bit_width(uint32_t x) { return x ? 32u - (unsigned)__clz((int)x) : 0u; }

__device__ static inline unsigned block_width(const uint32_t *idx, size_t start, size_t cnt)
{
    uint32_t prev = start ? idx[start - 1] : 0, bits = 0;
    for (size_t j = start; j < start + cnt; j++) {
        bits |= idx[j] - prev;
        prev = idx[j];
    }
    return bit_width(bits);
}

/* Bytes of each delta block: the width byte and its bits, padded. */
__global__ void k_delta_sizes(const uint32_t *idx, size_t k, size_t nblk, uint64_t *bytes)
{
    GRID_STRIDE(b, nblk) {
        const size_t s = b * SPARSE_BLOCK, cnt = k - s < SPARSE_BLOCK ? k - s : SPARSE_BLOCK;
        bytes[b] = 1 + (cnt * block_width(idx, s, cnt) + 7) / 8;
    }
}

/* Block b at ix + off[b]: the width, then the deltas LSB first, the last
 * byte zero padded (gc_bitw). */
__global__ void k_delta_write(const uint32_t *idx, size_t k, size_t nblk, const uint64_t *off,
                              uint8_t *ix)
{
    GRID_STRIDE(b, nblk) {
        const size_t s = b * SPARSE_BLOCK, cnt = k - s < SPARSE_BLOCK ? k - s : SPARSE_BLOCK;
        const unsigned w = block_width(idx, s, cnt);
        uint8_t *out = ix + off[b];
        *out++ = (uint8_t)w;
        uint64_t acc = 0;
        unsigned nacc = 0;
        uint32_t prev = s ? idx[s - 1] : 0;
        for (size_t j = s; j < s + cnt; j++) {
            acc |= (uint64_t)(idx[j] - prev) << nacc;
            nacc += w;
            prev = idx[j];
            for (; nacc >= 8; nacc -= 8, acc >>= 8) *out++ = (uint8_t)acc;
        }
        if (nacc) *out = (uint8_t)acc;
    }
}

__global__ void k_bitmap_set(const uint32_t *idx, size_t k, unsigned *words)
{
    GRID_STRIDE(j, k) atomicOr(&words[idx[j] >> 5], 1u << (idx[j] & 31u));
}

__global__ void k_sparse_head(uint8_t *body, uint32_t k, unsigned mode)
{
    st_u32(body, k);
    body[4] = (uint8_t)mode;
}

__global__ void k_sparse_values(const uint32_t *idx, size_t k, const float *v, float *r,
                                uint8_t *vals)
{
    GRID_STRIDE(j, k) {
        st_f32(vals + 4 * j, v[idx[j]]);
        if (r) r[idx[j]] = 0.0f;
    }
}

size_t gpu_sparse_index_write(gcmpi_gpu_ctx *ctx, scratch *s, const uint32_t *idx, size_t k,
                              size_t n, uint8_t *body, size_t cap)
{
    cudaStream_t st = ctx->stream;
    const size_t nblk = (k + SPARSE_BLOCK - 1) / SPARSE_BLOCK, mbytes = (n + 7) / 8;
    uint64_t *off = (uint64_t *)scratch_get(ctx, s, (nblk + 1) * sizeof(uint64_t));
    if (!off) return GC_ERR(ALLOC);
    uint64_t dbytes = 0;
    if (nblk) {
        k_delta_sizes<<<blocks_for(nblk, GPU_THREADS), GPU_THREADS, 0, st>>>(idx, k, nblk, off);
        gpu_scan_u64(ctx, off, nblk, off + nblk);
        size_t e = fetch(ctx, &dbytes, off + nblk, sizeof dbytes);
        if (gc_is_error(e)) return e;
    }
    const unsigned mode = mbytes < dbytes ? 1u : 0u;
    const size_t ibytes = mode ? mbytes : (size_t)dbytes;
    if (SPARSE_HEAD + ibytes > cap) return GC_ERR(DST_TOO_SMALL);
    k_sparse_head<<<1, 1, 0, st>>>(body, (uint32_t)k, mode);
    if (mode) {
        unsigned *words = (unsigned *)scratch_get(ctx, s, (n + 31) / 32 * 4);
        if (!words || cudaMemsetAsync(words, 0, (n + 31) / 32 * 4, st) != cudaSuccess)
            return words ? GC_ERR(GENERIC) : GC_ERR(ALLOC);
        k_bitmap_set<<<blocks_for(k, GPU_THREADS), GPU_THREADS, 0, st>>>(idx, k, words);
        if (cudaMemcpyAsync(body + SPARSE_HEAD, words, mbytes, cudaMemcpyDeviceToDevice, st)
            != cudaSuccess)
            return GC_ERR(GENERIC);
    } else if (nblk) {
        k_delta_write<<<blocks_for(nblk, GPU_THREADS), GPU_THREADS, 0, st>>>(idx, k, nblk, off,
                                                                             body + SPARSE_HEAD);
    }
    return SPARSE_HEAD + ibytes;
}

size_t gpu_sparse_body_write(gcmpi_gpu_ctx *ctx, scratch *s, const uint32_t *idx, size_t k,
                             const float *v, float *r, size_t n, uint8_t *body, size_t cap)
{
    size_t head = gpu_sparse_index_write(ctx, s, idx, k, n, body, cap);
    if (gc_is_error(head)) return head;
    if (head + 4 * k > cap) return GC_ERR(DST_TOO_SMALL);
    if (k)
        k_sparse_values<<<blocks_for(k, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(
            idx, k, v, r, body + head);
    return head + 4 * k;
}

/* acc[idx[j]] += value j (values little-endian floats, any alignment). */
__global__ void k_sparse_scatter_add(const uint32_t *idx, size_t k, const uint8_t *vals, float *acc)
{
    GRID_STRIDE(j, k) {
        const uint8_t *p = vals + 4 * j;
        const float x = bitsf((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16
                              | (uint32_t)p[3] << 24);
        acc[idx[j]] = gx_add(acc[idx[j]], x);
    }
}

size_t gpu_sparse_decode_add(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body, size_t len,
                             float *acc, size_t n)
{
    uint32_t *idx = (uint32_t *)malloc((n ? n : 1) * sizeof(uint32_t));
    if (!idx) return GC_ERR(ALLOC);
    size_t k = 0, vals_off = 0;
    size_t r = gcmpi_gpu_host_sparse_decode(body, len, n, idx, &k, &vals_off);
    if (!gc_is_error(r) && k) {
        uint32_t *didx = (uint32_t *)scratch_get(ctx, s, k * sizeof(uint32_t));
        uint8_t *dvals = (uint8_t *)scratch_get(ctx, s, 4 * k);
        if (!didx || !dvals) {
            r = GC_ERR(ALLOC);
        } else if (cudaMemcpyAsync(didx, idx, k * sizeof(uint32_t), cudaMemcpyHostToDevice,
                                   ctx->stream) != cudaSuccess
                   || cudaMemcpyAsync(dvals, body + vals_off, 4 * k, cudaMemcpyHostToDevice,
                                      ctx->stream) != cudaSuccess) {
            r = GC_ERR(GENERIC);
        } else {
            k_sparse_scatter_add<<<blocks_for(k, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(
                didx, k, dvals, acc);
            r = sync_status(ctx);  /* idx is freed below */
        }
    }
    free(idx);
    return r;
}
