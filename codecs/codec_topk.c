/* codec_topk.c — exact top-k sparsification: send the k = ceil(ratio * n)
 * elements of v = g + r with the largest magnitudes (ties: lower index
 * first), as indices and float32 values (the sparse body of
 * sparse_index.h). Values go out exactly, so the residual is v with the
 * sent elements cleared. Selection is a radix select, not a sort. */
#include "sparse_index.h"

static size_t topk_check(const gc_params *p, char *msg, size_t msglen)
{
    return gc_check_ratio(p, msg, msglen);
}

static size_t topk_bound(size_t n, const gc_params *p)
{
    return gc_sparse_body_bound(n, gc_kept_count(n, p->ratio));
}

static size_t topk_encode(const float *g, float *r, size_t n, const gc_params *p,
                          uint64_t seed, uint8_t *dst, size_t cap, gc_workspace *ws)
{
    (void)seed;
    if (n > UINT32_MAX) return GC_ERROR(PARAM);  /* indices are 32-bit */
    /* Checked before the residual is touched, so an error leaves it as it was. */
    if (cap < topk_bound(n, p)) return GC_ERROR(DST_TOO_SMALL);
    size_t k = gc_kept_count(n, p->ratio);
    const float *v;
    uint32_t *idx;
    size_t got = gc_sparse_accumulate_topk(g, r, n, k, ws, &v, &idx);
    if (gc_is_error(got)) return got;
    ws->report.kept = k;
    return gc_sparse_body_write(idx, k, v, r, n, dst, cap);
}

static size_t topk_decode_add(const uint8_t *src, size_t len, float *acc, size_t n,
                              gc_workspace *ws)
{
    (void)ws;
    return gc_sparse_body_apply(src, len, acc, n, GC_SPARSE_ADD);
}

static size_t topk_zero_sent(const uint8_t *src, size_t len, float *x, size_t n,
                             gc_workspace *ws)
{
    (void)ws;
    return gc_sparse_body_apply(src, len, x, n, GC_SPARSE_ZERO);
}

const gc_codec gc_codec_topk = {
    .name = "topk",
    .id = GC_ID_TOPK,
    .flags = GC_SPARSE,
    .check = topk_check,
    .bound = topk_bound,
    .encode = topk_encode,
    .decode_add = topk_decode_add,
    .zero_sent = topk_zero_sent,
};
