/* fuzz_payload_info.c — libFuzzer harness for the header parser, then the
 * codec-agnostic decoder (gc_decode_add picks the codec from the header).
 * A header that parses must describe itself consistently: a known codec, the
 * current version, only known flags, a length within [header, input], and it
 * must still parse from exactly its own length and not from one byte less. */
#include "fuzz_frame.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_payload_info: %s\n", what);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gc_payload_info info;
    size_t r = gc_payload_info_get(data, size, &info);
    check(r == 0 || gc_is_error(r), "gc_payload_info_get returned a size");
    if (r == 0) {
        check(info.version == GC_FORMAT_VERSION, "accepted another format version");
        check(gc_codec_by_id(info.codec_id) != NULL, "accepted an unknown codec id");
        check((info.flags & ~(unsigned)(GC_HF_CRC | GC_HF_ZSTD | GC_HF_NONFINITE)) == 0,
              "accepted unknown flags");
        check(!((info.flags & GC_HF_ZSTD) && (info.flags & GC_HF_NONFINITE)),
              "accepted zstd with a non-finite body");
        check(info.length >= GC_HEADER_SIZE && info.length <= size, "length outside [32, input]");
        gc_payload_info again;
        check(gc_payload_info_get(data, (size_t)info.length, &again) == 0,
              "header does not parse from its own length");
        check(gc_error_code(gc_payload_info_get(data, (size_t)info.length - 1, &again)) ==
                  GC_ERR_TRUNCATED,
              "header parses from one byte less than its length");
    }

    gc_workspace *ws = gc_workspace_create();
    if (!ws) abort();
    fuzz_decode_checked(NULL, data, size, fuzz_raw_count(data, size), ws);
    gc_workspace_free(ws);
    return 0;
}
