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

/* Delta block b of the index section ix (at off[b]) read on the device,
 * one thread per index, with apply_delta's checks (sparse_index.c): zero
 * padding bits, every delta after the first index > 0. d[j] = delta j,
 * sums[b] = the block's sum of deltas. */
__global__ void k_delta_read_sync(const uint8_t *ix, const uint64_t *off, size_t k, size_t nblk,
                                  uint32_t *d, uint64_t *sums, unsigned *bad)
{
    __shared__ uint64_t buf[SPARSE_BLOCK];
    for (size_t b = blockIdx.x; b < nblk; b += gridDim.x) {
        const uint8_t *blk = ix + off[b];
        const unsigned w = blk[0];
        const size_t s = b * SPARSE_BLOCK, cnt = k - s < SPARSE_BLOCK ? k - s : SPARSE_BLOCK;
        const size_t bits = cnt * w, nbytes = (bits + 7) / 8;
        const uint8_t *p = blk + 1;
        uint64_t dv = 0;
        if (threadIdx.x < cnt && w) {
            const size_t bit = (size_t)threadIdx.x * w, first = bit >> 3;
            uint64_t word = 0;  /* w <= 32 bits from bit & 7 on: at most 5 bytes */
            for (size_t q = first; q < nbytes && q < first + 5; q++)
                word |= (uint64_t)p[q] << (8 * (q - first));
            dv = (word >> (bit & 7)) & ((UINT64_C(1) << w) - 1);
        }
        if (threadIdx.x < cnt) {
            if (s + threadIdx.x > 0 && dv == 0) *bad = 1u;  /* not increasing */
            d[s + threadIdx.x] = (uint32_t)dv;
        }
        if (threadIdx.x == 0 && (bits & 7) && (p[nbytes - 1] >> (bits & 7)) != 0) *bad = 1u;
        const uint64_t upto = gpu_block_inclusive_sum(dv, buf);
        if (threadIdx.x == blockDim.x - 1) sums[b] = upto;
    }
}

/* idx[j] = base[b] + the deltas of block b up to j (d read in place);
 * an index past n sets *bad. */
__global__ void k_delta_index_sync(const uint64_t *base, size_t k, size_t nblk, size_t n,
                                   uint32_t *idx, unsigned *bad)
{
    __shared__ uint64_t buf[SPARSE_BLOCK];
    for (size_t b = blockIdx.x; b < nblk; b += gridDim.x) {
        const size_t j = b * SPARSE_BLOCK + threadIdx.x;
        const uint64_t dv = j < k ? idx[j] : 0;
        const uint64_t i = base[b] + gpu_block_inclusive_sum(dv, buf);
        if (j < k) {
            if (i >= n) *bad = 1u;
            else idx[j] = (uint32_t)i;
        }
    }
}

/* didx[0..k) = the delta-coded indices of body (host bytes; dbody the
 * same body on the device), decoded and checked on the device. Waits. */
static size_t delta_decode_device(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body,
                                  const uint8_t *dbody, size_t k, size_t n, uint32_t *didx)
{
    const size_t nblk = (k + SPARSE_BLOCK - 1) / SPARSE_BLOCK;
    uint64_t *off = (uint64_t *)malloc(nblk * sizeof(uint64_t));
    uint64_t *doff = (uint64_t *)scratch_get(ctx, s, (2 * nblk + 1) * sizeof(uint64_t));
    size_t r = off && doff ? 0 : GC_ERR(ALLOC);
    if (!gc_is_error(r)) {
        /* The widths were checked by gcmpi_gpu_host_sparse_open. */
        const uint8_t *ix = body + SPARSE_HEAD;
        size_t pos = 0;
        for (size_t b = 0; b < nblk; b++) {
            const size_t cnt = k - b * SPARSE_BLOCK < SPARSE_BLOCK ? k - b * SPARSE_BLOCK : SPARSE_BLOCK;
            off[b] = pos;
            pos += 1 + (cnt * ix[pos] + 7) / 8;
        }
        r = flag_clear(ctx);
    }
    if (!gc_is_error(r)
        && cudaMemcpyAsync(doff, off, nblk * sizeof(uint64_t), cudaMemcpyHostToDevice, ctx->stream)
               != cudaSuccess)
        r = GC_ERR(GENERIC);
    if (!gc_is_error(r)) {
        uint64_t *sums = doff + nblk;
        const unsigned grid = delta_blocks(nblk);
        k_delta_read_sync<<<grid, SPARSE_BLOCK, 0, ctx->stream>>>(dbody + SPARSE_HEAD, doff, k, nblk,
                                                                 didx, sums, ctx->flag);
        gpu_scan_u64(ctx, sums, nblk, NULL);
        k_delta_index_sync<<<grid, SPARSE_BLOCK, 0, ctx->stream>>>(sums, k, nblk, n, didx, ctx->flag);
        r = flag_result(ctx);  /* waits: off is freed below */
    }
    free(off);
    return r;
}

/* Up to 64 bits of the bitmap ix[0..nbytes) from byte 8 w (its bit i is
 * index i; any alignment). */
__device__ static inline uint64_t bitmap_word(const uint8_t *ix, size_t nbytes, size_t w)
{
    uint64_t v = 0;
    for (size_t q = 8 * w; q < nbytes && q < 8 * w + 8; q++) v |= (uint64_t)ix[q] << (8 * (q - 8 * w));
    return v;
}

/* count[w] = the set bits of word w; with bad, a bit at an index >= n
 * sets *bad (apply_bitmap's check). */
__global__ void k_bitmap_counts(const uint8_t *ix, size_t n, size_t words, uint64_t *count,
                                unsigned *bad)
{
    const size_t nbytes = (n + 7) / 8;
    GRID_STRIDE(w, words) {
        uint64_t v = bitmap_word(ix, nbytes, w);
        const size_t past = n - 64 * w < 64 ? n - 64 * w : 64;  /* bits below n */
        if (bad && past < 64 && (v >> past)) *bad = 1u;
        count[w] = (uint64_t)__popcll(v);
    }
}

/* *bad when the bitmap holds other than k indices (apply_bitmap: j == k). */
__global__ void k_bitmap_total(const uint64_t *total, size_t k, unsigned *bad)
{
    if (*total != k) *bad = 1u;
}

/* idx[at[w]..] = the indices of word w, ascending (at most k in all). */
__global__ void k_bitmap_indices(const uint8_t *ix, size_t n, size_t words, const uint64_t *at,
                                 size_t k, uint32_t *idx)
{
    const size_t nbytes = (n + 7) / 8;
    GRID_STRIDE(w, words) {
        uint64_t o = at[w];
        for (uint64_t v = bitmap_word(ix, nbytes, w); v && o < k; v &= v - 1)
            idx[o++] = (uint32_t)(64 * w + (unsigned)(__ffsll((long long)v) - 1));
    }
}

size_t gpu_bitmap_indices(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *bits, size_t n,
                          size_t k, uint32_t *idx, unsigned *bad)
{
    const size_t words = (n + 63) / 64;
    uint64_t *count = (uint64_t *)scratch_get(ctx, s, (words + 1) * sizeof(uint64_t));
    if (!count) return GC_ERR(ALLOC);
    cudaStream_t st = ctx->stream;
    k_bitmap_counts<<<blocks_for(words, GPU_THREADS), GPU_THREADS, 0, st>>>(bits, n, words, count, bad);
    gpu_scan_u64(ctx, count, words, count + words);
    if (bad) k_bitmap_total<<<1, 1, 0, st>>>(count + words, k, bad);
    k_bitmap_indices<<<blocks_for(words, GPU_THREADS), GPU_THREADS, 0, st>>>(bits, n, words, count, k, idx);
    return 0;
}

/* didx[0..k) = the bitmap-coded indices of dbody (on the device), checked
 * as apply_bitmap checks them: no index past n, exactly k. Waits. */
static size_t bitmap_decode_device(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *dbody, size_t k,
                                   size_t n, uint32_t *didx)
{
    size_t r = flag_clear(ctx);
    if (!gc_is_error(r)) r = gpu_bitmap_indices(ctx, s, dbody + SPARSE_HEAD, n, k, didx, ctx->flag);
    return gc_is_error(r) ? r : flag_result(ctx);
}

size_t gpu_sparse_indices(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body, size_t len,
                          size_t n, const uint8_t *dbody, size_t *k, uint32_t **didx)
{
    const size_t section = gcmpi_gpu_host_index_open(body, len, n, k);
    if (gc_is_error(section) || *k == 0) return section;
    *didx = (uint32_t *)scratch_get(ctx, s, *k * sizeof(uint32_t));
    if (!*didx) return GC_ERR(ALLOC);
    const size_t r = body[4] == SPARSE_BITMAP_MODE
                         ? bitmap_decode_device(ctx, s, dbody, *k, n, *didx)
                         : delta_decode_device(ctx, s, body, dbody, *k, n, *didx);
    return gc_is_error(r) ? r : section;
}

__global__ void k_sparse_zero(const uint32_t *idx, size_t k, float *x)
{
    GRID_STRIDE(j, k) x[idx[j]] = 0.0f;
}

/* gc_sparse_body_apply on the device: x[i] += the value sent at i, or
 * (zero) x[i] = 0 at every index sent. */
static size_t sparse_apply(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body, size_t len,
                           float *x, size_t n, int zero)
{
    size_t k = 0, vals_off = 0;
    size_t r = gcmpi_gpu_host_sparse_open(body, len, n, &k, &vals_off);
    if (gc_is_error(r) || k == 0) return r;
    const uint8_t *dbody = body_to_device(ctx, s, body, len);
    if (!dbody) return GC_ERR(ALLOC);
    uint32_t *didx = NULL;
    r = gpu_sparse_indices(ctx, s, body, len, n, dbody, &k, &didx);
    if (gc_is_error(r)) return r;
    if (zero)
        k_sparse_zero<<<blocks_for(k, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(didx, k, x);
    else
        k_sparse_scatter_add<<<blocks_for(k, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(
            didx, k, dbody + vals_off, x);
    return sync_status(ctx);
}

size_t gpu_sparse_decode_add(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body, size_t len,
                             float *acc, size_t n)
{
    return sparse_apply(ctx, s, body, len, acc, n, 0);
}

size_t gpu_sparse_zero_sent(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body, size_t len,
                            float *x, size_t n)
{
    return sparse_apply(ctx, s, body, len, x, n, 1);
}

void gpu_zero_at(gcmpi_gpu_ctx *ctx, const uint32_t *idx, size_t k, float *x)
{
    if (k) k_sparse_zero<<<blocks_for(k, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(idx, k, x);
}
