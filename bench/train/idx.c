/* idx.c — IDX format: 2 zero bytes, a type byte (0x08 = unsigned byte), the
 * number of dimensions, then that many big-endian uint32 sizes, then the data.
 * Every field is checked: a wrong or truncated file must say so, not train on
 * garbage. */
#include "idx.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

enum { IDX_TYPE_U8 = 0x08 };

/* Larger than any dataset this trainer reads; keeps a forged header from
 * asking for an absurd allocation. */
#define IDX_MAX_BYTES ((size_t)1 << 31)

static uint32_t load_be32(const unsigned char *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

/* Reads exactly len bytes; returns how many were read (short at end of file)
 * or -1 on a zlib or I/O error. */
static long long read_fully(gzFile f, void *buf, size_t len)
{
    size_t done = 0;
    while (done < len) {
        size_t want = len - done;
        if (want > (1u << 30)) want = 1u << 30;
        int got = gzread(f, (unsigned char *)buf + done, (unsigned)want);
        if (got < 0) return -1;
        if (got == 0) break;
        done += (size_t)got;
    }
    return (long long)done;
}

static const char *gz_message(gzFile f)
{
    int code = 0;
    const char *msg = gzerror(f, &code);
    if (code == Z_ERRNO) return strerror(errno);
    return msg && *msg ? msg : "read error";
}

int idx_read_u8(const char *path, uint32_t ndims, idx_array *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (ndims == 0 || ndims > IDX_MAX_DIMS) {
        snprintf(err, errlen, "%s: %u dimensions requested; this reader handles 1 to %d",
                 path, ndims, IDX_MAX_DIMS);
        return -1;
    }
    gzFile f = gzopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, errno ? strerror(errno) : "out of memory");
        return -1;
    }
    /* The magic first: a file of another kind is named as such, not as a
     * truncated header. */
    unsigned char head[4 * IDX_MAX_DIMS];
    long long got = read_fully(f, head, 4);
    if (got < 0) {
        snprintf(err, errlen, "%s: %s", path, gz_message(f));
        goto fail;
    }
    if (got < 4) {
        snprintf(err, errlen, "%s: %lld bytes, too short for an IDX file", path, got);
        goto fail;
    }
    uint32_t magic = load_be32(head);
    uint32_t expected = (uint32_t)IDX_TYPE_U8 << 8 | ndims;
    if (magic != expected) {
        snprintf(err, errlen,
                 "%s: bad IDX magic 0x%08x; expected 0x%08x (unsigned bytes, %u dimensions)",
                 path, magic, expected, ndims);
        goto fail;
    }
    size_t dims_len = 4 * (size_t)ndims;
    got = read_fully(f, head, dims_len);
    if (got < 0) {
        snprintf(err, errlen, "%s: %s", path, gz_message(f));
        goto fail;
    }
    if ((size_t)got < dims_len) {
        snprintf(err, errlen, "%s: truncated IDX header (%lld of %zu bytes of dimensions)", path,
                 got, dims_len);
        goto fail;
    }
    size_t size = 1;
    out->ndims = ndims;
    for (uint32_t d = 0; d < ndims; d++) {
        out->dims[d] = load_be32(head + 4 * d);
        if (out->dims[d] == 0 || out->dims[d] > IDX_MAX_BYTES / size) {
            snprintf(err, errlen, "%s: dimension %u has size %u; expected 1 to %zu", path, d,
                     out->dims[d], IDX_MAX_BYTES / size);
            goto fail;
        }
        size *= out->dims[d];
    }
    out->data = malloc(size);
    if (!out->data) {
        snprintf(err, errlen, "%s: cannot allocate %zu bytes", path, size);
        goto fail;
    }
    out->size = size;
    got = read_fully(f, out->data, size);
    if (got < 0) {
        snprintf(err, errlen, "%s: %s", path, gz_message(f));
        goto fail;
    }
    if ((size_t)got < size) {
        snprintf(err, errlen, "%s: truncated: %lld of %zu data bytes", path, got, size);
        goto fail;
    }
    unsigned char extra;
    got = read_fully(f, &extra, 1);
    if (got != 0) {
        snprintf(err, errlen, "%s: %s after the %zu data bytes", path,
                 got < 0 ? gz_message(f) : "unexpected trailing bytes", size);
        goto fail;
    }
    gzclose(f);
    return 0;
fail:
    gzclose(f);
    idx_free(out);
    return -1;
}

void idx_free(idx_array *a)
{
    free(a->data);
    memset(a, 0, sizeof *a);
}
