/* scratch.c — per-communicator buffers that grow to the largest size asked
 * for and are reused, so a steady stream of equal calls allocates nothing. */
#include "coll.h"

#include <stdlib.h>

void *gcmpi_scratch_get(gcmpi_scratch *s, unsigned slot, size_t bytes)
{
    if (slot >= sizeof s->buf / sizeof s->buf[0]) return NULL;
    if (bytes == 0) bytes = 1;
    if (s->cap[slot] >= bytes) return s->buf[slot];
    /* Grow geometrically: a caller whose sizes creep up reallocates
     * O(log) times. The old contents are not kept. */
    size_t want = s->cap[slot] * 2 > bytes ? s->cap[slot] * 2 : bytes;
    if (want > SIZE_MAX - 63) return NULL;
    want = (want + 63) & ~(size_t)63;
    void *p = NULL;
    if (posix_memalign(&p, 64, want) != 0) {
        /* Doubling may be what failed: try the exact size before giving up. */
        want = (bytes + 63) & ~(size_t)63;
        if (posix_memalign(&p, 64, want) != 0) return NULL;
    }
    free(s->buf[slot]);
    s->buf[slot] = p;
    s->cap[slot] = want;
    return p;
}

void gcmpi_scratch_free(gcmpi_scratch *s)
{
    for (size_t i = 0; i < sizeof s->buf / sizeof s->buf[0]; i++) {
        free(s->buf[i]);
        s->buf[i] = NULL;
        s->cap[i] = 0;
    }
}
