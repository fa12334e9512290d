/* fuzz_seed_corpus.c — writes valid payloads of every registered codec as
 * starting points for the fuzzers, so mutation starts inside the body
 * decoders rather than at the magic check.
 *
 *   fuzz_seed_corpus DIR
 *
 * DIR/<codec>/raw-*     whole payloads (various n, parameters, CRC, zstd)
 * DIR/<codec>/framed-*  the same bodies in the harnesses' framed layout
 * DIR/payload_info/     every raw payload, for the header-parser harness
 * A codec whose encoder fails gets no seeds and a warning (its unit tests
 * report the failure); the exit status is non-zero only for I/O errors. */
#include "fuzz_frame.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>

static const size_t seed_sizes[] = {0, 1, 7, 100, 1000, 4097};

/* Parameter variants applied over the defaults; each codec reads the fields
 * it uses. Variants a codec rejects are skipped. */
static void seed_params(gc_params *p, int variant)
{
    gc_params_default(p);
    switch (variant) {
    case 0: break;
    case 1: p->bucket = 7; p->ratio = 0.3; p->bits = 8; p->rank = 1; p->eg_k = 0; break;
    case 2: p->bucket = 1; p->ratio = 1.0; p->bits = 2; p->rank = 3; p->eg_n = 4; break;
    case 3: p->flags |= GC_PF_CRC; break;
    case 4: p->zstd_level = 3; break;
    case 5: p->zstd_level = 1; p->flags |= GC_PF_CRC; p->bucket = 100; break;
    case 6: p->flags |= GC_PF_QSGD_ELIAS | GC_PF_RANDK_UNBIASED; p->ratio = 0.05; break;
    case 7: p->bits = 1; p->bucket = 33; p->ratio = 0.5; break;  /* topkq: sign-only buckets */
    case 8: p->bucket = 5; p->ratio = 0.4; break;                 /* with SEED_MIXED_WIDTHS */
    }
}
#define SEED_VARIANTS 9
/* The variant encoded with a width policy on the workspace (only topkq
 * reads it): its buckets take every width 1..8 in turn. */
#define SEED_MIXED_WIDTHS 8

static unsigned cycle_widths(void *ctx, const gc_bucket_stats *s)
{
    (void)ctx;
    return (unsigned)(s->index % 8) + 1;
}

static int make_dir(const char *path)
{
    if (mkdir(path, 0755) == 0 || errno == EEXIST) return 0;
    fprintf(stderr, "fuzz_seed_corpus: cannot create %s: %s\n", path, strerror(errno));
    return -1;
}

static int write_file(const char *dir, const char *name, const void *a, size_t alen,
                      const void *b, size_t blen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "fuzz_seed_corpus: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    int ok = fwrite(a, 1, alen, f) == alen && (blen == 0 || fwrite(b, 1, blen, f) == blen);
    if (fclose(f) != 0) ok = 0;
    if (!ok) fprintf(stderr, "fuzz_seed_corpus: short write to %s\n", path);
    return ok ? 0 : -1;
}

/* Heavy-tailed values with exact zeros, like a sparse gradient. */
static void fill_input(float *x, size_t n, uint64_t seed)
{
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        double u = ((double)(s >> 11) + 0.5) * 0x1p-53;
        x[i] = (i % 5 == 3) ? 0.0f : (float)(0.01 * (u < 0.5 ? -1 : 1) * -log(2 * fabs(u - 0.5)));
    }
}

/* Seeds for one codec; returns the number written or -1 on an I/O error. */
static int seed_codec(const gc_codec *c, const char *root, gc_workspace *ws)
{
    char dir[4096], info_dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", root, gc_codec_name(c));
    snprintf(info_dir, sizeof info_dir, "%s/payload_info", root);
    if (make_dir(dir) != 0) return -1;

    int written = 0;
    const char *failure = NULL;
    for (size_t si = 0; si < sizeof seed_sizes / sizeof seed_sizes[0]; si++) {
        size_t n = seed_sizes[si];
        float *g = malloc((n ? n : 1) * sizeof(float));
        if (!g) return -1;
        fill_input(g, n, 1000 + n);
        for (int v = 0; v < SEED_VARIANTS; v++) {
            gc_params p;
            seed_params(&p, v);
            if (gc_is_error(gc_params_check(c, &p, NULL, 0))) continue;
            size_t cap = gc_bound(c, n, &p);
            uint8_t *buf = malloc(cap);
            if (!buf) { free(g); return -1; }
            gc_width_policy mixed = {NULL, cycle_widths, NULL};
            gc_workspace_set_width_policy(ws, v == SEED_MIXED_WIDTHS ? &mixed : NULL);
            size_t len = gc_encode(c, g, NULL, n, &p, 42 + (uint64_t)v, buf, cap, ws);
            gc_workspace_set_width_policy(ws, NULL);
            if (gc_is_error(len)) {
                failure = gc_error_name(len);
                free(buf);
                continue;
            }
            char name[64];
            snprintf(name, sizeof name, "raw-n%zu-v%d", n, v);
            if (write_file(dir, name, buf, len, NULL, 0) != 0) { free(buf); free(g); return -1; }
            snprintf(name, sizeof name, "%s-n%zu-v%d", gc_codec_name(c), n, v);
            if (write_file(info_dir, name, buf, len, NULL, 0) != 0) {
                free(buf); free(g); return -1;
            }
            written += 2;

            /* The framed layout needs the body as the codec wrote it: only
             * payloads without the zstd stage carry it verbatim. */
            gc_payload_info info;
            if (!gc_is_error(gc_payload_info_get(buf, len, &info)) && !(info.flags & GC_HF_ZSTD)) {
                for (unsigned f = 0; f < 4; f++) {
                    uint8_t prefix[FUZZ_FRAME_PREFIX];
                    fuzz_frame_prefix(prefix, f, (uint16_t)n);
                    snprintf(name, sizeof name, "framed-n%zu-v%d-f%u", n, v, f);
                    if (write_file(dir, name, prefix, sizeof prefix, buf + GC_HEADER_SIZE,
                                   len - GC_HEADER_SIZE) != 0) {
                        free(buf); free(g); return -1;
                    }
                    written++;
                }
            }
            free(buf);
        }
        free(g);
    }
    if (written == 0)
        fprintf(stderr, "fuzz_seed_corpus: warning: %s wrote no seeds (encode: %s)\n",
                gc_codec_name(c), failure ? failure : "no parameter variant accepted");
    return written;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
        return 2;
    }
    const char *root = argv[1];
    char info_dir[4096];
    snprintf(info_dir, sizeof info_dir, "%s/payload_info", root);
    if (make_dir(root) != 0 || make_dir(info_dir) != 0) return 1;

    gc_workspace *ws = gc_workspace_create();
    if (!ws) return 1;
    int total = 0;
    for (size_t i = 0; i < gc_codec_count(); i++) {
        int w = seed_codec(gc_codec_at(i), root, ws);
        if (w < 0) { gc_workspace_free(ws); return 1; }
        total += w;
    }
    gc_workspace_free(ws);
    /* Rewriting existing files leaves the directory's time alone; bump it so
     * the build system sees the corpus as up to date. */
    utimes(root, NULL);
    printf("fuzz_seed_corpus: %d seed files in %s\n", total, root);
    return 0;
}
