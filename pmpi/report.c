/* report.c — rank 0 gathers every rank's statistics table at MPI_Finalize,
 * merges rows of the same communicator, collective and codec, and writes a
 * table to stderr and/or JSON. The header echoes the library version, the
 * build and the effective configuration so a report explains itself. */
#include "report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auto_report.h"
#include "device.h"
#include "stats.h"
#include "timeline.h"

#ifndef GCMPI_VERSION
#define GCMPI_VERSION GC_VERSION_STRING
#endif
#ifndef GCMPI_BUILD_INFO
#define GCMPI_BUILD_INFO ""
#endif

#define WARNING_LEN 768
#define GCMPI_STATS_SCHEMA_VERSION 1 /* "schema_version" of docs/stats-schema.json */

/* Rows of the same communicator label, size, collective and codec from
 * different ranks become one; ranks counts how many were merged. */
static size_t merge_rows(gcmpi_stats_row *out, const gcmpi_stats_row *in, size_t n)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        size_t j = 0;
        while (j < m && !(out[j].comm_size == in[i].comm_size && out[j].kind == in[i].kind &&
                          strncmp(out[j].comm, in[i].comm, sizeof out[j].comm) == 0 &&
                          strncmp(out[j].codec, in[i].codec, sizeof out[j].codec) == 0))
            j++;
        if (j == m) {
            out[m] = in[i];
            out[m].comm[sizeof out[m].comm - 1] = '\0';
            out[m].codec[sizeof out[m].codec - 1] = '\0';
            out[m].ranks = 1;
            m++;
        } else {
            gcmpi_stats_merge(&out[j].s, &in[i].s);
            out[j].ranks++;
        }
    }
    return m;
}

/* Each rank of a communicator counts every collective call: divide. */
static uint64_t collective_calls(const gcmpi_stats_row *r, uint64_t rank_calls)
{
    return r->comm_size > 0 ? rank_calls / (uint64_t)r->comm_size : rank_calls;
}

static double per_rank(const gcmpi_stats_row *r, double sum)
{
    return r->ranks > 0 ? sum / r->ranks : sum;
}

static double ratio_of(const gcmpi_stats *s)
{
    return s->bytes_sent ? (double)s->bytes_offered / (double)s->bytes_sent : 0.0;
}

/* MPI_COMM_WORLD first, then by label, size and collective. */
static int row_order(const void *a, const void *b)
{
    const gcmpi_stats_row *x = a, *y = b;
    int xw = strcmp(x->comm, "MPI_COMM_WORLD") != 0, yw = strcmp(y->comm, "MPI_COMM_WORLD") != 0;
    if (xw != yw) return xw - yw;
    int c = strcmp(x->comm, y->comm);
    if (c) return c;
    if (x->comm_size != y->comm_size) return x->comm_size < y->comm_size ? -1 : 1;
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    return strcmp(x->codec, y->codec);
}

static size_t collect_warnings(const gcmpi_config *cfg, const gcmpi_stats_row *rows, size_t n,
                               char (*w)[WARNING_LEN])
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const gcmpi_stats_row *r = &rows[i];
        const gcmpi_stats *s = &r->s;
        const char *kind = gcmpi_kind_name((gcmpi_kind)r->kind);
        /* A key seen once per call is expected for a few calls, not for most;
         * when evictions explain the misses, the eviction warning says so. */
        if (cfg->ef && s->calls_compressed >= 4u * (uint64_t)r->ranks &&
            2 * s->ef.missed > s->calls_compressed && 2 * s->ef.evicted < s->ef.missed)
            snprintf(w[k++], WARNING_LEN,
                     "WARNING: error feedback is not taking effect on %s (%s): %llu of %llu "
                     "compressed calls found no residual from an earlier call. Residuals are "
                     "kept per (buffer address, element count, layout); a framework that "
                     "regroups tensors into its fusion buffer differently each step (e.g. "
                     "Horovod's timing-based tensor fusion) never presents the same key twice. "
                     "Remedy: HOROVOD_FUSION_THRESHOLD=0 or DistributedOptimizer(groups=1), "
                     "or any stable bucket layout",
                     r->comm, kind, (unsigned long long)s->ef.missed,
                     (unsigned long long)s->calls_compressed);
        if (s->ef.evicted > 0)
            snprintf(w[k++], WARNING_LEN,
                     "WARNING: %llu residuals were evicted on %s (%s) to stay under "
                     "GCMPI_EF_MAX_BYTES=%llu; their error feedback restarted from zero. "
                     "Raise GCMPI_EF_MAX_BYTES",
                     (unsigned long long)s->ef.evicted, r->comm, kind,
                     (unsigned long long)cfg->ef_max_bytes);
        if (s->calls_failed > 0)
            snprintf(w[k++], WARNING_LEN,
                     "WARNING: %llu compressed calls on %s (%s) returned an MPI error",
                     (unsigned long long)s->calls_failed, r->comm, kind);
        if (s->calls_nonfinite > 0)
            snprintf(w[k++], WARNING_LEN,
                     "NOTE: %llu inputs (calls times ranks) on %s (%s) held inf or NaN "
                     "(overflow steps): their sums were non-finite like MPI_SUM's and no "
                     "residual or momentum took the value",
                     (unsigned long long)s->calls_nonfinite, r->comm, kind);
    }
    return k;
}

/* "min_bytes 3, exact_counts 2": the pass-through reasons of a row, in
 * collective calls; "" when none. */
static void passed_by_text(const gcmpi_stats_row *r, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < GCMPI_PASSED_REASONS && at < len; i++) {
        const gcmpi_skip k = gcmpi_passed_reasons[i];
        const char *key = gcmpi_skip_key(k);
        if (!r->s.passed_by[k]) continue;
        int n = snprintf(buf + at, len - at, "%s%s %llu", at ? ", " : "", key,
                         (unsigned long long)collective_calls(r, r->s.passed_by[k]));
        if (n < 0) break;
        at += (size_t)n;
    }
}

/* The MPI library's name and version: the first line of its version
 * string up to the first comma ("Open MPI v4.1.4"), blanks collapsed. */
static void short_mpi_version(const char *full, char *out, size_t len)
{
    size_t k = 0;
    int blank = 0;
    for (const char *c = full; *c && *c != '\n' && *c != ',' && k + 1 < len; c++) {
        if (*c == ' ' || *c == '\t') {
            blank = k > 0;
            continue;
        }
        if (blank && k + 2 < len) out[k++] = ' ';
        blank = 0;
        out[k++] = *c;
    }
    out[k] = '\0';
}

/* "NAME=value" lines printed as words, wrapped at 80 columns. */
static void print_settings(char *lines)
{
    const char *lead = "libgcmpi:", *more = "libgcmpi:  ";
    size_t col = (size_t)fprintf(stderr, "%s", lead);
    for (char *save = NULL, *w = strtok_r(lines, "\n", &save); w; w = strtok_r(NULL, "\n", &save)) {
        size_t n = strlen(w);
        if (col > strlen(more) && col + 1 + n > 80) col = (size_t)fprintf(stderr, "\n%s", more) - 1;
        col += (size_t)fprintf(stderr, " %s", w);
    }
    fputc('\n', stderr);
}

/* Decimal units, as the MB of the JSON's users expect: "32.8 kB". */
static void human_bytes(uint64_t b, char *out, size_t len)
{
    static const char *const units[] = {"B", "kB", "MB", "GB", "TB"};
    double v = (double)b;
    int u = 0;
    while (v >= 1000.0 && u < 4) {
        v /= 1000.0;
        u++;
    }
    if (u == 0) snprintf(out, len, "%llu B", (unsigned long long)b);
    else snprintf(out, len, "%.1f %s", v, units[u]);
}

#define ROW_FORMAT "libgcmpi: %-16s %-9s %-8s %6s %9s %9s %6s\n"

/* One communicator/collective/codec: a table line, then details. */
static void print_row(const gcmpi_stats_row *r, int nranks)
{
    const gcmpi_stats *s = &r->s;
    char comm[160], calls[24], offered[24], sent[24], ratio[24];
    if (r->comm_size == nranks) snprintf(comm, sizeof comm, "%s", r->comm);
    else snprintf(comm, sizeof comm, "%s (%d)", r->comm, r->comm_size);
    snprintf(calls, sizeof calls, "%llu", (unsigned long long)collective_calls(r, s->calls_compressed));
    human_bytes(s->bytes_offered, offered, sizeof offered);
    human_bytes(s->bytes_sent, sent, sizeof sent);
    snprintf(ratio, sizeof ratio, "%.1fx", ratio_of(s));
    fprintf(stderr, ROW_FORMAT, comm, gcmpi_kind_name((gcmpi_kind)r->kind), r->codec, calls,
            offered, sent, ratio);
    fprintf(stderr, "libgcmpi:   seconds per rank: encode %.4f, decode %.4f, communication %.4f\n",
            per_rank(r, s->encode_s), per_rank(r, s->decode_s), per_rank(r, s->comm_s));
    /* Calls passed through (below GCMPI_MIN_BYTES, or not chosen) and the
     * non-zero residual counts share a line while it fits 80 columns. */
    char passed[320] = "", resid[160] = "";
    if (s->calls_passed) {
        char why[256];
        passed_by_text(r, why, sizeof why);
        snprintf(passed, sizeof passed, " %llu passed through%s%s%s",
                 (unsigned long long)collective_calls(r, s->calls_passed), why[0] ? " (" : "", why,
                 why[0] ? ")" : "");
    }
    const struct { const char *name; uint64_t n; } ef[] = {
        {"new", s->ef.created}, {"reused", s->ef.reused},
        {"evicted", s->ef.evicted}, {"missed", s->ef.missed}};
    for (size_t k = 0, at = 0; k < sizeof ef / sizeof ef[0]; k++) {
        if (!ef[k].n || at >= sizeof resid) continue;
        int w = snprintf(resid + at, sizeof resid - at, "%s %llu %s", at ? "," : " residuals:",
                         (unsigned long long)ef[k].n, ef[k].name);
        if (w > 0) at += (size_t)w;
    }
    const char *lead = "libgcmpi:  ";
    if (passed[0] && resid[0] && strlen(lead) + strlen(passed) + 1 + strlen(resid) <= 80)
        fprintf(stderr, "%s%s;%s\n", lead, passed, resid);
    else {
        if (passed[0]) fprintf(stderr, "%s%s\n", lead, passed);
        if (resid[0]) fprintf(stderr, "%s%s\n", lead, resid);
    }
    if (s->verify_calls)
        fprintf(stderr, "libgcmpi:   verify: relative error mean %.2e, max %.2e\n",
                s->verify_err_sum / (double)s->verify_calls, s->verify_err_max);
    if (s->eg_elements)
        fprintf(stderr, "libgcmpi:   eg: %.3f bits per element\n",
                s->eg_code_bits / (double)s->eg_elements);
}

/* GCMPI_STATS=stderr, at a glance (README "Statistics"): a header, the
 * settings that matter (every setting with GCMPI_VERBOSE >= 1), a table
 * line and details per row, the pass-through count. Lines fit 80 columns
 * unless a communicator name is long; bytes and residual counts are summed
 * over ranks. */
static void print_table(const gcmpi_config *cfg, const char *mpi_version, int nranks,
                        const gcmpi_stats_row *rows, size_t n, uint64_t other,
                        const uint64_t nonblocking[2])
{
    char mpi[96], desc[8192];
    short_mpi_version(mpi_version, mpi, sizeof mpi);
    fprintf(stderr, "libgcmpi %s report: %d ranks, %s\n", GCMPI_VERSION, nranks, mpi);
    if (cfg->verbose >= 1) {
        fprintf(stderr, "libgcmpi: build: %s\n", GCMPI_BUILD_INFO);
        gcmpi_config_describe(cfg, desc, sizeof desc);
    } else {
        gcmpi_config_describe_brief(cfg, desc, sizeof desc);
    }
    print_settings(desc);
    if (n) fprintf(stderr, ROW_FORMAT, "communicator", "call", "codec", "calls", "offered", "sent",
                   "ratio");
    for (size_t i = 0; i < n; i++) print_row(&rows[i], nranks);
    if (n == 0) fprintf(stderr, "libgcmpi: no float sums were intercepted\n");
    fprintf(stderr, "libgcmpi: %llu calls that were not float sums passed through untouched\n",
            (unsigned long long)other);
    if (nonblocking[0])
        fprintf(stderr, "libgcmpi: %llu MPI_Iallreduce/MPI_Iallgather calls (%.1f MB) passed "
                        "through uncompressed: only the blocking calls are compressed\n",
                (unsigned long long)nonblocking[0], (double)nonblocking[1] / 1e6);
}

void gcmpi_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

/* The describe lines "GCMPI_X=value" as a JSON object. */
static void json_config(FILE *f, const gcmpi_config *cfg)
{
    char desc[4096];
    gcmpi_config_describe(cfg, desc, sizeof desc);
    fprintf(f, "{");
    int first = 1;
    for (char *save = NULL, *line = strtok_r(desc, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        char *eq = strchr(line, '=');
        if (!eq) continue;
        *eq = '\0';
        fprintf(f, "%s\n    ", first ? "" : ",");
        gcmpi_json_string(f, line);
        fprintf(f, ": ");
        gcmpi_json_string(f, eq + 1);
        first = 0;
    }
    fprintf(f, "}");
}

/* What Exp-Golomb coding saved over fixed-length codes of the same
 * integers: 1 - code bits / fixed-length bits; 0 without eg. */
static double eg_saving(const gcmpi_stats *s)
{
    return s->eg_fl_bits > 0.0 ? 1.0 - s->eg_code_bits / s->eg_fl_bits : 0.0;
}

/* A number, or null for NaN (JSON has no NaN). */
static void json_number(FILE *f, double x)
{
    if (isfinite(x)) fprintf(f, "%.6g", x);
    else fprintf(f, "null");
}

/* Rank 0's timelines (timeline.h): one per communicator it retired. */
static void json_timelines(FILE *f)
{
    int first = 1;
    for (const gcmpi_timeline *t = gcmpi_timeline_list(); t; t = t->next) {
        fprintf(f, "%s\n    {\"comm\": ", first ? "" : ",");
        gcmpi_json_string(f, t->comm);
        fprintf(f, ", \"collective\": \"allreduce\", \"codec\": ");
        gcmpi_json_string(f, t->codec);
        fprintf(f, ", \"stride\": %llu, \"points\": [", (unsigned long long)t->stride);
        for (size_t i = 0; i < t->len; i++) {
            const gcmpi_tl_point *p = &t->points[i];
            fprintf(f, "%s\n      {\"call\": %llu, \"calls\": %llu", i ? "," : "",
                    (unsigned long long)p->first_call, (unsigned long long)p->calls);
            for (int k = 0; k < GCMPI_TL_FIELDS; k++) {
                fprintf(f, ", \"%s\": ", gcmpi_tl_field_names[k]);
                json_number(f, gcmpi_tl_point_mean(p, (gcmpi_tl_field)k));
            }
            fprintf(f, "}");
        }
        fprintf(f, "]}");
        first = 0;
    }
    if (!first) fprintf(f, "\n  ");
}

static const char *adapt_method_name(const gcmpi_config *cfg)
{
    switch (cfg->adapt.method) {
    case GC_ADAPT_GCT: return "gct";
    case GC_ADAPT_EDGC: return cfg->adapt.ratio_auto.on ? "edgc, ratio auto" : "edgc";
    case GC_ADAPT_VARIANCE: return cfg->adapt.ratio_auto.on ? "variance, ratio auto" : "variance";
    case GC_ADAPT_NONE: break;
    }
    return "ratio auto";
}

/* GCMPI_STATS=stderr with the adaptive layer on: one line per communicator
 * rank 0 kept a timeline of, with the setting of its first and last call
 * and, for eg, what Exp-Golomb coding saved (all ranks, from rows). */
static void print_adaptive(const gcmpi_config *cfg, const gcmpi_stats_row *rows, size_t n)
{
    if (!gc_adapt_active(&cfg->adapt)) return;
    for (const gcmpi_timeline *t = gcmpi_timeline_list(); t; t = t->next) {
        char what[160] = "";
        static const gcmpi_tl_field shown[] = {GCMPI_TL_RATIO, GCMPI_TL_RANK, GCMPI_TL_LAMBDA,
                                               GCMPI_TL_BITS};
        size_t at = 0;
        for (size_t k = 0; k < sizeof shown / sizeof shown[0] && at < sizeof what; k++) {
            const gcmpi_tl_field fld = shown[k];
            if (isnan(t->first[fld]) && isnan(t->last[fld])) continue;
            at += (size_t)snprintf(what + at, sizeof what - at, "%s%s %.4g -> %.4g",
                                   at ? ", " : "", gcmpi_tl_field_names[fld], t->first[fld],
                                   t->last[fld]);
        }
        uint64_t calls = 0;
        for (size_t i = 0; i < t->len; i++) calls += t->points[i].calls;
        fprintf(stderr, "libgcmpi: adaptive %s allreduce (%s, %s): %s over %llu calls", t->comm,
                adapt_method_name(cfg), t->codec, at ? what : "no setting",
                (unsigned long long)calls);
        for (size_t i = 0; i < n; i++) {
            const gcmpi_stats *s = &rows[i].s;
            if (rows[i].kind != GCMPI_KIND_ALLREDUCE || strcmp(rows[i].comm, t->comm) != 0 ||
                strcmp(rows[i].codec, t->codec) != 0 || !s->eg_elements)
                continue;
            fprintf(stderr, "; eg %.3f bits/el, fixed-length %.3f, saving %.1f%%",
                    s->eg_code_bits / (double)s->eg_elements,
                    s->eg_fl_bits / (double)s->eg_elements, 100.0 * eg_saving(s));
            break;
        }
        fputc('\n', stderr);
    }
}

/* The last member of a collective's object, and its closing brace: every
 * reason a call can pass through for, in collective calls. */
static void json_passed_by(FILE *f, const gcmpi_stats_row *r)
{
    fprintf(f, ",\n     \"passed_by\": {");
    for (int i = 0; i < GCMPI_PASSED_REASONS; i++) {
        const gcmpi_skip k = gcmpi_passed_reasons[i];
        fprintf(f, "%s\"%s\": %llu", i ? ", " : "", gcmpi_skip_key(k),
                (unsigned long long)collective_calls(r, r->s.passed_by[k]));
    }
    fprintf(f, "}}");
}

/* Calls on CUDA device buffers (device.h), summed over ranks. */
static void json_device(FILE *f, const gcmpi_device_stats *d)
{
    fprintf(f, ",\n  \"device\": {\"calls\": %llu, \"compressed\": %llu, "
               "\"compressed_host\": %llu, \"staged\": %llu, \"staged_bytes\": %llu, "
               "\"passed_cuda_aware\": %llu, \"residual_allocs\": %llu, "
               "\"residual_bytes_peak\": %llu, \"pool_grows\": %llu, \"device_s\": %.6g}",
            (unsigned long long)d->calls, (unsigned long long)d->compressed,
            (unsigned long long)d->compressed_host, (unsigned long long)d->staged,
            (unsigned long long)d->staged_bytes, (unsigned long long)d->passed,
            (unsigned long long)d->residual_allocs, (unsigned long long)d->residual_bytes_peak,
            (unsigned long long)d->pool_grows, d->device_s);
}

static void print_device(const gcmpi_device_stats *d)
{
    if (!d->calls) return;
    fprintf(stderr,
            "libgcmpi: device buffers: %llu calls: %llu on the GPU, %llu on the host,\n"
            "libgcmpi:   %llu staged (%.2f MB), %llu to CUDA-aware MPI; %.4f s device work\n",
            (unsigned long long)d->calls, (unsigned long long)d->compressed,
            (unsigned long long)d->compressed_host, (unsigned long long)d->staged,
            (double)d->staged_bytes / 1e6, (unsigned long long)d->passed, d->device_s);
}

static int write_json(const char *path, const gcmpi_config *cfg, const char *mpi_version,
                      int nranks, const gcmpi_stats_row *rows, size_t n, uint64_t other,
                      const uint64_t nonblocking[2], char (*warnings)[WARNING_LEN],
                      size_t n_warnings, const gcmpi_device_stats *dev)
{
    char tmp[GCMPI_PATH_LEN + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) return -1;
    /* docs/stats-schema.json describes every field; its version changes
     * only when a field is removed, renamed or changes meaning. */
    fprintf(f, "{\n  \"schema_version\": %d,\n  \"library\": \"libgcmpi\",\n  \"version\": ",
            GCMPI_STATS_SCHEMA_VERSION);
    gcmpi_json_string(f, GCMPI_VERSION);
    fprintf(f, ",\n  \"build\": ");
    gcmpi_json_string(f, GCMPI_BUILD_INFO);
    fprintf(f, ",\n  \"mpi\": ");
    gcmpi_json_string(f, mpi_version);
    fprintf(f, ",\n  \"ranks\": %d,\n  \"config_hash\": \"%016llx\",\n  \"config\": ", nranks,
            (unsigned long long)gcmpi_config_hash(cfg));
    json_config(f, cfg);
    json_device(f, dev);
    fprintf(f, ",\n  \"calls_not_float_sum\": %llu,\n  \"nonblocking_passed\": {\"calls\": "
               "%llu, \"bytes\": %llu},\n  \"collectives\": [",
            (unsigned long long)other, (unsigned long long)nonblocking[0],
            (unsigned long long)nonblocking[1]);
    for (size_t i = 0; i < n; i++) {
        const gcmpi_stats_row *r = &rows[i];
        const gcmpi_stats *s = &r->s;
        fprintf(f, "%s\n    {\"comm\": ", i ? "," : "");
        gcmpi_json_string(f, r->comm);
        fprintf(f, ", \"comm_size\": %d, \"collective\": \"%s\", \"codec\": ", r->comm_size,
                gcmpi_kind_name((gcmpi_kind)r->kind));
        gcmpi_json_string(f, r->codec);
        fprintf(f,
                ", \"ranks\": %d,\n     \"calls_compressed\": %llu, \"calls_passed\": %llu, "
                "\"calls_failed\": %llu, \"nonfinite_inputs\": %llu,\n     \"node_payload_gathers\": %llu, \"bytes_offered\": %llu, \"bytes_sent\": %llu, "
                "\"ratio\": %.6g,\n     \"encode_s\": %.6g, \"decode_s\": %.6g, \"comm_s\": %.6g,"
                "\n     \"ef_created\": %llu, \"ef_reused\": %llu, \"ef_evicted\": %llu, "
                "\"ef_missed\": %llu,\n     \"verify_calls\": %llu, \"verify_rel_err_mean\": "
                "%.6g, \"verify_rel_err_max\": %.6g,\n     \"eg_code_bits_per_element\": %.6g, "
                "\"eg_fl_bits_per_element\": %.6g, \"eg_saving\": %.6g",
                r->ranks, (unsigned long long)collective_calls(r, s->calls_compressed),
                (unsigned long long)collective_calls(r, s->calls_passed),
                (unsigned long long)collective_calls(r, s->calls_failed),
                (unsigned long long)s->calls_nonfinite,
                (unsigned long long)s->calls_node_payloads,
                (unsigned long long)s->bytes_offered, (unsigned long long)s->bytes_sent,
                ratio_of(s), per_rank(r, s->encode_s), per_rank(r, s->decode_s),
                per_rank(r, s->comm_s), (unsigned long long)s->ef.created,
                (unsigned long long)s->ef.reused, (unsigned long long)s->ef.evicted,
                (unsigned long long)s->ef.missed,
                (unsigned long long)collective_calls(r, s->verify_calls),
                s->verify_calls ? s->verify_err_sum / (double)s->verify_calls : 0.0,
                s->verify_err_max,
                s->eg_elements ? s->eg_code_bits / (double)s->eg_elements : 0.0,
                s->eg_elements ? s->eg_fl_bits / (double)s->eg_elements : 0.0, eg_saving(s));
        json_passed_by(f, r);
    }
    fprintf(f, "\n  ],\n  \"auto_choices\": [");
    gcmpi_auto_report_json(f);
    fprintf(f, "],\n  \"auto_models\": [");
    gcmpi_auto_report_models_json(f);
    fprintf(f, "],\n  \"timelines\": [");
    json_timelines(f);
    fprintf(f, "],\n  \"warnings\": [");
    for (size_t i = 0; i < n_warnings; i++) {
        fprintf(f, "%s\n    ", i ? "," : "");
        gcmpi_json_string(f, warnings[i]);
    }
    fprintf(f, "]\n}\n");
    int bad = ferror(f);
    if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
        remove(tmp);
        return -1;
    }
    return 0;
}

/* Rank 0: merge, print, write. */
static void publish(const gcmpi_config *cfg, int nranks, gcmpi_stats_row *all, size_t n_all,
                    uint64_t other, const uint64_t nonblocking[2], const gcmpi_device_stats *dev)
{
    char mpi_version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0;
    PMPI_Get_library_version(mpi_version, &len);
    mpi_version[strcspn(mpi_version, "\n")] = '\0';

    gcmpi_stats_row *rows = malloc((n_all ? n_all : 1) * sizeof *rows);
    char(*warnings)[WARNING_LEN] = calloc(4 * n_all + 1, WARNING_LEN); /* 4 a row at most */
    if (!rows || !warnings) {
        fprintf(stderr, "libgcmpi: out of memory; no statistics report\n");
        free(rows);
        free(warnings);
        return;
    }
    size_t n = merge_rows(rows, all, n_all);
    qsort(rows, n, sizeof *rows, row_order);
    size_t n_warnings = collect_warnings(cfg, rows, n, warnings);
    if (cfg->stats_stderr) {
        print_table(cfg, mpi_version, nranks, rows, n, other, nonblocking);
        print_adaptive(cfg, rows, n);
        if (cfg->verbose >= 1) gcmpi_auto_report_print(stderr); /* keeps the default report short */
        print_device(dev);
    }
    for (size_t i = 0; i < n_warnings; i++) fprintf(stderr, "libgcmpi: %s\n", warnings[i]);
    if (cfg->stats_json[0] &&
        write_json(cfg->stats_json, cfg, mpi_version, nranks, rows, n, other, nonblocking,
                   warnings, n_warnings, dev) != 0)
        fprintf(stderr, "libgcmpi: could not write the statistics to GCMPI_STATS file %s\n",
                cfg->stats_json);
    free(warnings);
    free(rows);
}

void gcmpi_report_finalize(const gcmpi_config *cfg, MPI_Comm comm)
{
    int rank, nranks;
    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &nranks);

    size_t n_rows = 0;
    const gcmpi_stats_row *rows = gcmpi_stats_table(&n_rows);
    uint64_t other = gcmpi_stats_other(), other_sum = 0;
    PMPI_Reduce(&other, &other_sum, 1, MPI_UINT64_T, MPI_SUM, 0, comm);
    uint64_t nonblocking[2], nonblocking_sum[2] = {0, 0};
    gcmpi_stats_nonblocking(&nonblocking[0], &nonblocking[1]);
    PMPI_Reduce(nonblocking, nonblocking_sum, 2, MPI_UINT64_T, MPI_SUM, 0, comm);
    gcmpi_device_stats dev;
    gcmpi_device_stats_reduce(&dev, comm);

    int my_bytes = (int)(n_rows * sizeof(gcmpi_stats_row));
    int *bytes = NULL, *displs = NULL;
    gcmpi_stats_row *all = NULL;
    size_t total = 0;
    int ok = 1;
    if (rank == 0) {
        bytes = calloc((size_t)nranks, sizeof *bytes);
        displs = calloc((size_t)nranks, sizeof *displs);
        ok = bytes && displs;
    }
    PMPI_Gather(&my_bytes, 1, MPI_INT, bytes, 1, MPI_INT, 0, comm);
    if (rank == 0 && ok) {
        for (int r = 0; r < nranks; r++) {
            displs[r] = (int)total;
            total += (size_t)bytes[r];
        }
        all = malloc(total ? total : 1);
        ok = all != NULL;
    }
    /* Every rank must know whether rank 0 can receive before sending. */
    PMPI_Bcast(&ok, 1, MPI_INT, 0, comm);
    if (ok) {
        PMPI_Gatherv(rows, my_bytes, MPI_BYTE, all, bytes, displs, MPI_BYTE, 0, comm);
        if (rank == 0)
            publish(cfg, nranks, all, total / sizeof(gcmpi_stats_row), other_sum,
                    nonblocking_sum, &dev);
    } else if (rank == 0) {
        fprintf(stderr, "libgcmpi: out of memory; no statistics report\n");
    }
    free(all);
    free(displs);
    free(bytes);
    gcmpi_auto_report_clear();
}
