/* idx.h — reader for LeCun's IDX files of unsigned bytes, gzip-compressed or
 * plain (zlib's gzread reads both). */
#ifndef TRAIN_IDX_H
#define TRAIN_IDX_H

#include <stddef.h>
#include <stdint.h>

enum { IDX_MAX_DIMS = 3 };

typedef struct {
    uint32_t ndims;
    uint32_t dims[IDX_MAX_DIMS];
    uint8_t *data; /* dims[0] * ... * dims[ndims-1] bytes, row-major */
    size_t size;
} idx_array;

/* Reads an IDX file of unsigned bytes with exactly `ndims` dimensions.
 * Returns 0, or -1 with a message naming the file and the problem in err. */
int idx_read_u8(const char *path, uint32_t ndims, idx_array *out, char *err, size_t errlen);

void idx_free(idx_array *a);

#endif
