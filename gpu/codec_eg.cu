/* codec_eg.cu — codecs/codec_eg.c on the device: fixed-point quantisation
 * q = round(2^n v) (n from the largest finite |v| unless given), zig-zag,
 * per-bucket order k (the CPU's exact best order over the same sample, one
 * thread per bucket), the order-k Exp-Golomb stream and its sync points
 * (the stream bit of every segment's first k field). The decode runs a
 * thread per segment from its sync point, then gpu_stream_verdict checks
 * the segments in order as codec_eg.c's decoder would (each ends where the
 * next starts; the error the CPU answers first wins), and the decoded
 * integers are added only when the body passed.
 *
 * Passes, queued with one host wait (the stream's length, which the caller
 * needs): the largest |v| (register, then shared, then one global atomic
 * per block: one atomic per element on one word serialises), n computed
 * on the device; quantisation (v -> z, r); orders; code lengths per tile
 * of EG_TILE elements; a scan of the tile lengths; the codes of each tile
 * assembled in shared memory (a block scan places each thread's codes)
 * and stored as whole 64-bit words, atomically only where a word is
 * shared with a neighbouring tile. */
#include "gpu_scan.cuh"
#include "gpu_stream.cuh"

#define EG_HEAD 9
#define EG_N_LIMIT 60
#define EG_AUTO_RANGE_BITS 12
#define EG_K_BITS 5
#define EG_CLAMP 0x1p30f
#define EG_MAX_CODE_BITS 63u
#define EG_K_SAMPLES 64u
#define EG_MAX_ORDER 30u
#define EG_THREADS 256u
#define EG_ITEMS 8u                      /* contiguous elements per thread */
#define EG_TILE (EG_THREADS * EG_ITEMS)
#define EG_MAX_BLOCKS 1024u
/* 32-bit words of one tile's bits: every code at its longest, an order in
 * front of every element (bucket 1), the tile's offset in its first
 * 64-bit word, rounded to whole 64-bit words. */
#define EG_TILE_WORDS ((EG_TILE * (EG_MAX_CODE_BITS + EG_K_BITS) + 63u) / 64u * 2u + 2u)

__device__ static inline unsigned eg_bitlen(uint64_t x) { return x ? 64u - (unsigned)__clzll((long long)x) : 0u; }

/* gc_eg_word: the code of z in stream order, in the low *nbits bits. */
__device__ static inline uint64_t eg_word(uint32_t z, unsigned k, unsigned *nbits)
{
    const uint64_t x = (uint64_t)z + (1ull << k);
    const unsigned h = eg_bitlen(x) - 1u, u = h - k;
    *nbits = u + h + 1;
    return (((x ^ (1ull << h)) << 1) | 1u) << u;
}

__device__ static inline uint32_t zigzag(int32_t q)
{
    return ((uint32_t)q << 1) ^ (uint32_t)-(int32_t)((uint32_t)q >> 31);
}

/* finite_abs_bits of v = g (+ r), max over all (max_abs): per thread,
 * then per block in shared memory, then one atomic per block. */
__global__ void k_eg_maxabs_sync(const float *g, const float *r, size_t n, unsigned *m)
{
    __shared__ unsigned block_max;
    if (threadIdx.x == 0) block_max = 0;
    __syncthreads();
    unsigned mine = 0;
    GRID_STRIDE(i, n) {
        const float v = r ? gx_add(g[i], r[i]) : g[i];
        const uint32_t a = fbits(v) & 0x7FFFFFFFu;
        if (a < 0x7F800000u && a > mine) mine = a;
    }
    if (mine) atomicMax(&block_max, mine);
    __syncthreads();
    if (threadIdx.x == 0 && block_max) atomicMax(m, block_max);
}

/* *e = n: fixed (m NULL), or from the largest finite |v| as codec_eg.c
 * derives it, on the device so the host need not wait for it. */
__global__ void k_eg_exponent(const unsigned *m, int fixed, int *e)
{
    if (!m) {
        *e = fixed;
        return;
    }
    const float mf = bitsf(*m);
    int x = 0;
    if (mf != 0.0f) {
        int ex;
        frexpf(mf, &ex);
        x = EG_AUTO_RANGE_BITS - ex;
        x = x < -EG_N_LIMIT ? -EG_N_LIMIT : x > EG_N_LIMIT ? EG_N_LIMIT : x;
    }
    *e = x;
}

/* quantise(): z = zigzag(round(clamp(v 2^n))), r = v - q 2^-n (2^n and
 * 2^-n are exact for |n| <= EG_N_LIMIT). */
__global__ void k_eg_quant(const float *g, float *r, size_t n, const int *e, uint32_t *z)
{
    const float scale = ldexpf(1.0f, *e), step = ldexpf(1.0f, -*e);
    GRID_STRIDE(i, n) {
        const float v = r ? gx_add(g[i], r[i]) : g[i];
        float x = gx_mul(v, scale);
        x = x < EG_CLAMP ? x : EG_CLAMP;
        x = x > -EG_CLAMP ? x : -EG_CLAMP;
        const int32_t q = __float2int_rn(x);
        if (r) r[i] = gx_sub(v, gx_mul((float)q, step));
        z[i] = zigzag(q);
    }
}

/* best_order over z[0..m) every stride-th element (see codec_eg.c). */
__device__ static unsigned best_order(const uint32_t *z, size_t m, size_t stride)
{
    uint64_t cb[33], cj[33];
    for (unsigned b = 0; b <= 32; b++) cb[b] = cj[b] = 0;
    uint64_t c = 0;
    for (size_t i = 0; i < m; i += stride, c++) {
        const uint64_t v = z[i];
        const unsigned b = eg_bitlen(v);
        cb[b]++;
        cj[eg_bitlen(v ^ ((1ull << b) - 1u))]++;
    }
    uint64_t s = 0;
    for (unsigned b = 0; b <= 32; b++) s += (uint64_t)b * cb[b];
    uint64_t b_at_most = 0, j_at_most = 0, best_bits = ~0ull;
    unsigned best = 0;
    for (unsigned k = 0; k <= EG_MAX_ORDER; k++) {
        j_at_most += cj[k];
        const uint64_t bits = 2 * s + 2 * j_at_most + c * k - c;
        if (bits < best_bits) { best_bits = bits; best = k; }
        b_at_most += cb[k];
        s -= c - b_at_most;
    }
    return best;
}

__global__ void k_eg_orders(const uint32_t *z, size_t n, size_t bucket, size_t nb, int fixed_k,
                            uint8_t *order)
{
    GRID_STRIDE(b, nb) {
        const size_t s = b * bucket, m = bucket_len(n, bucket, b);
        const size_t stride = m >= 2 * EG_K_SAMPLES ? m / EG_K_SAMPLES : 1;
        order[b] = (uint8_t)(fixed_k >= 0 ? (unsigned)fixed_k : best_order(z + s, m, stride));
    }
}

/* OR the nb (<= 63) bits of v into the 32-bit shared words w at bit at. */
__device__ static inline void eg_put_shared(unsigned *w, uint64_t at, uint64_t v, unsigned nb)
{
    const unsigned sh = (unsigned)(at & 31u);
    const size_t q = (size_t)(at >> 5);
    atomicOr(&w[q], (unsigned)(v << sh));
    if (sh + nb > 32u) atomicOr(&w[q + 1], (unsigned)(v >> (32u - sh)));
    if (sh + nb > 64u) atomicOr(&w[q + 2], (unsigned)(v >> (64u - sh)));
}

/* Where a tile's thread writes: shared words w, whose bit 0 is stream bit
 * w_base, from word bit at; and the sync points (segments of seg buckets). */
typedef struct eg_out {
    unsigned *w;
    uint64_t at, w_base;
    uint8_t *sync;
    size_t seg;
} eg_out;

/* The stream bits of elements [lo, lo + EG_ITEMS) (clipped to n): each
 * code, and the 5-bit order in front of each bucket's first element.
 * With out, also ORs them into its shared words and writes the sync point
 * of a segment that starts here. One division per thread, not two per
 * element. */
__device__ static uint64_t eg_thread_bits(const uint32_t *z, size_t n, size_t bucket,
                                          const uint8_t *order, size_t lo, const eg_out *out)
{
    size_t bi = lo / bucket, rem = lo % bucket;
    uint64_t sum = 0;
    for (unsigned q = 0; q < EG_ITEMS && lo + q < n; q++) {
        const unsigned k = order[bi];
        if (rem == 0) {
            if (out) {
                if (gc_sync_at(bi, out->seg))
                    st_u64(out->sync + gc_sync_offset(bi, out->seg), out->w_base + out->at + sum);
                eg_put_shared(out->w, out->at + sum, k, EG_K_BITS);
            }
            sum += EG_K_BITS;
        }
        unsigned nb;
        const uint64_t word = eg_word(z[lo + q], k, &nb);
        if (out) eg_put_shared(out->w, out->at + sum, word, nb);
        sum += nb;
        if (++rem == bucket) {
            rem = 0;
            bi++;
        }
    }
    return sum;
}

/* seg[tile] = the bits of the tile's elements. */
__global__ void k_eg_bits_sync(const uint32_t *z, size_t n, size_t bucket, const uint8_t *order,
                               size_t ntiles, uint64_t *seg)
{
    __shared__ uint64_t buf[EG_THREADS];
    for (size_t tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
        const size_t lo = tile * EG_TILE + (size_t)threadIdx.x * EG_ITEMS;
        const uint64_t bits = eg_thread_bits(z, n, bucket, order, lo, NULL);
        const uint64_t sum = gpu_block_inclusive_sum(bits, buf);
        if (threadIdx.x == blockDim.x - 1) seg[tile] = sum;
    }
}

/* seg[tile] = the tile's first bit (scanned). The tile's bits go into
 * shared words laid out as the global 64-bit words from the one holding
 * that first bit; then out as whole words, the first and the last by
 * atomic OR (a neighbouring tile may own bits in them), the others by
 * plain stores. The sync points of segments starting in the tile (every
 * seg_buckets-th bucket) go to sync. */
__global__ void k_eg_write_sync(const uint32_t *z, size_t n, size_t bucket, const uint8_t *order,
                                size_t ntiles, const uint64_t *seg, unsigned long long *words,
                                uint8_t *sync, size_t seg_buckets)
{
    __shared__ uint64_t buf[EG_THREADS];
    __shared__ unsigned w[EG_TILE_WORDS];
    for (size_t tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
        const size_t lo = tile * EG_TILE + (size_t)threadIdx.x * EG_ITEMS;
        const uint64_t mine = eg_thread_bits(z, n, bucket, order, lo, NULL);
        const uint64_t before = gpu_block_inclusive_sum(mine, buf) - mine;
        const uint64_t start = seg[tile], base = start & 63u, total = buf[blockDim.x - 1];
        const size_t nw64 = (size_t)((base + total + 63) / 64);
        for (size_t q = threadIdx.x; q < 2 * nw64; q += blockDim.x) w[q] = 0;
        __syncthreads();
        const eg_out to = {w, base + before, start - base, sync, seg_buckets};
        (void)eg_thread_bits(z, n, bucket, order, lo, &to);
        __syncthreads();
        unsigned long long *out = words + (start >> 6);
        for (size_t q = threadIdx.x; q < nw64; q += blockDim.x) {
            const unsigned long long x = (unsigned long long)w[2 * q]
                                         | (unsigned long long)w[2 * q + 1] << 32;
            if (q == 0 || q == nw64 - 1) atomicOr(&out[q], x);
            else out[q] = x;
        }
        __syncthreads();  /* w and buf are reused by the next tile */
    }
}

__global__ void k_eg_head(uint8_t *body, const int *e, uint32_t bucket, uint32_t seg)
{
    body[0] = (uint8_t)(int8_t)*e;
    st_u32(body + 1, bucket);
    st_u32(body + 5, seg);
}

static inline unsigned eg_blocks(size_t items)
{
    const unsigned b = blocks_for(items, EG_THREADS);
    return b < EG_MAX_BLOCKS ? b : EG_MAX_BLOCKS;
}

static size_t eg_encode(gcmpi_gpu_ctx *ctx, scratch *s, const float *g, float *r, size_t n,
                        const gc_params *p, uint64_t seed, uint8_t *body, size_t cap)
{
    (void)seed;
    cudaStream_t st = ctx->stream;
    const size_t bucket = p->bucket, nb = bucket_count(n, bucket);
    const size_t seg_b = gc_sync_segment_buckets(bucket), head = EG_HEAD + gc_sync_bytes(nb, seg_b);
    if (cap < head + (EG_K_BITS * nb + EG_MAX_CODE_BITS * n + 7) / 8) return GC_ERR(DST_TOO_SMALL);
    int *e = (int *)scratch_get(ctx, s, sizeof(int));
    if (!e) return GC_ERR(ALLOC);
    unsigned *m = NULL;
    if (p->eg_n == GC_AUTO) {
        m = (unsigned *)scratch_get(ctx, s, sizeof(unsigned));
        if (!m) return GC_ERR(ALLOC);
        if (cudaMemsetAsync(m, 0, sizeof *m, st) != cudaSuccess) return GC_ERR(GENERIC);
        if (n) k_eg_maxabs_sync<<<eg_blocks(n), EG_THREADS, 0, st>>>(g, r, n, m);
    }
    k_eg_exponent<<<1, 1, 0, st>>>(m, p->eg_n, e);
    k_eg_head<<<1, 1, 0, st>>>(body, e, (uint32_t)bucket, (uint32_t)seg_b);
    if (n == 0) return EG_HEAD;
    uint32_t *z = (uint32_t *)scratch_get(ctx, s, n * sizeof(uint32_t));
    uint8_t *order = (uint8_t *)scratch_get(ctx, s, nb);
    const size_t ntiles = (n + EG_TILE - 1) / EG_TILE;
    uint64_t *seg = (uint64_t *)scratch_get(ctx, s, (ntiles + 1) * sizeof(uint64_t));
    if (!z || !order || !seg) return GC_ERR(ALLOC);
    k_eg_quant<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, st>>>(g, r, n, e, z);
    k_eg_orders<<<blocks_for(nb, GPU_THREADS), GPU_THREADS, 0, st>>>(
        z, n, bucket, nb, p->eg_k == GC_AUTO ? -1 : p->eg_k, order);
    const unsigned tiles = ntiles < EG_MAX_BLOCKS * 16u ? (unsigned)ntiles : EG_MAX_BLOCKS * 16u;
    k_eg_bits_sync<<<tiles, EG_THREADS, 0, st>>>(z, n, bucket, order, ntiles, seg);
    gpu_scan_u64(ctx, seg, ntiles, seg + ntiles);
    /* The one wait: the stream's length is the body's. */
    uint64_t total = 0;
    size_t err = fetch(ctx, &total, seg + ntiles, sizeof total);
    if (gc_is_error(err)) return err;
    const size_t bytes = (size_t)((total + 7) / 8), nwords = (size_t)(total / 64 + 2);
    if (head + bytes > cap) return GC_ERR(DST_TOO_SMALL);
    unsigned long long *words = (unsigned long long *)scratch_get(ctx, s, nwords * 8);
    if (!words) return GC_ERR(ALLOC);
    if (cudaMemsetAsync(words, 0, nwords * 8, st) != cudaSuccess) return GC_ERR(GENERIC);
    k_eg_write_sync<<<tiles, EG_THREADS, 0, st>>>(z, n, bucket, order, ntiles, seg, words,
                                                  body + EG_HEAD, seg_b);
    if (cudaMemcpyAsync(body + head, words, bytes, cudaMemcpyDeviceToDevice, st) != cudaSuccess)
        return GC_ERR(GENERIC);
    return head + bytes;
}

/* ---- decode ---------------------------------------------------------------- */

/* Segment sg's buckets from its sync point, the zig-zag integers into z:
 * end[sg] = the bit after its last code, status[sg] = the error
 * codec_eg.c's decoder answers inside it (a run of more than 31 - k zeros:
 * TRUNCATED when the 32 - k bits it looked at reach past the stream, else
 * CORRUPT; an order above 30: CORRUPT; a bucket ending past the stream:
 * TRUNCATED), else STREAM_OK. */
__global__ void k_eg_decode_segments(gpu_stream s, const uint8_t *sync, size_t n, size_t bucket,
                                     size_t nb, size_t seg, size_t nseg, uint32_t *z,
                                     uint64_t *end, unsigned *status)
{
    GRID_STRIDE(sg, nseg) {
        uint64_t p = sg ? stream_sync_point(sync, sg) : 0;
        unsigned st = STREAM_OK;
        const size_t last = nb - sg * seg < seg ? nb : sg * seg + seg;
        for (size_t bi = sg * seg; bi < last && st == STREAM_OK; bi++) {
            const unsigned k = (unsigned)(stream_peek(&s, p) & 31u);
            p += EG_K_BITS;
            if (k > EG_MAX_ORDER) {
                st = STREAM_CORRUPT;
                break;
            }
            const uint64_t limit = (2ull << (31u - k)) - 1u;  /* at most 31 - k zeros */
            uint32_t *zb = z + bi * bucket;
            const size_t m = bucket_len(n, bucket, bi);
            for (size_t i = 0; i < m; i++) {
                const uint64_t v = stream_peek(&s, p), head = v & limit;
                if (head == 0) {
                    st = p + 32u - k > s.avail ? STREAM_TRUNCATED : STREAM_CORRUPT;
                    break;
                }
                const unsigned u = (unsigned)__ffsll((long long)head) - 1u, info = u + k;
                const uint64_t low = (v >> (u + 1u)) & ((1ull << info) - 1u);
                zb[i] = (uint32_t)((1ull << info) - (1ull << k) + low);
                p += 2u * u + 1u + k;
            }
            if (st == STREAM_OK && p > s.avail) st = STREAM_TRUNCATED;
        }
        end[sg] = p;
        status[sg] = st;
    }
}

__device__ static inline int32_t unzigzag(uint32_t z) { return (int32_t)(z >> 1) ^ -(int32_t)(z & 1u); }

/* acc += 2^-n q (codec_eg.c's add_dequantised), unless the verdict is an error. */
__global__ void k_eg_add(const uint32_t *z, size_t n, float step, const unsigned *verdict, float *acc)
{
    if (*verdict != STREAM_OK) return;
    GRID_STRIDE(i, n) acc[i] = gx_add(acc[i], gx_mul((float)unzigzag(z[i]), step));
}

static size_t eg_decode_add(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body, size_t len,
                            float *acc, size_t n)
{
    /* codec_eg.c's checks of the fixed fields, in its order. */
    if (len < EG_HEAD) return GC_ERR(TRUNCATED);
    const int e = (int8_t)body[0];
    if (e < -EG_N_LIMIT || e > EG_N_LIMIT) return GC_ERR(CORRUPT);
    const uint32_t bucket = get_u32(body + 1);
    if (bucket == 0 || bucket > (UINT32_C(1) << 31)) return GC_ERR(CORRUPT);
    const size_t nb = bucket_count(n, bucket);
    size_t seg = 0;
    const size_t sync_len = gc_sync_open(body + 5, len - 5, nb, &seg);
    if (gc_is_error(sync_len)) return sync_len;
    const size_t off = 5 + sync_len;
    const uint64_t avail = (uint64_t)(len - off) * 8;
    if ((uint64_t)n + (uint64_t)EG_K_BITS * nb > avail) return GC_ERR(TRUNCATED);
    if (n == 0) return len == off ? 0 : GC_ERR(CORRUPT);

    const size_t nseg = gc_sync_segments(nb, seg);
    const uint8_t *d = body_to_device(ctx, s, body, len);
    uint32_t *z = (uint32_t *)scratch_get(ctx, s, n * sizeof(uint32_t));
    uint64_t *end = (uint64_t *)scratch_get(ctx, s, nseg * sizeof(uint64_t));
    unsigned *status = (unsigned *)scratch_get(ctx, s, nseg * sizeof(unsigned));
    if (!d || !z || !end || !status) return GC_ERR(ALLOC);
    const gpu_stream st = {(const uint64_t *)d, len, off, avail};
    cudaStream_t q = ctx->stream;
    k_eg_decode_segments<<<blocks_for(nseg, STREAM_DECODE_THREADS), STREAM_DECODE_THREADS, 0, q>>>(
        st, d + EG_HEAD, n, bucket, nb, seg, nseg, z, end, status);
    gpu_stream_verdict(ctx, &st, d + EG_HEAD, end, status, nseg, ctx->flag);
    k_eg_add<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, q>>>(z, n, ldexpf(1.0f, -e), ctx->flag, acc);
    return gpu_stream_result(ctx, ctx->flag);
}

extern const gpu_codec gpu_codec_eg;
const gpu_codec gpu_codec_eg = {ID_EG, eg_encode, eg_decode_add};
