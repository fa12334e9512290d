/* workspace.c — scratch buffers that grow once and are reused per call. */
#include "codec_impl.h"

#include <stdlib.h>
#ifdef GC_HAVE_ZSTD
#include <zstd.h>
#endif

gc_workspace *gc_workspace_create(void)
{
    /* Zeroed: no buffers, no zstd contexts, no width policy. */
    return calloc(1, sizeof(gc_workspace));
}

void gc_workspace_free(gc_workspace *ws)
{
    if (!ws) return;
    for (int i = 0; i < GC_WS_SLOTS; i++) free(ws->buf[i]);
#ifdef GC_HAVE_ZSTD
    ZSTD_freeCCtx(ws->zstd_cctx);
    ZSTD_freeDCtx(ws->zstd_dctx);
#endif
    free(ws);
}

void *gc_ws_get(gc_workspace *ws, unsigned slot, size_t bytes)
{
    if (slot >= GC_WS_SLOTS) return NULL;
    if (bytes == 0) bytes = 1;
    if (ws->cap[slot] >= bytes) return ws->buf[slot];
    /* Grow geometrically so a slowly growing caller reallocates O(log) times. */
    size_t want = ws->cap[slot] * 2 > bytes ? ws->cap[slot] * 2 : bytes;
    want = (want + 63) & ~(size_t)63;
    void *p = NULL;
    if (posix_memalign(&p, 64, want) != 0) return NULL;
    free(ws->buf[slot]);
    ws->buf[slot] = p;
    ws->cap[slot] = want;
    return p;
}

void gc_workspace_set_width_policy(gc_workspace *ws, const gc_width_policy *p)
{
    if (!ws) return;
    /* Without choose() there is nothing to ask: the same as no policy. */
    ws->has_width_policy = p && p->choose;
    if (ws->has_width_policy) ws->width_policy = *p;
    else memset(&ws->width_policy, 0, sizeof ws->width_policy);
}

const gc_encode_report *gc_workspace_report(const gc_workspace *ws)
{
    return &ws->report;
}
