/* momentum.c — DGC momentum correction as a variant of error feedback:
 * u = m*u + g; v = v + u; send the top of v; clear u and v where sent;
 * and the two steps that make it transparent to an application whose own
 * optimizer applies the momentum (gc_momentum_accumulate, _unfold). */
#include "codec_impl.h"

GC_INTERNAL size_t gc_payload_zero_sent(const void *src, size_t len, float *x, size_t n,
                                        gc_workspace *ws);

/* u = m*u + g in place; 1 when the new u holds no inf or NaN (a finite
 * g and u can still overflow). The check rides the update's pass, as
 * gc_all_finite's would its own (integer max over |u|'s bits). */
static int accumulate_checked(float *restrict u, const float *restrict g, size_t n, float m)
{
    uint32_t top = 0;
    for (size_t i = 0; i < n; i++) {
        const float x = m * u[i] + g[i];
        u[i] = x;
        uint32_t b;
        memcpy(&b, &x, sizeof b);
        b &= 0x7FFFFFFFu;
        top = b > top ? b : top;
    }
    return top < 0x7F800000u;
}

/* gc_encode_momentum's work; g_checked: the caller found g finite. */
static size_t encode_momentum(const gc_codec *c, const float *g, float *u, float *v, size_t n,
                              float momentum, const gc_params *p, uint64_t seed, void *dst,
                              size_t cap, gc_workspace *ws, int g_checked)
{
    if (!c) return GC_ERROR(UNKNOWN_CODEC);
    if (!(c->flags & GC_SPARSE) || !c->zero_sent) return GC_ERROR(PARAM);
    if (!(momentum >= 0.0f && momentum < 1.0f)) return GC_ERROR(PARAM);
    if (n > 0 && (!g || !u || !v)) return GC_ERROR(GENERIC);
    gc_workspace *own = NULL;
    if (!ws) {
        ws = own = gc_workspace_create();
        if (!ws) return GC_ERROR(ALLOC);
    }
    /* An overflow step: flagged payload, u and v left as they are. */
    if (!g_checked && !gc_all_finite(g, n)) {
        size_t r = gc_encode(c, g, NULL, n, p, seed, dst, cap, ws);
        gc_workspace_free(own);
        return r;
    }
    /* The fused error-feedback encode computes v + u, sends its top and
     * leaves v = (v + u) - D(payload), i.e. zero where sent. A u found
     * finite while it was formed is not scanned again; one that overflowed
     * gets gc_encode's flagged payload, v untouched. */
    const int u_finite = accumulate_checked(u, g, n, momentum);
    size_t r = u_finite ? gc_encode_finite(c, u, v, n, p, seed, dst, cap, ws)
                        : gc_encode(c, u, v, n, p, seed, dst, cap, ws);
    if (!gc_is_error(r)) {
        size_t z = gc_payload_zero_sent(dst, r, u, n, ws);
        if (gc_is_error(z)) r = z;
    }
    gc_workspace_free(own);
    return r;
}

size_t gc_encode_momentum(const gc_codec *c, const float *g, float *u, float *v, size_t n,
                          float momentum, const gc_params *p, uint64_t seed, void *dst,
                          size_t cap, gc_workspace *ws)
{
    return encode_momentum(c, g, u, v, n, momentum, p, seed, dst, cap, ws, 0);
}

size_t gc_encode_momentum_finite(const gc_codec *c, const float *g, float *u, float *v,
                                 size_t n, float momentum, const gc_params *p, uint64_t seed,
                                 void *dst, size_t cap, gc_workspace *ws)
{
    return encode_momentum(c, g, u, v, n, momentum, p, seed, dst, cap, ws, 1);
}

void gc_momentum_accumulate(float *u, const float *g, size_t n, float beta)
{
    float *restrict uu = u;
    const float *restrict gg = g;
    for (size_t i = 0; i < n; i++) uu[i] = beta * uu[i] + gg[i];
}

int gc_momentum_unfold(float *s, float *m, size_t n, float beta)
{
    if (!gc_all_finite(s, n)) return 0;
    float *restrict ss = s;
    float *restrict mm = m;
    for (size_t i = 0; i < n; i++) {
        /* The application computes beta*m first, then adds g_hat. */
        const float b = beta * mm[i];
        const float g = ss[i] - b;
        mm[i] = b + g;
        ss[i] = g;
    }
    return 1;
}
