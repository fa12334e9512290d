/* gpu_sparse.cu — the sparse body on the device (gpu_sparse.cuh), byte for
 * byte the one codecs/sparse_index.c writes. The delta coding is sized per
 * block of 128 indices (one CUDA block each, a thread per index: width from
 * the OR of its deltas), a prefix scan places the blocks, and each CUDA
 * block then writes its block's bits LSB first; the bitmap is set with atomic ORs on aligned words and
 * copied behind the head. */
#include "gpu_sparse.cuh"

#include "gpu_scan.cuh"

__device__ static inline unsigned bit_width(uint32_t x) { return x ? 32u - (unsigned)__clz((int)x) : 0u; }

/* Delta blocks are coded by one CUDA block each, one thread per index
 * (SPARSE_BLOCK threads): a serial thread per block would leave the GPU
 * nearly idle (k = 1.7e5 indices is 1311 blocks) and latency bound on 128
 * dependent steps. */

/* This thread's delta within delta block b (0 past the end), and the
 * block's width (OR of its deltas, through *orw in shared memory). */
__device__ static inline uint32_t block_delta(const uint32_t *idx, size_t k, size_t b,
                                              unsigned *orw, unsigned *w)
{
    const size_t j = b * SPARSE_BLOCK + threadIdx.x;
    if (threadIdx.x == 0) *orw = 0;
    __syncthreads();
    const uint32_t d = j < k ? idx[j] - (j ? idx[j - 1] : 0) : 0;
    if (d) atomicOr(orw, d);
    __syncthreads();
    *w = bit_width(*orw);
    __syncthreads();  /* *orw is cleared again for the next block */
    return d;
}

/* Bytes of each delta block: the width byte and its bits, padded. */
__global__ void k_delta_sizes_sync(const uint32_t *idx, size_t k, size_t nblk, uint64_t *bytes)
{
    __shared__ unsigned orw;
    for (size_t b = blockIdx.x; b < nblk; b += gridDim.x) {
        unsigned w;
        (void)block_delta(idx, k, b, &orw, &w);
        const size_t s = b * SPARSE_BLOCK, cnt = k - s < SPARSE_BLOCK ? k - s : SPARSE_BLOCK;
        if (threadIdx.x == 0) bytes[b] = 1 + (cnt * w + 7) / 8;
    }
}

/* Block b at ix + off[b]: the width, then the deltas LSB first, the last
 * byte zero padded (gc_bitw). Delta j sits at bit j * w of the block's
 * bits, assembled in shared words by atomic ORs, then stored bytewise
 * (the body has no alignment). */
__global__ void k_delta_write_sync(const uint32_t *idx, size_t k, size_t nblk, const uint64_t *off,
                                   uint8_t *ix)
{
    __shared__ unsigned orw;
    __shared__ unsigned words[SPARSE_BLOCK + 1];  /* 128 deltas of <= 32 bits */
    for (size_t b = blockIdx.x; b < nblk; b += gridDim.x) {
        for (unsigned q = threadIdx.x; q < SPARSE_BLOCK + 1; q += blockDim.x) words[q] = 0;
        unsigned w;
        const uint32_t d = block_delta(idx, k, b, &orw, &w);  /* its barriers order the clear */
        const size_t s = b * SPARSE_BLOCK, cnt = k - s < SPARSE_BLOCK ? k - s : SPARSE_BLOCK;
        if (d) {
            const unsigned bit = threadIdx.x * w, sh = bit & 31u;
            atomicOr(&words[bit >> 5], d << sh);
            if (sh + w > 32u) atomicOr(&words[(bit >> 5) + 1], d >> (32u - sh));
        }
        __syncthreads();
        uint8_t *out = ix + off[b];
        if (threadIdx.x == 0) out[0] = (uint8_t)w;
        const size_t nbytes = (cnt * w + 7) / 8;
        for (size_t q = threadIdx.x; q < nbytes; q += blockDim.x)
            out[1 + q] = (uint8_t)(words[q >> 2] >> (8u * (q & 3u)));
        __syncthreads();  /* words are cleared again for the next block */
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

static inline unsigned delta_blocks(size_t nblk)
{
    return nblk < 65535u * 16u ? (unsigned)(nblk ? nblk : 1) : 65535u * 16u;
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
        k_delta_sizes_sync<<<delta_blocks(nblk), SPARSE_BLOCK, 0, st>>>(idx, k, nblk, off);
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
        k_delta_write_sync<<<delta_blocks(nblk), SPARSE_BLOCK, 0, st>>>(idx, k, nblk, off,
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
