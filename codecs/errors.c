/* errors.c — zstd-style error codes: sizes at the top of the range. */
#include "codec_impl.h"

int gc_is_error(size_t r) { return r > (size_t)-(ptrdiff_t)GC_ERR_MAX_CODE; }

gc_error gc_error_code(size_t r)
{
    return gc_is_error(r) ? (gc_error)(0 - r) : GC_OK;
}

const char *gc_error_name(size_t r)
{
    switch (gc_error_code(r)) {
    case GC_OK: return "no error";
    case GC_ERR_GENERIC: return "error";
    case GC_ERR_PARAM: return "parameter out of range";
    case GC_ERR_UNKNOWN_CODEC: return "unknown codec";
    case GC_ERR_DST_TOO_SMALL: return "destination buffer too small";
    case GC_ERR_TRUNCATED: return "payload truncated";
    case GC_ERR_CORRUPT: return "payload corrupt";
    case GC_ERR_BAD_MAGIC: return "not a libgcmpi payload (bad magic)";
    case GC_ERR_VERSION: return "unsupported payload format version";
    case GC_ERR_WRONG_CODEC: return "payload was made by another codec";
    case GC_ERR_SIZE_MISMATCH: return "payload element count differs from the buffer";
    case GC_ERR_CHECKSUM: return "payload checksum mismatch";
    case GC_ERR_ALLOC: return "out of memory";
    case GC_ERR_ZSTD: return "zstd stage failed";
    case GC_ERR_UNSUPPORTED: return "feature not built in";
    case GC_ERR_MAX_CODE: break;
    }
    return "unknown error";
}
