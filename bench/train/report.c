/* report.c — text and JSON output of a training run. */
#include "report.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "mlp.h"

void report_header(FILE *out, const run_info *run)
{
    const train_options *o = run->options;
    fprintf(out,
            "gcmpi-train: %d rank%s, %zu training and %zu test examples, batch %d per rank, "
            "%zu steps per epoch, %d parameters in %s\n",
            run->ranks, run->ranks == 1 ? "" : "s", run->train_examples, run->test_examples, o->batch,
            run->steps_per_epoch, MLP_PARAMS,
            o->per_tensor ? "6 allreduces per step" : "one fused allreduce per step");
}

void report_epoch(FILE *out, const epoch_record *e)
{
    fprintf(out, "epoch=%d loss=%.6f accuracy=%.4f seconds=%.2f total_seconds=%.2f\n", e->epoch,
            e->loss, e->accuracy, e->seconds, e->total_seconds);
    fflush(out);
}

void report_result(FILE *out, const epoch_record *last, int ranks)
{
    fprintf(out, "RESULT accuracy=%.4f loss=%.4f seconds=%.1f epochs=%d ranks=%d\n",
            last->accuracy, last->loss, last->total_seconds, last->epoch, ranks);
    fflush(out);
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

int report_json(const char *path, const run_info *run, const epoch_record *epochs, int n,
                char *err, size_t errlen)
{
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp) {
        snprintf(err, errlen, "--json path is too long");
        return -1;
    }
    FILE *f = fopen(tmp, "w");
    if (!f) {
        snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
        return -1;
    }
    const train_options *o = run->options;
    fprintf(f, "{\n  \"tool\": \"gcmpi-train\",\n  \"model\": \"mlp-784-512-256-10\",\n");
    fprintf(f, "  \"ranks\": %d,\n  \"parameters\": %d,\n", run->ranks, MLP_PARAMS);
    fprintf(f, "  \"train_examples\": %zu,\n  \"test_examples\": %zu,\n", run->train_examples,
            run->test_examples);
    fprintf(f, "  \"steps_per_epoch\": %zu,\n", run->steps_per_epoch);
    fprintf(f,
            "  \"config\": {\"epochs\": %d, \"batch\": %d, \"lr\": %.17g, \"momentum\": %.17g, "
            "\"weight_decay\": %.17g, \"seed\": %" PRIu64 ", \"subset\": %zu, "
            "\"test_subset\": %zu, \"per_tensor\": %s, \"data\": ",
            o->epochs, o->batch, o->lr, o->momentum, o->weight_decay, o->seed, o->subset,
            o->test_subset, o->per_tensor ? "true" : "false");
    json_string(f, o->data_dir);
    fprintf(f, "},\n  \"epochs\": [");
    for (int i = 0; i < n; i++) {
        const epoch_record *e = &epochs[i];
        fprintf(f,
                "%s\n    {\"epoch\": %d, \"loss\": %.17g, \"accuracy\": %.17g, "
                "\"seconds\": %.6f, \"total_seconds\": %.6f}",
                i ? "," : "", e->epoch, e->loss, e->accuracy, e->seconds, e->total_seconds);
    }
    fprintf(f, "%s],\n  \"complete\": %s\n}\n", n ? "\n  " : "", n == o->epochs ? "true" : "false");
    bool failed = ferror(f) != 0;
    failed |= fclose(f) != 0; /* always close, even after a write error */
    if (failed) {
        snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
        remove(tmp);
        return -1;
    }
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        remove(tmp);
        return -1;
    }
    return 0;
}
