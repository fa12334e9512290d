/* test_config.c — GCMPI_* parsing: defaults, every variable, the exact
 * messages for bad values, typo suggestions, the GCMPI_CONFIG file, the
 * cross-rank hash and the report text. */
#include "config_impl.h"
#include "gcmpi_config.h"

#include <criterion/criterion.h>
#include <locale.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static gcmpi_config cfg;
static gcmpi_config_result res;

/* Load from exactly these environment entries (never the process environ). */
#define ENV(...) ((char *[]){__VA_ARGS__, NULL})
static char *no_env[] = {NULL};

static void load_ok(char **env)
{
    gcmpi_config_load(&cfg, &res, env);
    cr_assert(res.ok, "unexpected error: %s", res.error);
}

static void load_fails_with(char **env, const char *message)
{
    gcmpi_config_load(&cfg, &res, env);
    cr_assert(!res.ok, "accepted, expected: %s", message);
    cr_assert_str_eq(res.error, message);
}

static uint64_t hash_of(char **env)
{
    gcmpi_config c;
    gcmpi_config_result r;
    gcmpi_config_load(&c, &r, env);
    cr_assert(r.ok, "%s", r.error);
    return gcmpi_config_hash(&c);
}

static uint64_t default_hash(void)
{
    gcmpi_config d;
    gcmpi_config_defaults(&d);
    return gcmpi_config_hash(&d);
}

/* A file with these contents; the path lives until the test process ends. */
static const char *write_file(const char *contents)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/gcmpi_test_XXXXXX");
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    size_t len = strlen(contents);
    cr_assert_eq(write(fd, contents, len), (ssize_t)len);
    close(fd);
    return path;
}

static char *config_entry(const char *path)
{
    static char entry[128];
    snprintf(entry, sizeof entry, "GCMPI_CONFIG=%s", path);
    return entry;
}

/* ---- defaults ------------------------------------------------------------------------ */

Test(defaults, empty_environment_gives_the_documented_values)
{
    load_ok(no_env);
    cr_assert_eq(res.n_warnings, 0);
    cr_assert_eq(cfg.disable, 0);
    cr_assert_str_eq(gc_codec_name(cfg.codec), "none");
    cr_assert_eq(cfg.params.ratio, 0.01);
    cr_assert_eq(cfg.params.bits, 4);
    cr_assert_eq(cfg.params.bucket, 512);
    cr_assert_eq(cfg.params.rank, 4);
    cr_assert_eq(cfg.params.eg_n, GC_AUTO);
    cr_assert_eq(cfg.params.eg_k, GC_AUTO);
    cr_assert_eq(cfg.params.zstd_level, 0);
    cr_assert_eq(cfg.params.flags, 0);
    cr_assert_eq(cfg.ef, 1);
    cr_assert_eq(cfg.ef_momentum, 0.0);
    cr_assert_eq(cfg.ef_max_bytes, 1ull << 30);
    cr_assert_eq(cfg.min_bytes, 4096);
    cr_assert_eq(cfg.algo, GCMPI_ALGO_AUTO);
    cr_assert_eq(cfg.hier_segment, 1u << 20);
    cr_assert_eq(cfg.seed, 42);
    cr_assert_eq(cfg.comm, GCMPI_COMM_WORLD_ONLY);
    cr_assert_eq(cfg.stats_stderr, 0);
    cr_assert_str_eq(cfg.stats_json, "");
    cr_assert_eq(cfg.verify, 0);
    cr_assert_eq(cfg.verbose, 0);
    cr_assert_str_eq(cfg.source, "");
    cr_assert_eq(gcmpi_config_hash(&cfg), default_hash());
}

Test(defaults, adaptive_layer_defaults_are_the_documented_values)
{
    load_ok(no_env);
    const gc_adapt_config *a = &cfg.adapt;
    cr_assert_eq(a->method, GC_ADAPT_NONE);
    cr_assert_eq(a->gct.lambda, 1e-5);
    cr_assert_eq(a->gct.lr, 0.01);
    cr_assert_eq(a->gct.eps, 1e-3);
    cr_assert_eq(a->gct.decay, 0.8);
    cr_assert_eq(a->gct.decay_every, 1000);
    cr_assert_eq(a->gct.alg2, 0);
    cr_assert_eq(a->edgc.alpha, 0.1);
    cr_assert_eq(a->edgc.beta, 0.01);
    cr_assert_eq(a->edgc.window, 100);
    cr_assert_eq(a->edgc.min, 0.0);
    cr_assert_eq(a->edgc.max, 0.0);
    cr_assert_eq(a->var.alpha, 1.0);
    cr_assert_eq(a->var.memory, 20);
    cr_assert_eq(a->var.min, 0.0);
    cr_assert_eq(a->var.max, 0.0);
    cr_assert_eq(a->var.n_widths, 6);
    static const unsigned widths[] = {1, 2, 3, 4, 6, 8};
    for (unsigned i = 0; i < 6; i++) cr_assert_eq(a->var.widths[i], widths[i], "width %u", i);
    cr_assert_eq(a->var.target, 0.02);
    cr_assert_eq(a->ratio_auto.on, 0);
    cr_assert_eq(a->ratio_auto.budget_s, 0.01);
    cr_assert_eq(a->ratio_auto.min, 0.0001);
    cr_assert_eq(a->ratio_auto.max, 0.1);
    cr_assert_not(gc_adapt_active(a));
    /* gcmpi_config_defaults and gc_adapt_config_default agree. */
    gc_adapt_config direct;
    gc_adapt_config_default(&direct);
    cr_assert_eq(memcmp(&direct, a, sizeof direct), 0);
}

Test(defaults, describe_prints_the_documented_default_of_every_variable)
{
    gcmpi_config d;
    gcmpi_config_defaults(&d);
    char text[4096];
    size_t len = gcmpi_config_describe(&d, text, sizeof text);
    cr_assert_eq(len, strlen(text));
    const char *line = text;
    size_t count = 0;
    for (const gcmpi_config_doc *doc = gcmpi_config_docs; doc->name; doc++, count++) {
        char want[256];
        snprintf(want, sizeof want, "%s=%s\n", doc->name, doc->default_value);
        cr_assert(strncmp(line, want, strlen(want)) == 0, "expected %s", want);
        line += strlen(want);
    }
    cr_assert_eq(*line, '\0');
    cr_assert_eq(count, CFG_VAR_COUNT);
}

Test(defaults, names_table_matches_the_documentation_table)
{
    size_t i = 0;
    for (; gcmpi_config_names[i]; i++) {
        cr_assert_str_eq(gcmpi_config_names[i], gcmpi_config_docs[i].name);
        cr_assert(strncmp(gcmpi_config_names[i], "GCMPI_", 6) == 0);
        cr_assert_not_null(gcmpi_config_docs[i].meaning);
    }
    cr_assert_null(gcmpi_config_docs[i].name);
    cr_assert_eq(i, CFG_VAR_COUNT);
}

Test(defaults, documented_codec_list_is_the_registry)
{
    char names[512] = "";
    for (size_t i = 0; i < gc_codec_count(); i++) {
        if (i) strcat(names, ", ");
        strcat(names, gc_codec_name(gc_codec_at(i)));
    }
    cr_assert_str_eq(gcmpi_config_docs[CFG_CODEC].range, names);
}

Test(defaults, a_failed_load_leaves_the_defaults)
{
    load_fails_with(ENV("GCMPI_SEED=7", "GCMPI_RATIO=2"),
                    "libgcmpi: GCMPI_RATIO=2 is out of range; expected a number in (0, 1]");
    cr_assert_eq(cfg.seed, 42);
    cr_assert_eq(gcmpi_config_hash(&cfg), default_hash());
}

/* ---- each variable ------------------------------------------------------------------ */

Test(values, booleans_accept_every_spelling_in_any_case)
{
    static const char *const yes[] = {"1", "true", "yes", "on", "TRUE", "On", " yes "};
    static const char *const no[] = {"0", "false", "no", "off", "FALSE", "Off"};
    char entry[64];
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        snprintf(entry, sizeof entry, "GCMPI_DISABLE=%s", yes[i]);
        load_ok(ENV(entry));
        cr_assert_eq(cfg.disable, 1, "%s", entry);
    }
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        snprintf(entry, sizeof entry, "GCMPI_EF=%s", no[i]);
        load_ok(ENV(entry));
        cr_assert_eq(cfg.ef, 0, "%s", entry);
    }
}

Test(values, boolean_switches_set_their_fields_and_flags)
{
    load_ok(ENV("GCMPI_CRC=1", "GCMPI_RANDK_UNBIASED=yes", "GCMPI_VERIFY=on",
                "GCMPI_QSGD_CODING=elias"));
    cr_assert_eq(cfg.params.flags, GC_PF_CRC | GC_PF_RANDK_UNBIASED | GC_PF_QSGD_ELIAS);
    cr_assert_eq(cfg.verify, 1);
    load_ok(ENV("GCMPI_QSGD_CODING=FIXED"));
    cr_assert_eq(cfg.params.flags, 0);
}

Test(values, every_registered_codec_is_accepted_by_name_with_default_parameters)
{
    for (size_t i = 0; i < gc_codec_count(); i++) {
        char entry[64];
        snprintf(entry, sizeof entry, "GCMPI_CODEC=%s", gc_codec_name(gc_codec_at(i)));
        load_ok(ENV(entry));
        cr_assert_eq(cfg.codec, gc_codec_at(i), "%s", entry);
    }
    load_ok(ENV("GCMPI_CODEC=TopK"));
    cr_assert_str_eq(gc_codec_name(cfg.codec), "topk");
}

Test(values, numbers_in_every_decimal_form)
{
    static const struct { const char *text; double value; } cases[] = {
        {"0.5", 0.5}, {"1", 1.0}, {"1e-3", 1e-3}, {".25", 0.25}, {"+0.125", 0.125},
        {"2.5E-1", 0.25}, {"0.1", 0.1}, {" 0.75\t", 0.75}, {"100e-3", 0.1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char entry[64];
        snprintf(entry, sizeof entry, "GCMPI_RATIO=%s", cases[i].text);
        load_ok(ENV(entry));
        cr_assert_eq(cfg.params.ratio, cases[i].value, "%s", entry);
    }
    load_ok(ENV("GCMPI_EF_MOMENTUM=0.9", "GCMPI_CODEC=topk", "GCMPI_DGC_SAMPLE=0.05",
                "GCMPI_DGC_TOLERANCE=0.5"));
    cr_assert_eq(cfg.ef_momentum, 0.9);
    cr_assert_eq(cfg.params.dgc_sample, 0.05);
    cr_assert_eq(cfg.params.dgc_tolerance, 0.5);
}

Test(values, sizes_take_binary_suffixes)
{
    load_ok(ENV("GCMPI_BUCKET=4K", "GCMPI_EF_MAX_BYTES=2g", "GCMPI_MIN_BYTES=3M"));
    cr_assert_eq(cfg.params.bucket, 4096);
    cr_assert_eq(cfg.ef_max_bytes, 2ull << 30);
    cr_assert_eq(cfg.min_bytes, 3ull << 20);
    load_ok(ENV("GCMPI_BUCKET=1000", "GCMPI_MIN_BYTES=0", "GCMPI_EF_MAX_BYTES=16777215G"));
    cr_assert_eq(cfg.params.bucket, 1000);
    cr_assert_eq(cfg.min_bytes, 0);
    cr_assert_eq(cfg.ef_max_bytes, 16777215ull << 30);
}

Test(values, hier_segment_is_a_size_or_off)
{
    load_ok(ENV("GCMPI_HIER_SEGMENT=256K"));
    cr_assert_eq(cfg.hier_segment, 256u << 10);
    load_ok(ENV("GCMPI_HIER_SEGMENT=OFF"));
    cr_assert_eq(cfg.hier_segment, 0);
    load_ok(ENV("GCMPI_HIER_SEGMENT=4"));
    cr_assert_eq(cfg.hier_segment, 4);
    load_fails_with(ENV("GCMPI_HIER_SEGMENT=3"),
                    "libgcmpi: GCMPI_HIER_SEGMENT=3 is out of range; expected off, or a size >= 4 (bytes)");
    load_fails_with(ENV("GCMPI_HIER_SEGMENT=big"),
                    "libgcmpi: GCMPI_HIER_SEGMENT=big is not a size; expected off, or a size >= 4 (bytes)");
}

Test(values, integers_and_auto)
{
    load_ok(ENV("GCMPI_BITS=8", "GCMPI_RANK=16", "GCMPI_EG_N=-3", "GCMPI_EG_K=auto",
                "GCMPI_VERBOSE=3"));
    cr_assert_eq(cfg.params.bits, 8);
    cr_assert_eq(cfg.params.rank, 16);
    cr_assert_eq(cfg.params.eg_n, -3);
    cr_assert_eq(cfg.params.eg_k, GC_AUTO);
    cr_assert_eq(cfg.verbose, 3);
    load_ok(ENV("GCMPI_EG_N=AUTO", "GCMPI_EG_K=2"));
    cr_assert_eq(cfg.params.eg_n, GC_AUTO);
    cr_assert_eq(cfg.params.eg_k, 2);
}

Test(values, seeds_in_decimal_and_hex_up_to_the_full_64_bits)
{
    load_ok(ENV("GCMPI_SEED=0"));
    cr_assert_eq(cfg.seed, 0);
    load_ok(ENV("GCMPI_SEED=18446744073709551615"));
    cr_assert_eq(cfg.seed, UINT64_MAX);
    load_ok(ENV("GCMPI_SEED=0x2A"));
    cr_assert_eq(cfg.seed, 42);
    load_ok(ENV("GCMPI_SEED=0xFFFFFFFFFFFFFFFF"));
    cr_assert_eq(cfg.seed, UINT64_MAX);
    /* A leading zero is decimal, not octal. */
    load_ok(ENV("GCMPI_SEED=010"));
    cr_assert_eq(cfg.seed, 10);
}

#ifdef GC_HAVE_ZSTD
Test(values, lossless_stage_levels)
{
    load_ok(ENV("GCMPI_LOSSLESS=zstd"));
    cr_assert_eq(cfg.params.zstd_level, 3);
    load_ok(ENV("GCMPI_LOSSLESS=zstd:19"));
    cr_assert_eq(cfg.params.zstd_level, 19);
    load_ok(ENV("GCMPI_LOSSLESS=ZSTD:1"));
    cr_assert_eq(cfg.params.zstd_level, 1);
    load_ok(ENV("GCMPI_LOSSLESS=off"));
    cr_assert_eq(cfg.params.zstd_level, 0);
}
#else
Test(values, lossless_stage_is_refused_without_zstd_in_the_build)
{
    load_fails_with(ENV("GCMPI_LOSSLESS=zstd"),
                    "libgcmpi: GCMPI_LOSSLESS=zstd asks for the zstd stage, but this build has no zstd");
}
#endif

Test(values, algorithms_and_adapt)
{
    static const struct { const char *entry; gcmpi_algo algo; } cases[] = {
        {"GCMPI_ALGO=auto", GCMPI_ALGO_AUTO}, {"GCMPI_ALGO=allgather", GCMPI_ALGO_ALLGATHER},
        {"GCMPI_ALGO=RSAG", GCMPI_ALGO_RSAG}, {"GCMPI_ALGO=native", GCMPI_ALGO_NATIVE},
        {"GCMPI_ALGO=hier", GCMPI_ALGO_HIER}, {"GCMPI_ALGO=rule", GCMPI_ALGO_RULE},
        {"GCMPI_ALGO=passthrough", GCMPI_ALGO_PASS},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        load_ok(ENV((char *)cases[i].entry));
        cr_assert_eq(cfg.algo, cases[i].algo, "%s", cases[i].entry);
    }
    load_ok(ENV("GCMPI_CODEC=topk", "GCMPI_ALGO=sparse_rd"));
    cr_assert_eq(cfg.algo, GCMPI_ALGO_SPARSE_RD);
    load_ok(ENV("GCMPI_NODE_SIZE=4"));
    cr_assert_eq(cfg.node_size, 4);
    load_ok(ENV("GCMPI_NODE_SIZE=auto"));
    cr_assert_eq(cfg.node_size, 0);
    static const struct { char *codec, *adapt; gc_adapt_method method; } adapts[] = {
        {"GCMPI_CODEC=topk", "GCMPI_ADAPT=none", GC_ADAPT_NONE},
        {"GCMPI_CODEC=eg", "GCMPI_ADAPT=gct", GC_ADAPT_GCT},
        {"GCMPI_CODEC=dgc", "GCMPI_ADAPT=EDGC", GC_ADAPT_EDGC},
        {"GCMPI_CODEC=topkq", "GCMPI_ADAPT=variance", GC_ADAPT_VARIANCE},
    };
    for (size_t i = 0; i < sizeof adapts / sizeof adapts[0]; i++) {
        load_ok(ENV(adapts[i].codec, adapts[i].adapt));
        cr_assert_eq(cfg.adapt.method, adapts[i].method, "%s", adapts[i].adapt);
        cr_assert_eq(gc_adapt_active(&cfg.adapt), adapts[i].method != GC_ADAPT_NONE);
    }
}

Test(values, communicator_selection)
{
    load_ok(ENV("GCMPI_COMM=ALL"));
    cr_assert_eq(cfg.comm, GCMPI_COMM_ALL);
    load_ok(ENV("GCMPI_COMM=world"));
    cr_assert_eq(cfg.comm, GCMPI_COMM_WORLD_ONLY);
    load_ok(ENV("GCMPI_COMM=grads, data parallel ,x"));
    cr_assert_eq(cfg.comm, GCMPI_COMM_NAMES);
    cr_assert_eq(cfg.n_comm_names, 3);
    cr_assert_str_eq(cfg.comm_names[0], "grads");
    cr_assert_str_eq(cfg.comm_names[1], "data parallel");
    cr_assert_str_eq(cfg.comm_names[2], "x");
    load_ok(ENV("GCMPI_COMM=a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p"));
    cr_assert_eq(cfg.n_comm_names, GCMPI_MAX_COMM_NAMES);
}

Test(values, statistics_destinations)
{
    static const struct { const char *entry; int err; const char *json; } cases[] = {
        {"GCMPI_STATS=", 0, ""},           {"GCMPI_STATS=0", 0, ""},
        {"GCMPI_STATS=off", 0, ""},        {"GCMPI_STATS=1", 1, ""},
        {"GCMPI_STATS=stderr", 1, ""},     {"GCMPI_STATS=run.json", 0, "run.json"},
        {"GCMPI_STATS=stderr, /tmp/r.JSON", 1, "/tmp/r.JSON"},
        {"GCMPI_STATS=out/r.json,stderr", 1, "out/r.json"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        load_ok(ENV((char *)cases[i].entry));
        cr_assert_eq(cfg.stats_stderr, cases[i].err, "%s", cases[i].entry);
        cr_assert_str_eq(cfg.stats_json, cases[i].json, "%s", cases[i].entry);
    }
}

Test(values, explicit_envp_hides_the_process_environment)
{
    setenv("GCMPI_RATIO", "0.5", 1);
    load_ok(no_env);
    cr_assert_eq(cfg.params.ratio, 0.01);
    load_ok(NULL);
    cr_assert_eq(cfg.params.ratio, 0.5);
    unsetenv("GCMPI_RATIO");
}

Test(values, first_of_duplicate_environment_entries_wins_like_getenv)
{
    load_ok(ENV("GCMPI_SEED=1", "GCMPI_SEED=2"));
    cr_assert_eq(cfg.seed, 1);
}

/* ---- bad values: the exact messages ------------------------------------------------------ */

Test(errors, numbers)
{
    load_fails_with(ENV("GCMPI_RATIO=1.5"),
                    "libgcmpi: GCMPI_RATIO=1.5 is out of range; expected a number in (0, 1]");
    load_fails_with(ENV("GCMPI_RATIO=0"),
                    "libgcmpi: GCMPI_RATIO=0 is out of range; expected a number in (0, 1]");
    load_fails_with(ENV("GCMPI_RATIO=-0.1"),
                    "libgcmpi: GCMPI_RATIO=-0.1 is out of range; expected a number in (0, 1]");
    load_fails_with(ENV("GCMPI_RATIO=1e999"),
                    "libgcmpi: GCMPI_RATIO=1e999 is out of range; expected a number in (0, 1]");
    load_fails_with(ENV("GCMPI_RATIO=nan"),
                    "libgcmpi: GCMPI_RATIO=nan is not a number; expected a number in (0, 1] or auto");
    load_fails_with(ENV("GCMPI_RATIO=inf"),
                    "libgcmpi: GCMPI_RATIO=inf is not a number; expected a number in (0, 1] or auto");
    load_fails_with(ENV("GCMPI_RATIO=0.1x"),
                    "libgcmpi: GCMPI_RATIO=0.1x is not a number; expected a number in (0, 1] or auto");
    load_fails_with(ENV("GCMPI_RATIO=0x1p-3"),
                    "libgcmpi: GCMPI_RATIO=0x1p-3 is not a number; expected a number in (0, 1] or auto");
    load_fails_with(ENV("GCMPI_RATIO=0,5"),
                    "libgcmpi: GCMPI_RATIO=0,5 is not a number; expected a number in (0, 1] or auto");
    load_fails_with(ENV("GCMPI_RATIO="),
                    "libgcmpi: GCMPI_RATIO= is empty; expected a number in (0, 1] or auto");
    load_fails_with(ENV("GCMPI_EF_MOMENTUM=1"),
                    "libgcmpi: GCMPI_EF_MOMENTUM=1 is out of range; expected a number in [0, 1)");
    load_fails_with(ENV("GCMPI_DGC_SAMPLE=1e"),
                    "libgcmpi: GCMPI_DGC_SAMPLE=1e is not a number; expected a number");
}

Test(errors, codec_names_list_the_registry)
{
    load_fails_with(ENV("GCMPI_CODEC=topkk"),
                    "libgcmpi: GCMPI_CODEC=topkk is not a codec; expected one of: none, fp16, bf16, "
                    "int8, qsgd, terngrad, sign, onebit, natural, topk, randk, dgc, powersgd, eg, topkq");
    load_fails_with(ENV("GCMPI_CODEC="),
                    "libgcmpi: GCMPI_CODEC= is empty; expected one of: none, fp16, bf16, "
                    "int8, qsgd, terngrad, sign, onebit, natural, topk, randk, dgc, powersgd, eg, topkq");
}

Test(errors, sizes)
{
    load_fails_with(ENV("GCMPI_BUCKET=12x"),
                    "libgcmpi: GCMPI_BUCKET=12x is not a size; expected an integer with optional K, M or G suffix");
    load_fails_with(ENV("GCMPI_BUCKET=-5"),
                    "libgcmpi: GCMPI_BUCKET=-5 is not a size; expected an integer with optional K, M or G suffix");
    load_fails_with(ENV("GCMPI_MIN_BYTES=1.5K"),
                    "libgcmpi: GCMPI_MIN_BYTES=1.5K is not a size; expected an integer with optional K, M or G suffix");
    load_fails_with(ENV("GCMPI_MIN_BYTES=4KB"),
                    "libgcmpi: GCMPI_MIN_BYTES=4KB is not a size; expected an integer with optional K, M or G suffix");
    load_fails_with(ENV("GCMPI_MIN_BYTES="),
                    "libgcmpi: GCMPI_MIN_BYTES= is empty; expected an integer with optional K, M or G suffix");
    load_fails_with(ENV("GCMPI_EF_MAX_BYTES=17179869184G"),
                    "libgcmpi: GCMPI_EF_MAX_BYTES=17179869184G is out of range; expected at most 18446744073709551615");
    load_fails_with(ENV("GCMPI_MIN_BYTES=18446744073709551616"),
                    "libgcmpi: GCMPI_MIN_BYTES=18446744073709551616 is out of range; expected at most 18446744073709551615");
}

Test(errors, integers)
{
    load_fails_with(ENV("GCMPI_BITS=0"),
                    "libgcmpi: GCMPI_BITS=0 is out of range; expected an integer in [1, 4294967295]");
    load_fails_with(ENV("GCMPI_BITS=4294967296"),
                    "libgcmpi: GCMPI_BITS=4294967296 is out of range; expected an integer in [1, 4294967295]");
    load_fails_with(ENV("GCMPI_RANK=3.5"),
                    "libgcmpi: GCMPI_RANK=3.5 is not an integer; expected an integer in [1, 4294967295]");
    load_fails_with(ENV("GCMPI_VERBOSE=4"),
                    "libgcmpi: GCMPI_VERBOSE=4 is out of range; expected an integer in [0, 3]");
    load_fails_with(ENV("GCMPI_VERBOSE=two"),
                    "libgcmpi: GCMPI_VERBOSE=two is not an integer; expected an integer in [0, 3]");
    load_fails_with(ENV("GCMPI_EG_K=fast"),
                    "libgcmpi: GCMPI_EG_K=fast is not an integer; expected an integer in [-999999, 2147483647] or auto");
    load_fails_with(ENV("GCMPI_EG_N=-1000000"),
                    "libgcmpi: GCMPI_EG_N=-1000000 is out of range; expected an integer in [-999999, 2147483647] or auto");
    load_fails_with(ENV("GCMPI_SEED=-1"),
                    "libgcmpi: GCMPI_SEED=-1 is not an integer; expected an integer in [0, 2^64 - 1], decimal or 0x hexadecimal");
    load_fails_with(ENV("GCMPI_SEED=18446744073709551616"),
                    "libgcmpi: GCMPI_SEED=18446744073709551616 is out of range; expected an integer in [0, 2^64 - 1], decimal or 0x hexadecimal");
    load_fails_with(ENV("GCMPI_SEED=0x10000000000000000"),
                    "libgcmpi: GCMPI_SEED=0x10000000000000000 is out of range; expected an integer in [0, 2^64 - 1], decimal or 0x hexadecimal");
    load_fails_with(ENV("GCMPI_SEED=0x"),
                    "libgcmpi: GCMPI_SEED=0x is not an integer; expected an integer in [0, 2^64 - 1], decimal or 0x hexadecimal");
}

Test(errors, keywords_and_booleans)
{
    load_fails_with(ENV("GCMPI_DISABLE=maybe"),
                    "libgcmpi: GCMPI_DISABLE=maybe is not a boolean; expected 0, 1, true, false, yes, no, on or off");
    load_fails_with(ENV("GCMPI_EF="),
                    "libgcmpi: GCMPI_EF= is empty; expected auto or 0, 1, true, false, yes, no, on or off");
    load_fails_with(ENV("GCMPI_ALGO=ring"),
                    "libgcmpi: GCMPI_ALGO=ring is not an algorithm; expected auto, rule, allgather, rsag, native, hier, sparse_rd or passthrough");
    load_fails_with(ENV("GCMPI_CODEC=int8", "GCMPI_ALGO=sparse_rd"),
                    "libgcmpi: GCMPI_ALGO=sparse_rd does not work with GCMPI_CODEC=int8; sparse_rd works with: topk, randk, dgc, topkq");
    load_fails_with(ENV("GCMPI_NODE_SIZE=0"),
                    "libgcmpi: GCMPI_NODE_SIZE=0 is out of range; expected auto or an integer in [1, 2147483647]");
    load_fails_with(ENV("GCMPI_NODE_SIZE=four"),
                    "libgcmpi: GCMPI_NODE_SIZE=four is not an integer; expected auto or an integer in [1, 2147483647]");
    load_fails_with(ENV("GCMPI_QSGD_CODING=huffman"),
                    "libgcmpi: GCMPI_QSGD_CODING=huffman is not a QSGD coding; expected fixed or elias");
    load_fails_with(ENV("GCMPI_ADAPT=magic"),
                    "libgcmpi: GCMPI_ADAPT=magic is not an adaptive method; expected none, gct, edgc or variance");
    load_fails_with(ENV("GCMPI_ADAPT="),
                    "libgcmpi: GCMPI_ADAPT= is empty; expected none, gct, edgc or variance");
    load_fails_with(ENV("GCMPI_GCT_FORM=eq8"),
                    "libgcmpi: GCMPI_GCT_FORM=eq8 is not a GCT form; expected eq9 or alg2");
    load_fails_with(ENV("GCMPI_LOSSLESS=lz4"),
                    "libgcmpi: GCMPI_LOSSLESS=lz4 is not a lossless stage; expected off, zstd or zstd:LEVEL with LEVEL in [1, 19]");
    load_fails_with(ENV("GCMPI_LOSSLESS=zstd:20"),
                    "libgcmpi: GCMPI_LOSSLESS=zstd:20 is out of range; expected off, zstd or zstd:LEVEL with LEVEL in [1, 19]");
    load_fails_with(ENV("GCMPI_LOSSLESS=zstd:0"),
                    "libgcmpi: GCMPI_LOSSLESS=zstd:0 is out of range; expected off, zstd or zstd:LEVEL with LEVEL in [1, 19]");
    load_fails_with(ENV("GCMPI_LOSSLESS=zstd:"),
                    "libgcmpi: GCMPI_LOSSLESS=zstd: is not a lossless stage; expected off, zstd or zstd:LEVEL with LEVEL in [1, 19]");
}

Test(errors, communicators_and_statistics)
{
    load_fails_with(ENV("GCMPI_COMM=a,,b"),
                    "libgcmpi: GCMPI_COMM=a,,b has an empty name; expected world, all or up to 16 comma-separated communicator names, and up to 16 !NAME exclusions");
    load_fails_with(ENV("GCMPI_COMM=world,grads"),
                    "libgcmpi: GCMPI_COMM=world,grads mixes world or all with names; expected world, all or up to 16 comma-separated communicator names, and up to 16 !NAME exclusions");
    load_fails_with(ENV("GCMPI_COMM=a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q"),
                    "libgcmpi: GCMPI_COMM=a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q lists more than 16 names; expected world, all or up to 16 comma-separated communicator names, and up to 16 !NAME exclusions");
    load_fails_with(ENV("GCMPI_COMM="),
                    "libgcmpi: GCMPI_COMM= is empty; expected world, all or up to 16 comma-separated communicator names, and up to 16 !NAME exclusions");
    char entry[200] = "GCMPI_COMM=", want[400];
    memset(entry + 11, 'n', 128);
    snprintf(want, sizeof want, "libgcmpi: %s has a name longer than 127 characters; expected world, "
             "all or up to 16 comma-separated communicator names, and up to 16 !NAME exclusions", entry);
    load_fails_with(ENV(entry), want);

    load_fails_with(ENV("GCMPI_STATS=out.txt"),
                    "libgcmpi: GCMPI_STATS=out.txt is not a statistics destination; expected off, stderr, a path ending in .json, or stderr and a .json path separated by a comma");
    load_fails_with(ENV("GCMPI_STATS=a.json,b.json"),
                    "libgcmpi: GCMPI_STATS=a.json,b.json names two JSON files; expected off, stderr, a path ending in .json, or stderr and a .json path separated by a comma");
    load_fails_with(ENV("GCMPI_STATS=stderr,"),
                    "libgcmpi: GCMPI_STATS=stderr, has an empty entry; expected off, stderr, a path ending in .json, or stderr and a .json path separated by a comma");
}

Test(errors, long_values_are_shortened_in_the_message)
{
    char entry[600] = "GCMPI_CODEC=";
    memset(entry + 12, 'x', 500);
    gcmpi_config_load(&cfg, &res, ENV(entry));
    cr_assert(!res.ok);
    char want[300] = "libgcmpi: GCMPI_CODEC=";
    memset(want + strlen(want), 'x', CFG_SHOW_MAX);
    strcat(want, "... is not a codec; expected one of: ");
    cr_assert(strncmp(res.error, want, strlen(want)) == 0, "%s", res.error);
}

/* ---- codec parameters: the codec's message in the user's terms ---------------------- */

Test(codec_params, message_names_map_back_to_variables)
{
    const char *value, *rest;
    size_t len;
    cr_assert_eq(cfg_param_var("bits=9 is out of range; expected an integer in [2, 8]", &value, &len, &rest),
                 CFG_BITS);
    cr_assert_eq(len, 1);
    cr_assert_eq(*value, '9');
    cr_assert_str_eq(rest, " is out of range; expected an integer in [2, 8]");
    cr_assert_eq(cfg_param_var("zstd_level=3 asks for the zstd stage", &value, &len, &rest), CFG_LOSSLESS);
    cr_assert_eq(cfg_param_var("ratio=1.5 is out", &value, &len, &rest), CFG_RATIO);
    cr_assert_eq(cfg_param_var("bucket=0", &value, &len, &rest), CFG_BUCKET);
    cr_assert_str_eq(rest, "");
    cr_assert_eq(cfg_param_var("dgc_sample=2 is out", &value, &len, &rest), CFG_DGC_SAMPLE);
    cr_assert_eq(cfg_param_var("rank=0 is out", &value, &len, &rest), CFG_RANK);
    cr_assert_eq(cfg_param_var("eg_k=31 is out", &value, &len, &rest), CFG_EG_K);
    cr_assert_eq(cfg_param_var("colour=red is out", &value, &len, &rest), -1);
    cr_assert_eq(cfg_param_var("no parameter named", &value, &len, &rest), -1);
}

Test(codec_params, qsgd_bits_outside_its_range_name_the_variable)
{
    load_fails_with(ENV("GCMPI_CODEC=qsgd", "GCMPI_BITS=9"),
                    "libgcmpi: GCMPI_BITS=9 is out of range; expected an integer in [2, 8]");
}

Test(codec_params, bucket_above_two_to_the_31_names_the_variable_as_given)
{
    load_fails_with(ENV("GCMPI_CODEC=qsgd", "GCMPI_BUCKET=4G"),
                    "libgcmpi: GCMPI_BUCKET=4G is out of range; expected an integer in [1, 2^31]");
}

Test(codec_params, eg_and_dgc_parameters_name_their_variables)
{
    load_fails_with(ENV("GCMPI_CODEC=eg", "GCMPI_EG_N=61"),
                    "libgcmpi: GCMPI_EG_N=61 is out of range; expected an integer in [-60, 60] or auto");
    load_fails_with(ENV("GCMPI_CODEC=dgc", "GCMPI_DGC_SAMPLE=2"),
                    "libgcmpi: GCMPI_DGC_SAMPLE=2 is out of range; expected a number in (0, 1]");
    load_fails_with(ENV("GCMPI_CODEC=dgc", "GCMPI_DGC_TOLERANCE=11"),
                    "libgcmpi: GCMPI_DGC_TOLERANCE=11 is out of range; expected a number in [0, 10]");
}

Test(codec_params, powersgd_rank_outside_its_range_names_the_variable)
{
    load_fails_with(ENV("GCMPI_CODEC=powersgd", "GCMPI_RANK=2000"),
                    "libgcmpi: GCMPI_RANK=2000 is out of range; expected an integer in [1, 1024]");
}

Test(codec_params, parameters_a_codec_does_not_read_are_not_checked_by_it)
{
    load_ok(ENV("GCMPI_CODEC=none", "GCMPI_BITS=99", "GCMPI_RANK=5000"));
    cr_assert_eq(cfg.params.bits, 99);
}

/* ---- combinations ---------------------------------------------------------------------------- */

Test(combinations, native_algorithm_with_a_codec_mpi_cannot_sum_is_rejected)
{
    load_fails_with(ENV("GCMPI_CODEC=topk", "GCMPI_ALGO=native"),
                    "libgcmpi: GCMPI_ALGO=native does not work with GCMPI_CODEC=topk; "
                    "native works with: none, int8, randk, powersgd");
    load_fails_with(ENV("GCMPI_CODEC=fp16", "GCMPI_ALGO=native"),
                    "libgcmpi: GCMPI_ALGO=native does not work with GCMPI_CODEC=fp16; "
                    "native works with: none, int8, randk, powersgd");
}

Test(combinations, native_algorithm_is_accepted_for_the_native_codecs)
{
    static const char *const native[] = {"none", "randk", "int8", "powersgd"};
    for (size_t i = 0; i < 4; i++) {
        char entry[64];
        snprintf(entry, sizeof entry, "GCMPI_CODEC=%s", native[i]);
        load_ok(ENV(entry, "GCMPI_ALGO=native"));
        cr_assert_eq(cfg.algo, GCMPI_ALGO_NATIVE);
        cr_assert(gcmpi_codec_has_native_path(cfg.codec));
    }
    cr_assert(!gcmpi_codec_has_native_path(gc_codec_by_name("topk")));
    cr_assert(!gcmpi_codec_has_native_path(NULL));
}

Test(combinations, native_algorithm_has_no_payload_for_zstd_or_crc)
{
    load_fails_with(ENV("GCMPI_CODEC=randk", "GCMPI_ALGO=native", "GCMPI_CRC=1"),
                    "libgcmpi: GCMPI_CRC=1 does not work with GCMPI_ALGO=native (MPI sums the values "
                    "itself, there is no payload to check); expected 0");
#ifdef GC_HAVE_ZSTD
    load_fails_with(ENV("GCMPI_CODEC=int8", "GCMPI_ALGO=native", "GCMPI_LOSSLESS=zstd"),
                    "libgcmpi: GCMPI_LOSSLESS=zstd does not work with GCMPI_ALGO=native (MPI sums the "
                    "values itself, there is no payload to compress); expected off");
#endif
}

Test(combinations, momentum_with_a_dense_codec_is_rejected)
{
    gcmpi_config_load(&cfg, &res, ENV("GCMPI_CODEC=int8", "GCMPI_EF_MOMENTUM=0.9"));
    cr_assert(!res.ok);
    const char *want = "libgcmpi: GCMPI_EF_MOMENTUM=0.9 does not work with GCMPI_CODEC=int8; "
                       "momentum correction works with the sparse codecs: ";
    cr_assert(strncmp(res.error, want, strlen(want)) == 0, "%s", res.error);
}

Test(combinations, momentum_is_accepted_exactly_for_sparse_codecs)
{
    for (size_t i = 0; i < gc_codec_count(); i++) {
        const gc_codec *c = gc_codec_at(i);
        char entry[64];
        snprintf(entry, sizeof entry, "GCMPI_CODEC=%s", gc_codec_name(c));
        gcmpi_config_load(&cfg, &res, ENV(entry, "GCMPI_EF_MOMENTUM=0.9"));
        cr_assert_eq(res.ok, (gc_codec_flags(c) & GC_SPARSE) != 0, "%s: %s", entry, res.error);
    }
}

Test(combinations, momentum_works_with_topk_randk_and_dgc)
{
    load_ok(ENV("GCMPI_CODEC=topk", "GCMPI_EF_MOMENTUM=0.9"));
    cr_assert_eq(cfg.ef_momentum, 0.9);
    load_ok(ENV("GCMPI_CODEC=randk", "GCMPI_EF_MOMENTUM=0.5"));
    load_ok(ENV("GCMPI_CODEC=dgc", "GCMPI_EF_MOMENTUM=0.1"));
}

Test(combinations, momentum_needs_error_feedback)
{
    load_fails_with(ENV("GCMPI_CODEC=topk", "GCMPI_EF_MOMENTUM=0.9", "GCMPI_EF=0"),
                    "libgcmpi: GCMPI_EF_MOMENTUM=0.9 needs error feedback, but GCMPI_EF=0; expected "
                    "GCMPI_EF_MOMENTUM=0 or GCMPI_EF=1");
}

Test(combinations, zero_residual_memory_needs_error_feedback_off)
{
    load_fails_with(ENV("GCMPI_EF_MAX_BYTES=0"),
                    "libgcmpi: GCMPI_EF_MAX_BYTES=0 is out of range; expected at least 1 while "
                    "GCMPI_EF=1 (GCMPI_EF=0 turns error feedback off)");
    load_ok(ENV("GCMPI_EF_MAX_BYTES=0", "GCMPI_EF=0"));
    cr_assert_eq(cfg.ef_max_bytes, 0);
}

/* ---- unknown names -------------------------------------------------------------------------- */

static void expect_one_warning(char **env, const char *warning)
{
    load_ok(env);
    cr_assert_eq(res.n_warnings, 1, "%d warnings", res.n_warnings);
    cr_assert_str_eq(res.warnings[0], warning);
}

Test(unknown, misspelt_names_warn_with_the_closest_known_name)
{
    expect_one_warning(ENV("GCMPI_RATO=0.1"),
                       "libgcmpi: unknown variable GCMPI_RATO=0.1 ignored; did you mean GCMPI_RATIO?");
    cr_assert_eq(cfg.params.ratio, 0.01);
    expect_one_warning(ENV("GCMPI_CODECS=topk"),
                       "libgcmpi: unknown variable GCMPI_CODECS=topk ignored; did you mean GCMPI_CODEC?");
    expect_one_warning(ENV("GCMPI_SEDE=1"),
                       "libgcmpi: unknown variable GCMPI_SEDE=1 ignored; did you mean GCMPI_SEED?");
    expect_one_warning(ENV("GCMPI_ratio=0.5"),
                       "libgcmpi: unknown variable GCMPI_ratio=0.5 ignored; did you mean GCMPI_RATIO?");
    expect_one_warning(ENV("GCMPI_EF_MOMENTUN=0.9"),
                       "libgcmpi: unknown variable GCMPI_EF_MOMENTUN=0.9 ignored; did you mean GCMPI_EF_MOMENTUM?");
    expect_one_warning(ENV("GCMPI_MINBYTES=1K"),
                       "libgcmpi: unknown variable GCMPI_MINBYTES=1K ignored; did you mean GCMPI_MIN_BYTES?");
}

Test(unknown, names_close_to_nothing_warn_without_a_suggestion)
{
    expect_one_warning(ENV("GCMPI_XYZZY_FOO=1"), "libgcmpi: unknown variable GCMPI_XYZZY_FOO=1 ignored");
    expect_one_warning(ENV("GCMPI_XY=1"), "libgcmpi: unknown variable GCMPI_XY=1 ignored");
    expect_one_warning(ENV("GCMPI_=1"), "libgcmpi: unknown variable GCMPI_=1 ignored");
}

Test(unknown, other_variables_are_not_ours)
{
    load_ok(ENV("PATH=/bin", "GCMPIX=1", "HOROVOD_FUSION_THRESHOLD=0", "GCMPI_NOEQUALS"));
    cr_assert_eq(res.n_warnings, 0);
}

Test(unknown, too_many_warnings_end_with_a_summary)
{
    load_ok(ENV("GCMPI_A1=1", "GCMPI_A2=1", "GCMPI_A3=1", "GCMPI_A4=1", "GCMPI_A5=1", "GCMPI_A6=1",
                "GCMPI_A7=1", "GCMPI_A8=1", "GCMPI_A9=1", "GCMPI_A10=1"));
    cr_assert_eq(res.n_warnings, 8);
    cr_assert_str_eq(res.warnings[6], "libgcmpi: unknown variable GCMPI_A7=1 ignored");
    cr_assert_str_eq(res.warnings[7], "libgcmpi: more than 7 warnings; the rest are not shown");
}

Test(unknown, edit_distance_counts_transpositions_once_and_ignores_case)
{
    cr_assert_eq(cfg_edit_distance("kitten", "sitting"), 3);
    cr_assert_eq(cfg_edit_distance("GCMPI_SEDE", "GCMPI_SEED"), 1);
    cr_assert_eq(cfg_edit_distance("", "abc"), 3);
    cr_assert_eq(cfg_edit_distance("Ratio", "RATIO"), 0);
    cr_assert_null(cfg_suggest("GCMPI_COMPLETELY_DIFFERENT"));
}

/* ---- the adaptive layer (GCMPI_ADAPT, GCMPI_GCT_*, GCMPI_EDGC_*, GCMPI_VAR_*, GCMPI_RATIO=auto) */

Test(adapt, every_parameter_is_stored)
{
    load_ok(ENV("GCMPI_CODEC=topkq", "GCMPI_ADAPT=variance", "GCMPI_GCT_LAMBDA=0", "GCMPI_GCT_LR=0.5",
                "GCMPI_GCT_EPS=1e-6", "GCMPI_GCT_DECAY=1", "GCMPI_GCT_DECAY_EVERY=7",
                "GCMPI_GCT_FORM=ALG2", "GCMPI_EDGC_ALPHA=1", "GCMPI_EDGC_BETA=0.25",
                "GCMPI_EDGC_WINDOW=9", "GCMPI_EDGC_MIN=3", "GCMPI_EDGC_MAX=Auto",
                "GCMPI_VAR_ALPHA=4", "GCMPI_VAR_MEMORY=100000", "GCMPI_VAR_MIN=0.001",
                "GCMPI_VAR_MAX=0.5", "GCMPI_VAR_WIDTHS= 2, 3 ,8", "GCMPI_VAR_TARGET=0.5",
                "GCMPI_RATIO_BUDGET=2.5", "GCMPI_RATIO_MIN=0.2", "GCMPI_RATIO_MAX=0.2"));
    const gc_adapt_config *a = &cfg.adapt;
    cr_assert_eq(a->method, GC_ADAPT_VARIANCE);
    cr_assert_eq(a->gct.lambda, 0.0);
    cr_assert_eq(a->gct.lr, 0.5);
    cr_assert_eq(a->gct.eps, 1e-6);
    cr_assert_eq(a->gct.decay, 1.0);
    cr_assert_eq(a->gct.decay_every, 7);
    cr_assert_eq(a->gct.alg2, 1);
    cr_assert_eq(a->edgc.alpha, 1.0);
    cr_assert_eq(a->edgc.beta, 0.25);
    cr_assert_eq(a->edgc.window, 9);
    /* edgc is not selected: any positive bound is kept as it is. */
    cr_assert_eq(a->edgc.min, 3.0);
    cr_assert_eq(a->edgc.max, 0.0);
    cr_assert_eq(a->var.alpha, 4.0);
    cr_assert_eq(a->var.memory, 100000);
    cr_assert_eq(a->var.min, 0.001);
    cr_assert_eq(a->var.max, 0.5);
    cr_assert_eq(a->var.n_widths, 3);
    cr_assert_eq(a->var.widths[0], 2);
    cr_assert_eq(a->var.widths[1], 3);
    cr_assert_eq(a->var.widths[2], 8);
    cr_assert_eq(a->var.widths[3], 0);
    cr_assert_eq(a->var.target, 0.5);
    cr_assert_eq(a->ratio_auto.on, 0);
    cr_assert_eq(a->ratio_auto.budget_s, 2.5);
    cr_assert_eq(a->ratio_auto.min, 0.2);
    cr_assert_eq(a->ratio_auto.max, 0.2);
    cr_assert_eq(cfg.params.ratio, 0.01);
    load_ok(ENV("GCMPI_GCT_FORM=eq9", "GCMPI_VAR_WIDTHS=1,2,3,4,5,6,7,8", "GCMPI_VAR_MEMORY=1",
                "GCMPI_VAR_ALPHA=0", "GCMPI_GCT_DECAY_EVERY=9223372036854775807"));
    cr_assert_eq(cfg.adapt.gct.alg2, 0);
    cr_assert_eq(cfg.adapt.var.n_widths, 8);
    cr_assert_eq(cfg.adapt.var.widths[7], 8);
    cr_assert_eq(cfg.adapt.var.memory, 1);
    cr_assert_eq(cfg.adapt.var.alpha, 0.0);
    cr_assert_eq(cfg.adapt.gct.decay_every, 9223372036854775807ull);
}

Test(adapt, ratio_auto_starts_at_the_largest_ratio)
{
    load_ok(ENV("GCMPI_CODEC=topk", "GCMPI_RATIO=auto"));
    cr_assert_eq(cfg.adapt.ratio_auto.on, 1);
    cr_assert_eq(cfg.params.ratio, 0.1);
    cr_assert(gc_adapt_active(&cfg.adapt));
    load_ok(ENV("GCMPI_CODEC=randk", "GCMPI_RATIO=AUTO", "GCMPI_RATIO_MAX=0.25", "GCMPI_RATIO_MIN=0.01",
                "GCMPI_RATIO_BUDGET=0.5"));
    cr_assert_eq(cfg.adapt.ratio_auto.on, 1);
    cr_assert_eq(cfg.params.ratio, 0.25);
    cr_assert_eq(cfg.adapt.ratio_auto.min, 0.01);
    cr_assert_eq(cfg.adapt.ratio_auto.budget_s, 0.5);
    char text[4096];
    gcmpi_config_describe(&cfg, text, sizeof text);
    cr_assert(strstr(text, "GCMPI_RATIO=auto\nGCMPI_RATIO_BUDGET=0.5\nGCMPI_RATIO_MIN=0.01\n"
                           "GCMPI_RATIO_MAX=0.25\n") != NULL, "%s", text);
    /* A number turns auto off again. */
    load_ok(ENV("GCMPI_CODEC=topk", "GCMPI_RATIO=0.3"));
    cr_assert_eq(cfg.adapt.ratio_auto.on, 0);
    cr_assert_eq(cfg.params.ratio, 0.3);
}

Test(adapt, edgc_bounds_are_ratios_or_ranks_by_codec)
{
    load_ok(ENV("GCMPI_CODEC=dgc", "GCMPI_ADAPT=edgc", "GCMPI_EDGC_MIN=0.001", "GCMPI_EDGC_MAX=1"));
    cr_assert_eq(cfg.adapt.edgc.min, 0.001);
    cr_assert_eq(cfg.adapt.edgc.max, 1.0);
    load_ok(ENV("GCMPI_CODEC=powersgd", "GCMPI_ADAPT=edgc", "GCMPI_EDGC_MIN=1", "GCMPI_EDGC_MAX=1024"));
    cr_assert_eq(cfg.adapt.edgc.min, 1.0);
    cr_assert_eq(cfg.adapt.edgc.max, 1024.0);
    load_ok(ENV("GCMPI_CODEC=powersgd", "GCMPI_ADAPT=edgc", "GCMPI_EDGC_MIN=auto", "GCMPI_EDGC_MAX=8"));
    cr_assert_eq(cfg.adapt.edgc.min, 0.0);
    cr_assert_eq(cfg.adapt.edgc.max, 8.0);
}

Test(adapt, parameters_of_a_method_not_selected_are_accepted)
{
    /* Users keep config files with every method's settings and switch
     * GCMPI_ADAPT: the others' values are judged only for their own form. */
    load_ok(ENV("GCMPI_CODEC=eg", "GCMPI_ADAPT=gct", "GCMPI_EDGC_MAX=500", "GCMPI_EDGC_WINDOW=5",
                "GCMPI_VAR_WIDTHS=2,4", "GCMPI_RATIO_BUDGET=1"));
    cr_assert_eq(cfg.adapt.method, GC_ADAPT_GCT);
    cr_assert_eq(cfg.adapt.edgc.max, 500.0);
    load_ok(ENV("GCMPI_CODEC=topk", "GCMPI_GCT_LAMBDA=3", "GCMPI_GCT_FORM=alg2"));
    cr_assert_eq(cfg.adapt.method, GC_ADAPT_NONE);
    cr_assert_eq(cfg.adapt.gct.lambda, 3.0);
}

Test(adapt, bad_numbers_name_the_variable_and_the_range)
{
    load_fails_with(ENV("GCMPI_GCT_LAMBDA=-1e-9"),
                    "libgcmpi: GCMPI_GCT_LAMBDA=-1e-9 is out of range; expected a number >= 0");
    load_fails_with(ENV("GCMPI_GCT_LAMBDA=big"),
                    "libgcmpi: GCMPI_GCT_LAMBDA=big is not a number; expected a number >= 0");
    load_fails_with(ENV("GCMPI_GCT_LR=0"), "libgcmpi: GCMPI_GCT_LR=0 is out of range; expected a number > 0");
    load_fails_with(ENV("GCMPI_GCT_LR=1e999"),
                    "libgcmpi: GCMPI_GCT_LR=1e999 is out of range; expected a number > 0");
    load_fails_with(ENV("GCMPI_GCT_EPS="), "libgcmpi: GCMPI_GCT_EPS= is empty; expected a number > 0");
    load_fails_with(ENV("GCMPI_GCT_DECAY=0"),
                    "libgcmpi: GCMPI_GCT_DECAY=0 is out of range; expected a number in (0, 1]");
    load_fails_with(ENV("GCMPI_GCT_DECAY=1.01"),
                    "libgcmpi: GCMPI_GCT_DECAY=1.01 is out of range; expected a number in (0, 1]");
    load_fails_with(ENV("GCMPI_EDGC_ALPHA=0"),
                    "libgcmpi: GCMPI_EDGC_ALPHA=0 is out of range; expected a number in (0, 1]");
    load_fails_with(ENV("GCMPI_EDGC_BETA=2"),
                    "libgcmpi: GCMPI_EDGC_BETA=2 is out of range; expected a number in (0, 1]");
    load_fails_with(ENV("GCMPI_VAR_ALPHA=4.5"),
                    "libgcmpi: GCMPI_VAR_ALPHA=4.5 is out of range; expected a number in [0, 4]");
    load_fails_with(ENV("GCMPI_VAR_ALPHA=-0.5"),
                    "libgcmpi: GCMPI_VAR_ALPHA=-0.5 is out of range; expected a number in [0, 4]");
    load_fails_with(ENV("GCMPI_VAR_TARGET=1"),
                    "libgcmpi: GCMPI_VAR_TARGET=1 is out of range; expected a number in (0, 1)");
    load_fails_with(ENV("GCMPI_VAR_TARGET=0"),
                    "libgcmpi: GCMPI_VAR_TARGET=0 is out of range; expected a number in (0, 1)");
    load_fails_with(ENV("GCMPI_RATIO_BUDGET=0"),
                    "libgcmpi: GCMPI_RATIO_BUDGET=0 is out of range; expected a number > 0");
    load_fails_with(ENV("GCMPI_RATIO_BUDGET=10ms"),
                    "libgcmpi: GCMPI_RATIO_BUDGET=10ms is not a number; expected a number > 0");
    load_fails_with(ENV("GCMPI_RATIO_MIN=0"),
                    "libgcmpi: GCMPI_RATIO_MIN=0 is out of range; expected a number in (0, 1]");
    load_fails_with(ENV("GCMPI_RATIO_MAX=1.5"),
                    "libgcmpi: GCMPI_RATIO_MAX=1.5 is out of range; expected a number in (0, 1]");
    load_fails_with(ENV("GCMPI_RATIO_MAX=auto"),
                    "libgcmpi: GCMPI_RATIO_MAX=auto is not a number; expected a number in (0, 1]");
    load_fails_with(ENV("GCMPI_RATIO=aut"),
                    "libgcmpi: GCMPI_RATIO=aut is not a number; expected a number in (0, 1] or auto");
}

Test(adapt, bad_integers_name_the_variable_and_the_range)
{
    load_fails_with(ENV("GCMPI_GCT_DECAY_EVERY=0"),
                    "libgcmpi: GCMPI_GCT_DECAY_EVERY=0 is out of range; expected an integer in [1, 2^63 - 1]");
    load_fails_with(ENV("GCMPI_GCT_DECAY_EVERY=9223372036854775808"),
                    "libgcmpi: GCMPI_GCT_DECAY_EVERY=9223372036854775808 is out of range; expected an "
                    "integer in [1, 2^63 - 1]");
    load_fails_with(ENV("GCMPI_EDGC_WINDOW=1.5"),
                    "libgcmpi: GCMPI_EDGC_WINDOW=1.5 is not an integer; expected an integer in [1, 2^63 - 1]");
    load_fails_with(ENV("GCMPI_EDGC_WINDOW="),
                    "libgcmpi: GCMPI_EDGC_WINDOW= is empty; expected an integer in [1, 2^63 - 1]");
    load_fails_with(ENV("GCMPI_VAR_MEMORY=100001"),
                    "libgcmpi: GCMPI_VAR_MEMORY=100001 is out of range; expected an integer in [1, 100000]");
    load_fails_with(ENV("GCMPI_VAR_MEMORY=0"),
                    "libgcmpi: GCMPI_VAR_MEMORY=0 is out of range; expected an integer in [1, 100000]");
    load_fails_with(ENV("GCMPI_VAR_MEMORY=lots"),
                    "libgcmpi: GCMPI_VAR_MEMORY=lots is not an integer; expected an integer in [1, 100000]");
}

Test(adapt, bad_bounds_follow_the_codec_edgc_adapts)
{
    load_fails_with(ENV("GCMPI_CODEC=topk", "GCMPI_ADAPT=edgc", "GCMPI_EDGC_MAX=2"),
                    "libgcmpi: GCMPI_EDGC_MAX=2 is out of range; expected auto or a ratio in (0, 1] "
                    "with GCMPI_CODEC=topk");
    load_fails_with(ENV("GCMPI_CODEC=topkq", "GCMPI_ADAPT=edgc", "GCMPI_EDGC_MIN=0"),
                    "libgcmpi: GCMPI_EDGC_MIN=0 is out of range; expected auto or a ratio in (0, 1] "
                    "with GCMPI_CODEC=topkq");
    load_fails_with(ENV("GCMPI_CODEC=powersgd", "GCMPI_ADAPT=edgc", "GCMPI_EDGC_MAX=1025"),
                    "libgcmpi: GCMPI_EDGC_MAX=1025 is out of range; expected auto or a rank in [1, 1024] "
                    "with GCMPI_CODEC=powersgd");
    load_fails_with(ENV("GCMPI_CODEC=powersgd", "GCMPI_ADAPT=edgc", "GCMPI_EDGC_MIN=0.5"),
                    "libgcmpi: GCMPI_EDGC_MIN=0.5 is out of range; expected auto or a rank in [1, 1024] "
                    "with GCMPI_CODEC=powersgd");
    load_fails_with(ENV("GCMPI_CODEC=powersgd", "GCMPI_ADAPT=edgc", "GCMPI_EDGC_MIN=2.5"),
                    "libgcmpi: GCMPI_EDGC_MIN=2.5 is not an integer; expected auto or a rank in [1, 1024] "
                    "with GCMPI_CODEC=powersgd");
    load_fails_with(ENV("GCMPI_CODEC=powersgd", "GCMPI_ADAPT=edgc", "GCMPI_EDGC_MIN=few"),
                    "libgcmpi: GCMPI_EDGC_MIN=few is not a number; expected auto or a rank in [1, 1024] "
                    "with GCMPI_CODEC=powersgd");
    /* Without edgc selected the bounds need only be positive. */
    load_fails_with(ENV("GCMPI_EDGC_MAX=0"),
                    "libgcmpi: GCMPI_EDGC_MAX=0 is out of range; expected auto or a number > 0");
    load_fails_with(ENV("GCMPI_EDGC_MIN="), "libgcmpi: GCMPI_EDGC_MIN= is empty; expected auto or a number > 0");
    load_fails_with(ENV("GCMPI_VAR_MIN=1.5"),
                    "libgcmpi: GCMPI_VAR_MIN=1.5 is out of range; expected auto or a ratio in (0, 1]");
    load_fails_with(ENV("GCMPI_VAR_MAX=none"),
                    "libgcmpi: GCMPI_VAR_MAX=none is not a number; expected auto or a ratio in (0, 1]");
}

Test(adapt, minimum_above_maximum_names_both)
{
    load_fails_with(ENV("GCMPI_CODEC=topk", "GCMPI_ADAPT=edgc", "GCMPI_EDGC_MIN=0.5", "GCMPI_EDGC_MAX=0.1"),
                    "libgcmpi: GCMPI_EDGC_MIN=0.5 is above GCMPI_EDGC_MAX=0.1; expected "
                    "GCMPI_EDGC_MIN <= GCMPI_EDGC_MAX");
    load_fails_with(ENV("GCMPI_VAR_MIN=0.2", "GCMPI_VAR_MAX=.1"),
                    "libgcmpi: GCMPI_VAR_MIN=0.2 is above GCMPI_VAR_MAX=.1; expected "
                    "GCMPI_VAR_MIN <= GCMPI_VAR_MAX");
    load_fails_with(ENV("GCMPI_RATIO_MIN=0.2", "GCMPI_RATIO_MAX=0.1"),
                    "libgcmpi: GCMPI_RATIO_MIN=0.2 is above GCMPI_RATIO_MAX=0.1; expected "
                    "GCMPI_RATIO_MIN <= GCMPI_RATIO_MAX");
    /* Against a default, the message blames the one that is set. */
    load_fails_with(ENV("GCMPI_RATIO_MIN=0.5"),
                    "libgcmpi: GCMPI_RATIO_MIN=0.5 is above GCMPI_RATIO_MAX=0.1 (default); expected "
                    "GCMPI_RATIO_MIN <= GCMPI_RATIO_MAX");
    load_fails_with(ENV("GCMPI_RATIO_MAX=0.00001"),
                    "libgcmpi: GCMPI_RATIO_MAX=0.00001 is below GCMPI_RATIO_MIN=0.0001 (default); expected "
                    "GCMPI_RATIO_MIN <= GCMPI_RATIO_MAX");
    /* auto on either side is not compared; equal bounds are allowed. */
    load_ok(ENV("GCMPI_VAR_MIN=0.9", "GCMPI_VAR_MAX=auto"));
    load_ok(ENV("GCMPI_EDGC_MIN=auto", "GCMPI_EDGC_MAX=0.001"));
    load_ok(ENV("GCMPI_VAR_MIN=0.3", "GCMPI_VAR_MAX=0.3"));
}

#define WIDTHS_EXPECT "expected 1 to 8 comma-separated integers in [1, 8], strictly ascending"

Test(adapt, bad_width_lists_say_what_is_wrong)
{
    load_fails_with(ENV("GCMPI_VAR_WIDTHS=3,2"),
                    "libgcmpi: GCMPI_VAR_WIDTHS=3,2 is not strictly ascending (2 after 3); " WIDTHS_EXPECT);
    load_fails_with(ENV("GCMPI_VAR_WIDTHS=2,2"),
                    "libgcmpi: GCMPI_VAR_WIDTHS=2,2 is not strictly ascending (2 after 2); " WIDTHS_EXPECT);
    load_fails_with(ENV("GCMPI_VAR_WIDTHS=0,4"),
                    "libgcmpi: GCMPI_VAR_WIDTHS=0,4 has width 0 out of range; " WIDTHS_EXPECT);
    load_fails_with(ENV("GCMPI_VAR_WIDTHS=4,9"),
                    "libgcmpi: GCMPI_VAR_WIDTHS=4,9 has width 9 out of range; " WIDTHS_EXPECT);
    load_fails_with(ENV("GCMPI_VAR_WIDTHS=1,2,3,4,5,6,7,8,8"),
                    "libgcmpi: GCMPI_VAR_WIDTHS=1,2,3,4,5,6,7,8,8 lists more than 8 widths; " WIDTHS_EXPECT);
    load_fails_with(ENV("GCMPI_VAR_WIDTHS="), "libgcmpi: GCMPI_VAR_WIDTHS= is empty; " WIDTHS_EXPECT);
    load_fails_with(ENV("GCMPI_VAR_WIDTHS=1,,2"),
                    "libgcmpi: GCMPI_VAR_WIDTHS=1,,2 has an empty entry; " WIDTHS_EXPECT);
    load_fails_with(ENV("GCMPI_VAR_WIDTHS=4,"), "libgcmpi: GCMPI_VAR_WIDTHS=4, has an empty entry; " WIDTHS_EXPECT);
    load_fails_with(ENV("GCMPI_VAR_WIDTHS=2,four"),
                    "libgcmpi: GCMPI_VAR_WIDTHS=2,four has four, which is not an integer; " WIDTHS_EXPECT);
    load_fails_with(ENV("GCMPI_VAR_WIDTHS=2 4"),
                    "libgcmpi: GCMPI_VAR_WIDTHS=2 4 has 2 4, which is not an integer; " WIDTHS_EXPECT);
    load_fails_with(ENV("GCMPI_VAR_WIDTHS=1,00000000000000000000000000000002"),
                    "libgcmpi: GCMPI_VAR_WIDTHS=1,00000000000000000000000000000002 has an entry longer "
                    "than 31 characters; " WIDTHS_EXPECT);
}

Test(adapt, each_method_is_accepted_exactly_with_its_codecs)
{
    /* The lists of gc_adapt.h, written out here independently. */
    static const struct { const char *method; const char *codecs; } methods[] = {
        {"gct", " eg "}, {"edgc", " topk dgc topkq powersgd "}, {"variance", " topk dgc topkq "},
    };
    for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
        for (size_t i = 0; i < gc_codec_count(); i++) {
            char codec[64], adapt[64], word[32];
            snprintf(codec, sizeof codec, "GCMPI_CODEC=%s", gc_codec_name(gc_codec_at(i)));
            snprintf(adapt, sizeof adapt, "GCMPI_ADAPT=%s", methods[m].method);
            snprintf(word, sizeof word, " %s ", gc_codec_name(gc_codec_at(i)));
            gcmpi_config_load(&cfg, &res, ENV(codec, adapt));
            cr_assert_eq(res.ok, strstr(methods[m].codecs, word) != NULL, "%s %s: %s", codec, adapt,
                         res.error);
        }
    }
    for (size_t i = 0; i < gc_codec_count(); i++) {
        char codec[64], word[32];
        snprintf(codec, sizeof codec, "GCMPI_CODEC=%s", gc_codec_name(gc_codec_at(i)));
        snprintf(word, sizeof word, " %s ", gc_codec_name(gc_codec_at(i)));
        gcmpi_config_load(&cfg, &res, ENV(codec, "GCMPI_RATIO=auto"));
        cr_assert_eq(res.ok, strstr(" topk randk dgc topkq ", word) != NULL, "%s: %s", codec, res.error);
    }
}

Test(adapt, supports_answers_for_the_method_and_the_auto_ratio_together)
{
    gc_adapt_config a;
    gc_adapt_config_default(&a);
    cr_assert(gc_adapt_supports(&a, gc_codec_by_name("qsgd")));
    cr_assert_not(gc_adapt_active(&a));
    a.ratio_auto.on = 1;
    cr_assert(gc_adapt_active(&a));
    cr_assert(gc_adapt_supports(&a, gc_codec_by_name("randk")));
    cr_assert_not(gc_adapt_supports(&a, gc_codec_by_name("eg")));
    cr_assert_not(gc_adapt_supports(&a, NULL));
    a.method = GC_ADAPT_GCT; /* gct needs eg, auto cannot have it: nothing fits both */
    cr_assert_not(gc_adapt_supports(&a, gc_codec_by_name("eg")));
    cr_assert_not(gc_adapt_supports(&a, gc_codec_by_name("topk")));
    a.ratio_auto.on = 0;
    cr_assert(gc_adapt_supports(&a, gc_codec_by_name("eg")));
    a.method = GC_ADAPT_EDGC;
    cr_assert(gc_adapt_supports(&a, gc_codec_by_name("powersgd")));
    cr_assert_not(gc_adapt_supports(&a, gc_codec_by_name("randk")));
}

Test(adapt, a_method_with_a_codec_it_does_not_adapt_names_both_and_the_codecs_it_does)
{
    load_fails_with(ENV("GCMPI_CODEC=topk", "GCMPI_ADAPT=gct"),
                    "libgcmpi: GCMPI_ADAPT=gct does not work with GCMPI_CODEC=topk; gct works with: eg");
    load_fails_with(ENV("GCMPI_ADAPT=gct"),
                    "libgcmpi: GCMPI_ADAPT=gct does not work with GCMPI_CODEC=none; gct works with: eg");
    load_fails_with(ENV("GCMPI_CODEC=eg", "GCMPI_ADAPT=edgc"),
                    "libgcmpi: GCMPI_ADAPT=edgc does not work with GCMPI_CODEC=eg; edgc works with: "
                    "topk, dgc, powersgd, topkq");
    load_fails_with(ENV("GCMPI_CODEC=powersgd", "GCMPI_ADAPT=variance"),
                    "libgcmpi: GCMPI_ADAPT=variance does not work with GCMPI_CODEC=powersgd; variance "
                    "works with: topk, dgc, topkq");
    load_fails_with(ENV("GCMPI_CODEC=randk", "GCMPI_ADAPT=variance"),
                    "libgcmpi: GCMPI_ADAPT=variance does not work with GCMPI_CODEC=randk; variance "
                    "works with: topk, dgc, topkq");
}

Test(adapt, ratio_auto_with_another_ratio_chooser_or_codec_is_rejected)
{
    load_fails_with(ENV("GCMPI_CODEC=topk", "GCMPI_ADAPT=edgc", "GCMPI_RATIO=auto"),
                    "libgcmpi: GCMPI_RATIO=auto does not work with GCMPI_ADAPT=edgc, which chooses the "
                    "ratio itself; expected a number in (0, 1] (edgc starts from it) or GCMPI_ADAPT=none");
    load_fails_with(ENV("GCMPI_CODEC=topkq", "GCMPI_ADAPT=variance", "GCMPI_RATIO=auto"),
                    "libgcmpi: GCMPI_RATIO=auto does not work with GCMPI_ADAPT=variance, which chooses the "
                    "ratio itself; expected a number in (0, 1] (variance starts from it) or GCMPI_ADAPT=none");
    load_fails_with(ENV("GCMPI_CODEC=eg", "GCMPI_RATIO=auto"),
                    "libgcmpi: GCMPI_RATIO=auto does not work with GCMPI_CODEC=eg; auto works with: "
                    "topk, randk, dgc, topkq");
    load_fails_with(ENV("GCMPI_CODEC=eg", "GCMPI_ADAPT=gct", "GCMPI_RATIO=auto"),
                    "libgcmpi: GCMPI_RATIO=auto does not work with GCMPI_CODEC=eg; auto works with: "
                    "topk, randk, dgc, topkq");
    load_fails_with(ENV("GCMPI_CODEC=powersgd", "GCMPI_RATIO=auto"),
                    "libgcmpi: GCMPI_RATIO=auto does not work with GCMPI_CODEC=powersgd; auto works with: "
                    "topk, randk, dgc, topkq");
}

Test(adapt, a_combination_set_in_the_file_names_file_and_line)
{
    const char *path = write_file("GCMPI_CODEC=topk\nGCMPI_ADAPT=gct\n");
    char want[512];
    snprintf(want, sizeof want,
             "libgcmpi: %s:2: GCMPI_ADAPT=gct does not work with GCMPI_CODEC=topk; gct works with: eg", path);
    load_fails_with(ENV(config_entry(path)), want);
    unlink(path);
}

Test(adapt, misspelt_adaptive_names_get_suggestions)
{
    expect_one_warning(ENV("GCMPI_GCT_LAMDA=0.1"),
                       "libgcmpi: unknown variable GCMPI_GCT_LAMDA=0.1 ignored; did you mean GCMPI_GCT_LAMBDA?");
    expect_one_warning(ENV("GCMPI_VAR_WIDTH=2,4"),
                       "libgcmpi: unknown variable GCMPI_VAR_WIDTH=2,4 ignored; did you mean GCMPI_VAR_WIDTHS?");
    expect_one_warning(ENV("GCMPI_EDGC_WINDWO=5"),
                       "libgcmpi: unknown variable GCMPI_EDGC_WINDWO=5 ignored; did you mean GCMPI_EDGC_WINDOW?");
    expect_one_warning(ENV("GCMPI_RATIO_BUGDET=1"),
                       "libgcmpi: unknown variable GCMPI_RATIO_BUGDET=1 ignored; did you mean GCMPI_RATIO_BUDGET?");
}

/* ---- the GCMPI_CONFIG file ------------------------------------------------------------------ */

Test(file, settings_comments_blanks_quotes_and_crlf)
{
    const char *path = write_file("# libgcmpi settings\n"
                                  "\n"
                                  "GCMPI_CODEC = topk\n"
                                  "   # indented comment\n"
                                  "GCMPI_RATIO=0.05\r\n"
                                  "GCMPI_COMM=\"grads, more\"\n"
                                  "GCMPI_SEED='7'");
    load_ok(ENV(config_entry(path)));
    cr_assert_eq(res.n_warnings, 0, "%s", res.warnings[0]);
    cr_assert_str_eq(gc_codec_name(cfg.codec), "topk");
    cr_assert_eq(cfg.params.ratio, 0.05);
    cr_assert_eq(cfg.n_comm_names, 2);
    cr_assert_str_eq(cfg.comm_names[1], "more");
    cr_assert_eq(cfg.seed, 7);
    cr_assert_str_eq(cfg.source, path);
    unlink(path);
}

Test(file, environment_wins_over_the_file)
{
    const char *path = write_file("GCMPI_RATIO=0.5\nGCMPI_SEED=1\n");
    load_ok(ENV("GCMPI_RATIO=0.25", config_entry(path)));
    cr_assert_eq(cfg.params.ratio, 0.25);
    cr_assert_eq(cfg.seed, 1);
    unlink(path);
}

Test(file, a_line_without_equals_names_file_and_line)
{
    const char *path = write_file("GCMPI_SEED=1\n# fine\ngarbage here\n");
    char want[256];
    snprintf(want, sizeof want, "libgcmpi: %s:3: expected GCMPI_NAME=VALUE, found 'garbage here'", path);
    load_fails_with(ENV(config_entry(path)), want);
    unlink(path);
}

Test(file, a_bad_value_names_file_and_line)
{
    const char *path = write_file("GCMPI_SEED=1\nGCMPI_RATIO=2\n");
    char want[256];
    snprintf(want, sizeof want,
             "libgcmpi: %s:2: GCMPI_RATIO=2 is out of range; expected a number in (0, 1]", path);
    load_fails_with(ENV(config_entry(path)), want);
    unlink(path);
}

Test(file, a_bad_value_overridden_by_the_environment_is_not_an_error)
{
    const char *path = write_file("GCMPI_RATIO=2\n");
    load_ok(ENV(config_entry(path), "GCMPI_RATIO=0.5"));
    cr_assert_eq(cfg.params.ratio, 0.5);
    unlink(path);
}

Test(file, foreign_keys_and_nested_config_are_errors)
{
    const char *path = write_file("PATH=/bin\n");
    char want[256];
    snprintf(want, sizeof want,
             "libgcmpi: %s:1: PATH is not a GCMPI_ variable; expected GCMPI_NAME=VALUE lines", path);
    load_fails_with(ENV(config_entry(path)), want);
    unlink(path);
    path = write_file("\nGCMPI_CONFIG=/etc/other\n");
    snprintf(want, sizeof want,
             "libgcmpi: %s:2: GCMPI_CONFIG cannot be set inside the configuration file; expected it "
             "in the environment", path);
    load_fails_with(ENV(config_entry(path)), want);
    unlink(path);
}

Test(file, unknown_and_repeated_names_warn_with_file_and_line)
{
    const char *path = write_file("GCMPI_RATO=0.1\nGCMPI_SEED=1\nGCMPI_SEED=2\n");
    load_ok(ENV(config_entry(path)));
    cr_assert_eq(res.n_warnings, 2);
    char want[256];
    snprintf(want, sizeof want,
             "libgcmpi: %s:1: unknown variable GCMPI_RATO=0.1 ignored; did you mean GCMPI_RATIO?", path);
    cr_assert_str_eq(res.warnings[0], want);
    snprintf(want, sizeof want, "libgcmpi: %s:3: GCMPI_SEED is set again (first at line 2); this line wins",
             path);
    cr_assert_str_eq(res.warnings[1], want);
    cr_assert_eq(cfg.seed, 2);
    unlink(path);
}

Test(file, unreadable_or_empty_paths_are_errors)
{
    load_fails_with(ENV("GCMPI_CONFIG=/nonexistent/gcmpi.conf"),
                    "libgcmpi: GCMPI_CONFIG=/nonexistent/gcmpi.conf cannot be read: No such file or directory");
    load_fails_with(ENV("GCMPI_CONFIG="),
                    "libgcmpi: GCMPI_CONFIG= is empty; expected the path of a file of GCMPI_NAME=VALUE lines");
    load_fails_with(ENV("GCMPI_CONFIG=/tmp"),
                    "libgcmpi: GCMPI_CONFIG=/tmp cannot be read: Is a directory");
}

Test(file, binary_content_is_an_error)
{
    char path[] = "/tmp/gcmpi_test_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, "GCMPI_SEED=1\nGCMPI\0X=1\n", 23), 23);
    close(fd);
    char want[256];
    snprintf(want, sizeof want,
             "libgcmpi: %s:2: contains a NUL byte; expected a text file of GCMPI_NAME=VALUE lines", path);
    load_fails_with(ENV(config_entry(path)), want);
    unlink(path);
}

/* ---- hash -------------------------------------------------------------------------------------- */

Test(hash, equal_settings_hash_equally)
{
    cr_assert_eq(hash_of(ENV("GCMPI_CODEC=topk", "GCMPI_RATIO=0.05")),
                 hash_of(ENV("GCMPI_RATIO=5e-2", "GCMPI_CODEC=TOPK")));
    /* Spelling out a default is the same configuration. */
    cr_assert_eq(hash_of(ENV("GCMPI_CODEC=none", "GCMPI_RATIO=0.01", "GCMPI_SEED=42")), default_hash());
    /* -0 is 0. */
    cr_assert_eq(hash_of(ENV("GCMPI_EF_MOMENTUM=-0", "GCMPI_CODEC=topk")),
                 hash_of(ENV("GCMPI_CODEC=topk")));
}

Test(hash, differs_when_codec_ratio_seed_or_comm_differ)
{
    uint64_t base = hash_of(ENV("GCMPI_CODEC=topk"));
    cr_assert_neq(hash_of(ENV("GCMPI_CODEC=randk")), base);
    cr_assert_neq(hash_of(ENV("GCMPI_CODEC=topk", "GCMPI_RATIO=0.02")), base);
    cr_assert_neq(hash_of(ENV("GCMPI_CODEC=topk", "GCMPI_SEED=43")), base);
    cr_assert_neq(hash_of(ENV("GCMPI_CODEC=topk", "GCMPI_COMM=all")), base);
    cr_assert_neq(hash_of(ENV("GCMPI_CODEC=topk", "GCMPI_VERIFY=1")), base);
    cr_assert_neq(hash_of(ENV("GCMPI_COMM=ab,c")), hash_of(ENV("GCMPI_COMM=a,bc")));
}

Test(hash, differs_when_any_adaptive_setting_differs)
{
    static char *const changes[] = {
        "GCMPI_ADAPT=edgc",         "GCMPI_ADAPT=variance",    "GCMPI_GCT_LAMBDA=0.001",
        "GCMPI_GCT_LR=0.1",         "GCMPI_GCT_EPS=1e-7",      "GCMPI_GCT_DECAY=0.9",
        "GCMPI_GCT_DECAY_EVERY=10", "GCMPI_GCT_FORM=alg2",     "GCMPI_EDGC_ALPHA=0.2",
        "GCMPI_EDGC_BETA=0.02",     "GCMPI_EDGC_WINDOW=50",    "GCMPI_EDGC_MIN=0.001",
        "GCMPI_EDGC_MAX=0.5",       "GCMPI_VAR_ALPHA=2",       "GCMPI_VAR_MEMORY=10",
        "GCMPI_VAR_MIN=0.001",      "GCMPI_VAR_MAX=0.5",       "GCMPI_VAR_WIDTHS=1,2,3,4,6",
        "GCMPI_VAR_WIDTHS=1,2,3,4,6,7", "GCMPI_VAR_TARGET=0.01", "GCMPI_RATIO=auto",
        "GCMPI_RATIO=0.1",          "GCMPI_RATIO_BUDGET=0.02", "GCMPI_RATIO_MIN=0.001",
        "GCMPI_RATIO_MAX=0.2",
    };
    enum { N = sizeof changes / sizeof changes[0] };
    uint64_t h[N + 1];
    h[N] = hash_of(ENV("GCMPI_CODEC=topk"));
    for (size_t i = 0; i < N; i++) h[i] = hash_of(ENV("GCMPI_CODEC=topk", changes[i]));
    for (size_t i = 0; i <= N; i++)
        for (size_t k = i + 1; k <= N; k++)
            cr_assert_neq(h[i], h[k], "%s and %s", changes[i], k < N ? changes[k] : "the defaults");
    /* Spelling out the defaults is the same configuration. */
    cr_assert_eq(hash_of(ENV("GCMPI_CODEC=topk", "GCMPI_VAR_WIDTHS=1, 2,3,4,6,8", "GCMPI_EDGC_MIN=auto",
                             "GCMPI_GCT_FORM=eq9", "GCMPI_GCT_LAMBDA=1e-5", "GCMPI_ADAPT=none")),
                 h[N]);
}

Test(hash, unaffected_by_per_rank_settings)
{
    uint64_t base = hash_of(ENV("GCMPI_CODEC=topk"));
    cr_assert_eq(hash_of(ENV("GCMPI_CODEC=topk", "GCMPI_VERBOSE=3")), base);
    cr_assert_eq(hash_of(ENV("GCMPI_CODEC=topk", "GCMPI_STATS=stderr,/tmp/r.json")), base);
    cr_assert_eq(hash_of(ENV("GCMPI_CODEC=topk", "GCMPI_EF_MAX_BYTES=64M")), base);
    const char *path = write_file("GCMPI_CODEC=topk\n");
    cr_assert_eq(hash_of(ENV(config_entry(path))), base);
    unlink(path);
}

/* ---- describe ---------------------------------------------------------------------------------- */

/* Loads env, describes it, loads the description (without GCMPI_CONFIG)
 * and checks that the second description and hash equal the first. The
 * first description is left in text. */
static void describe_round_trip(char **env, char text[4096])
{
    load_ok(env);
    gcmpi_config first = cfg;
    char again[4096];
    gcmpi_config_describe(&first, text, 4096);

    /* Every line but GCMPI_CONFIG (empty: no file) as an environment. */
    char copy[4096];
    strcpy(copy, text);
    char *lines[64];
    size_t n = 0;
    for (char *line = strtok(copy, "\n"); line; line = strtok(NULL, "\n"))
        if (strncmp(line, "GCMPI_CONFIG=", 13) != 0) lines[n++] = line;
    lines[n] = NULL;
    load_ok(lines);
    cr_assert_eq(res.n_warnings, 0);
    gcmpi_config_describe(&cfg, again, sizeof again);
    cr_assert_str_eq(again, text);
    cr_assert_eq(gcmpi_config_hash(&cfg), gcmpi_config_hash(&first));
}

Test(describe, output_read_back_gives_the_same_configuration)
{
    char text[4096];
    describe_round_trip(ENV("GCMPI_CODEC=qsgd", "GCMPI_RATIO=0.1", "GCMPI_BITS=6", "GCMPI_BUCKET=3K",
                            "GCMPI_EG_N=5", "GCMPI_DGC_TOLERANCE=0.3", "GCMPI_QSGD_CODING=elias",
                            "GCMPI_EF_MAX_BYTES=1000", "GCMPI_MIN_BYTES=0",
                            "GCMPI_SEED=0xFFFFFFFFFFFFFFFF", "GCMPI_COMM=grads,x",
                            "GCMPI_STATS=stderr,/tmp/r.json", "GCMPI_VERBOSE=2", "GCMPI_ALGO=rsag",
                            "GCMPI_CRC=1"),
                        text);
    cr_assert(strstr(text, "GCMPI_RATIO=0.1\n") != NULL, "%s", text);
    cr_assert(strstr(text, "GCMPI_BUCKET=3K\n") != NULL, "%s", text);
    cr_assert(strstr(text, "GCMPI_SEED=18446744073709551615\n") != NULL, "%s", text);
}

Test(describe, adaptive_settings_read_back_the_same)
{
    char text[4096];
    describe_round_trip(ENV("GCMPI_CODEC=topkq", "GCMPI_ADAPT=variance", "GCMPI_GCT_LAMBDA=0.5",
                            "GCMPI_GCT_LR=3", "GCMPI_GCT_EPS=1e-12", "GCMPI_GCT_DECAY=0.25",
                            "GCMPI_GCT_DECAY_EVERY=18", "GCMPI_GCT_FORM=alg2", "GCMPI_EDGC_ALPHA=0.75",
                            "GCMPI_EDGC_BETA=0.125", "GCMPI_EDGC_WINDOW=3", "GCMPI_EDGC_MIN=16",
                            "GCMPI_EDGC_MAX=32", "GCMPI_VAR_ALPHA=0.5", "GCMPI_VAR_MEMORY=7",
                            "GCMPI_VAR_MIN=auto", "GCMPI_VAR_MAX=0.3", "GCMPI_VAR_WIDTHS=2,5,7",
                            "GCMPI_VAR_TARGET=0.05", "GCMPI_RATIO_BUDGET=0.003",
                            "GCMPI_RATIO_MIN=0.002", "GCMPI_RATIO_MAX=0.004"),
                        text);
    static const char *const lines[] = {
        "GCMPI_RATIO_BUDGET=0.003\n", "GCMPI_ADAPT=variance\n", "GCMPI_GCT_LAMBDA=0.5\n",
        "GCMPI_GCT_EPS=1e-12\n", "GCMPI_GCT_DECAY_EVERY=18\n", "GCMPI_GCT_FORM=alg2\n",
        "GCMPI_EDGC_MIN=16\n", "GCMPI_EDGC_MAX=32\n", "GCMPI_VAR_MEMORY=7\n",
        "GCMPI_VAR_MIN=auto\n", "GCMPI_VAR_MAX=0.3\n", "GCMPI_VAR_WIDTHS=2,5,7\n",
        "GCMPI_VAR_TARGET=0.05\n",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        cr_assert(strstr(text, lines[i]) != NULL, "no %s in\n%s", lines[i], text);
    describe_round_trip(ENV("GCMPI_CODEC=dgc", "GCMPI_RATIO=auto", "GCMPI_RATIO_MAX=0.5"), text);
    cr_assert(strstr(text, "GCMPI_RATIO=auto\n") != NULL, "%s", text);
}

Test(describe, small_buffers_get_a_truncated_terminated_prefix_and_the_full_length)
{
    gcmpi_config d;
    gcmpi_config_defaults(&d);
    char full[4096], small[16];
    size_t len = gcmpi_config_describe(&d, full, sizeof full);
    cr_assert_eq(gcmpi_config_describe(&d, small, sizeof small), len);
    cr_assert_eq(strlen(small), sizeof small - 1);
    cr_assert(strncmp(small, full, sizeof small - 1) == 0);
    cr_assert_eq(gcmpi_config_describe(&d, NULL, 0), len);
}

Test(describe, doubles_print_shortest_and_locale_free)
{
    char text[64];
    cfg_format_double(0.01, text, sizeof text);
    cr_assert_str_eq(text, "0.01");
    cfg_format_double(0.1 + 0.2, text, sizeof text);
    cr_assert_str_eq(text, "0.30000000000000004");
    cfg_format_double(1e-7, text, sizeof text);
    cr_assert_str_eq(text, "1e-07");
}

Test(describe, numbers_parse_the_same_under_a_comma_decimal_locale)
{
    if (!setlocale(LC_NUMERIC, "de_DE.UTF-8") && !setlocale(LC_NUMERIC, "fr_FR.UTF-8"))
        cr_skip_test("no locale with a decimal comma is installed");
    load_ok(ENV("GCMPI_RATIO=0.25"));
    cr_assert_eq(cfg.params.ratio, 0.25);
    char text[64];
    cfg_format_double(0.25, text, sizeof text);
    cr_assert_str_eq(text, "0.25");
}

/* ---- threads --------------------------------------------------------------------------------- */

static void *load_seed_in_thread(void *arg)
{
    char entry[64];
    snprintf(entry, sizeof entry, "GCMPI_SEED=%lu", (unsigned long)(uintptr_t)arg);
    uintptr_t wrong = 0;
    for (int i = 0; i < 2000; i++) {
        gcmpi_config c;
        gcmpi_config_result r;
        gcmpi_config_load(&c, &r, ENV(entry, "GCMPI_CODEC=topk", "GCMPI_RATO=1"));
        if (!r.ok || c.seed != (uint64_t)(uintptr_t)arg || r.n_warnings != 1) wrong++;
    }
    return (void *)wrong;
}

Test(threads, concurrent_loads_do_not_interfere)
{
    pthread_t t[4];
    for (uintptr_t i = 0; i < 4; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, load_seed_in_thread, (void *)(i + 100)), 0);
    for (int i = 0; i < 4; i++) {
        void *wrong;
        pthread_join(t[i], &wrong);
        cr_assert_null(wrong, "thread %d saw %zu wrong loads", i, (size_t)(uintptr_t)wrong);
    }
}

Test(ef, auto_is_off_for_codecs_that_are_not_contractive)
{
    char *qsgd[] = {"GCMPI_CODEC=qsgd", NULL};
    load_ok(qsgd);
    cr_assert_eq(cfg.ef, 0);
    char *tern[] = {"GCMPI_CODEC=terngrad", "GCMPI_EF=auto", NULL};
    load_ok(tern);
    cr_assert_eq(cfg.ef, 0);
    char *unbiased[] = {"GCMPI_CODEC=randk", "GCMPI_RANDK_UNBIASED=1", NULL};
    load_ok(unbiased);
    cr_assert_eq(cfg.ef, 0);
}

Test(ef, auto_is_on_for_contractive_codecs_and_explicit_values_win)
{
    const char *on[] = {"topk", "dgc", "sign", "onebit", "int8", "randk", "eg", "powersgd", "topkq"};
    for (size_t i = 0; i < sizeof on / sizeof on[0]; i++) {
        char codec[64];
        snprintf(codec, sizeof codec, "GCMPI_CODEC=%s", on[i]);
        char *env[] = {codec, NULL};
        load_ok(env);
        cr_assert_eq(cfg.ef, 1, "%s", on[i]);
    }
    char *forced[] = {"GCMPI_CODEC=qsgd", "GCMPI_EF=1", NULL};
    load_ok(forced);
    cr_assert_eq(cfg.ef, 1);
    char *off[] = {"GCMPI_CODEC=topk", "GCMPI_EF=0", NULL};
    load_ok(off);
    cr_assert_eq(cfg.ef, 0);
}

/* ---- calls kept exact, allgather's own codec ------------------------------------------- */

Test(exact_calls, allgather_codec_auto_follows_only_near_lossless_codecs)
{
    static const char *const follows[] = {"fp16", "bf16"};
    static const char *const not_followed[] = {"none", "int8", "qsgd", "terngrad", "sign", "onebit",
                                               "natural", "topk", "randk", "dgc", "powersgd", "eg",
                                               "topkq"};
    char entry[64];
    for (size_t i = 0; i < sizeof follows / sizeof follows[0]; i++) {
        snprintf(entry, sizeof entry, "GCMPI_CODEC=%s", follows[i]);
        load_ok(ENV(entry));
        cr_assert(cfg.allgather_codec_auto);
        cr_assert_str_eq(gc_codec_name(cfg.allgather_codec), follows[i]);
    }
    for (size_t i = 0; i < sizeof not_followed / sizeof not_followed[0]; i++) {
        snprintf(entry, sizeof entry, "GCMPI_CODEC=%s", not_followed[i]);
        load_ok(ENV(entry));
        cr_assert_str_eq(gc_codec_name(cfg.allgather_codec), "none", "%s", entry);
    }
    cr_assert_eq(cfg.allgather_ef, 0);
}

Test(exact_calls, allgather_codec_and_ef_are_chosen_explicitly)
{
    load_ok(ENV("GCMPI_CODEC=int8", "GCMPI_ALLGATHER_CODEC=TopK", "GCMPI_ALLGATHER_EF=yes"));
    cr_assert_eq(cfg.allgather_codec_auto, 0);
    cr_assert_str_eq(gc_codec_name(cfg.allgather_codec), "topk");
    cr_assert_eq(cfg.allgather_ef, 1);
    load_ok(ENV("GCMPI_CODEC=fp16", "GCMPI_ALLGATHER_CODEC=none"));
    cr_assert_str_eq(gc_codec_name(cfg.allgather_codec), "none");
    load_ok(ENV("GCMPI_ALLGATHER_CODEC=auto", "GCMPI_CODEC=bf16"));
    cr_assert_str_eq(gc_codec_name(cfg.allgather_codec), "bf16");
}

Test(exact_calls, the_allgather_configuration_has_no_gradient_state)
{
    load_ok(ENV("GCMPI_CODEC=topk", "GCMPI_EF_MOMENTUM=0.9", "GCMPI_ADAPT=edgc",
                "GCMPI_ALLGATHER_CODEC=fp16"));
    gcmpi_config ag;
    gcmpi_config_for_allgather(&cfg, &ag);
    cr_assert_str_eq(gc_codec_name(ag.codec), "fp16");
    cr_assert_eq(ag.ef, 0);
    cr_assert_eq(ag.ef_momentum, 0.0);
    cr_assert_eq(ag.adapt.method, GC_ADAPT_NONE);
    cr_assert_eq(ag.params.ratio, cfg.params.ratio);
    cr_assert_eq(ag.min_bytes, cfg.min_bytes);
}

Test(exact_calls, bad_allgather_settings_name_the_variable)
{
    load_fails_with(ENV("GCMPI_ALLGATHER_CODEC=topkk"),
                    "libgcmpi: GCMPI_ALLGATHER_CODEC=topkk is not a codec; expected auto or one of: "
                    "none, fp16, bf16, int8, qsgd, terngrad, sign, onebit, natural, topk, randk, "
                    "dgc, powersgd, eg, topkq");
    load_fails_with(ENV("GCMPI_ALLGATHER_EF=2"),
                    "libgcmpi: GCMPI_ALLGATHER_EF=2 is not a boolean; expected 0, 1, true, false, "
                    "yes, no, on or off");
    /* A parameter the allgather codec refuses names both. */
    load_fails_with(ENV("GCMPI_CODEC=int8", "GCMPI_ALLGATHER_CODEC=qsgd", "GCMPI_BITS=12"),
                    "libgcmpi: GCMPI_BITS=12 is out of range; expected an integer in [2, 8] with "
                    "GCMPI_ALLGATHER_CODEC=qsgd");
    load_fails_with(ENV("GCMPI_ALLGATHER_EF=1", "GCMPI_EF=0", "GCMPI_EF_MAX_BYTES=0"),
                    "libgcmpi: GCMPI_EF_MAX_BYTES=0 is out of range; expected at least 1 while "
                    "GCMPI_ALLGATHER_EF=1");
}

Test(exact_calls, max_bytes_is_off_or_a_size_not_below_min_bytes)
{
    load_ok(no_env);
    cr_assert_eq(cfg.max_bytes, UINT64_MAX);
    load_ok(ENV("GCMPI_MAX_BYTES=64M"));
    cr_assert_eq(cfg.max_bytes, 64u << 20);
    load_ok(ENV("GCMPI_MAX_BYTES=4K"));
    cr_assert_eq(cfg.max_bytes, 4096);
    load_ok(ENV("GCMPI_MAX_BYTES=OFF"));
    cr_assert_eq(cfg.max_bytes, UINT64_MAX);
    load_fails_with(ENV("GCMPI_MAX_BYTES=1K"),
                    "libgcmpi: GCMPI_MAX_BYTES=1K is below GCMPI_MIN_BYTES=4096 (default); expected "
                    "off or a size >= GCMPI_MIN_BYTES");
    load_fails_with(ENV("GCMPI_MAX_BYTES=100", "GCMPI_MIN_BYTES=200"),
                    "libgcmpi: GCMPI_MAX_BYTES=100 is below GCMPI_MIN_BYTES=200; expected off or a "
                    "size >= GCMPI_MIN_BYTES");
    load_fails_with(ENV("GCMPI_MAX_BYTES=-1"),
                    "libgcmpi: GCMPI_MAX_BYTES=-1 is not a size; expected off or an integer with "
                    "optional K, M or G suffix");
    load_fails_with(ENV("GCMPI_MAX_BYTES="),
                    "libgcmpi: GCMPI_MAX_BYTES= is empty; expected off or an integer with optional "
                    "K, M or G suffix");
}

Test(exact_calls, exact_counts_are_a_list_of_element_counts)
{
    load_ok(no_env);
    cr_assert_eq(cfg.n_exact_counts, 0);
    load_ok(ENV("GCMPI_EXACT_COUNTS=10, 1000 ,0"));
    cr_assert_eq(cfg.n_exact_counts, 3);
    cr_assert_eq(cfg.exact_counts[0], 10);
    cr_assert_eq(cfg.exact_counts[1], 1000);
    cr_assert_eq(cfg.exact_counts[2], 0);
    load_ok(ENV("GCMPI_EXACT_COUNTS=none"));
    cr_assert_eq(cfg.n_exact_counts, 0);
    load_ok(ENV("GCMPI_EXACT_COUNTS=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16"));
    cr_assert_eq(cfg.n_exact_counts, GCMPI_MAX_EXACT_COUNTS);
    static const char expect[] = "expected none or up to 16 comma-separated element counts in "
                                 "[0, 2^63 - 1]";
    char want[256];
    snprintf(want, sizeof want, "libgcmpi: GCMPI_EXACT_COUNTS=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17 "
             "lists more than 16 counts; %s", expect);
    load_fails_with(ENV("GCMPI_EXACT_COUNTS=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17"), want);
    snprintf(want, sizeof want, "libgcmpi: GCMPI_EXACT_COUNTS=10,x has x, which is not an integer; %s",
             expect);
    load_fails_with(ENV("GCMPI_EXACT_COUNTS=10,x"), want);
    snprintf(want, sizeof want, "libgcmpi: GCMPI_EXACT_COUNTS=-5 has count -5 out of range; %s", expect);
    load_fails_with(ENV("GCMPI_EXACT_COUNTS=-5"), want);
    snprintf(want, sizeof want, "libgcmpi: GCMPI_EXACT_COUNTS=1,,2 has an empty entry; %s", expect);
    load_fails_with(ENV("GCMPI_EXACT_COUNTS=1,,2"), want);
}

Test(exact_calls, in_place_only_is_a_boolean)
{
    load_ok(no_env);
    cr_assert_eq(cfg.in_place_only, 0);
    load_ok(ENV("GCMPI_IN_PLACE_ONLY=on"));
    cr_assert_eq(cfg.in_place_only, 1);
}

Test(exact_calls, communicators_are_excluded_by_bang_name)
{
    load_ok(ENV("GCMPI_COMM=!metrics"));
    cr_assert_eq(cfg.comm, GCMPI_COMM_WORLD_ONLY);
    cr_assert_eq(cfg.n_comm_excluded, 1);
    cr_assert_str_eq(cfg.comm_excluded[0], "metrics");
    load_ok(ENV("GCMPI_COMM=all, !metrics,!tensor parallel"));
    cr_assert_eq(cfg.comm, GCMPI_COMM_ALL);
    cr_assert_eq(cfg.n_comm_excluded, 2);
    cr_assert_str_eq(cfg.comm_excluded[1], "tensor parallel");
    load_ok(ENV("GCMPI_COMM=!x,grads,!y"));
    cr_assert_eq(cfg.comm, GCMPI_COMM_NAMES);
    cr_assert_eq(cfg.n_comm_names, 1);
    cr_assert_eq(cfg.n_comm_excluded, 2);
    load_fails_with(ENV("GCMPI_COMM=world,!"),
                    "libgcmpi: GCMPI_COMM=world,! has an empty exclusion; expected world, all or up "
                    "to 16 comma-separated communicator names, and up to 16 !NAME exclusions");
    load_fails_with(ENV("GCMPI_COMM=all,world"),
                    "libgcmpi: GCMPI_COMM=all,world mixes world or all with names; expected world, "
                    "all or up to 16 comma-separated communicator names, and up to 16 !NAME "
                    "exclusions");
}

Test(exact_calls, settings_read_back_and_change_the_hash)
{
    char text[4096];
    describe_round_trip(ENV("GCMPI_CODEC=topk", "GCMPI_ALLGATHER_CODEC=fp16", "GCMPI_ALLGATHER_EF=1",
                            "GCMPI_MAX_BYTES=1M", "GCMPI_EXACT_COUNTS=10,20",
                            "GCMPI_IN_PLACE_ONLY=1", "GCMPI_COMM=all,!metrics"),
                        text);
    static const char *const lines[] = {
        "GCMPI_ALLGATHER_CODEC=fp16\n", "GCMPI_ALLGATHER_EF=1\n", "GCMPI_MAX_BYTES=1M\n",
        "GCMPI_EXACT_COUNTS=10,20\n", "GCMPI_IN_PLACE_ONLY=1\n", "GCMPI_COMM=all,!metrics\n",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        cr_assert(strstr(text, lines[i]) != NULL, "no %s in\n%s", lines[i], text);
    describe_round_trip(ENV("GCMPI_COMM=!a,b"), text);
    cr_assert(strstr(text, "GCMPI_COMM=b,!a\n") != NULL, "%s", text);

    static char *const changes[] = {
        "GCMPI_ALLGATHER_CODEC=topk", "GCMPI_ALLGATHER_EF=1", "GCMPI_MAX_BYTES=1M",
        "GCMPI_EXACT_COUNTS=10",      "GCMPI_EXACT_COUNTS=11", "GCMPI_IN_PLACE_ONLY=1",
        "GCMPI_COMM=!metrics",        "GCMPI_COMM=!metric",
    };
    enum { N = sizeof changes / sizeof changes[0] };
    uint64_t h[N + 1];
    h[N] = hash_of(ENV("GCMPI_CODEC=topk"));
    for (size_t i = 0; i < N; i++) h[i] = hash_of(ENV("GCMPI_CODEC=topk", changes[i]));
    for (size_t i = 0; i <= N; i++)
        for (size_t k = i + 1; k <= N; k++)
            cr_assert_neq(h[i], h[k], "%s and %s", changes[i], k < N ? changes[k] : "the defaults");
    /* auto under topk is none: naming none is the same configuration. */
    cr_assert_eq(hash_of(ENV("GCMPI_CODEC=topk", "GCMPI_ALLGATHER_CODEC=none")), h[N]);
}

Test(combinations, application_momentum_and_library_momentum_are_refused_together)
{
    load_fails_with(ENV("GCMPI_CODEC=topk", "GCMPI_MOMENTUM=0.9", "GCMPI_EF_MOMENTUM=0.9"),
                    "libgcmpi: GCMPI_MOMENTUM=0.9 cannot be used with GCMPI_EF_MOMENTUM=0.9; set "
                    "GCMPI_MOMENTUM to the momentum of an unchanged optimizer, or "
                    "GCMPI_EF_MOMENTUM when the job's own momentum is 0, not both");
}

Test(combinations, application_momentum_works_with_every_codec)
{
    for (size_t i = 0; i < gc_codec_count(); i++) {
        char entry[64];
        snprintf(entry, sizeof entry, "GCMPI_CODEC=%s", gc_codec_name(gc_codec_at(i)));
        load_ok(ENV(entry, "GCMPI_MOMENTUM=0.9"));
        cr_assert_eq(cfg.momentum, 0.9);
    }
    load_fails_with(ENV("GCMPI_MOMENTUM=1"),
                    "libgcmpi: GCMPI_MOMENTUM=1 is out of range; expected a number in [0, 1)");
}

Test(combinations, warmup_is_a_count_of_calls_from_zero)
{
    load_ok(ENV("GCMPI_CODEC=topk"));
    cr_assert_eq(cfg.warmup, 1000);
    load_ok(ENV("GCMPI_CODEC=topk", "GCMPI_WARMUP=0"));
    cr_assert_eq(cfg.warmup, 0);
    load_fails_with(ENV("GCMPI_WARMUP=-1"),
                    "libgcmpi: GCMPI_WARMUP=-1 is out of range; expected an integer >= 0");
    load_fails_with(ENV("GCMPI_WARMUP=ten"),
                    "libgcmpi: GCMPI_WARMUP=ten is not an integer; expected an integer >= 0");
}

/* ---- device buffers (pmpi/device.c) ------------------------------------------ */

Test(device, cuda_awareness_is_auto_by_default_and_takes_0_or_1)
{
    load_ok(ENV(NULL));
    cr_assert_eq(cfg.cuda_aware, -1);
    cr_assert_str_eq(cfg.gpu_lib, "");
    load_ok(ENV("GCMPI_CUDA_AWARE=1", "GCMPI_GPU_LIB=/opt/lib/libgcmpi_gpu.so"));
    cr_assert_eq(cfg.cuda_aware, 1);
    cr_assert_str_eq(cfg.gpu_lib, "/opt/lib/libgcmpi_gpu.so");
    load_ok(ENV("GCMPI_CUDA_AWARE=0"));
    cr_assert_eq(cfg.cuda_aware, 0);
    load_ok(ENV("GCMPI_CUDA_AWARE=AUTO"));
    cr_assert_eq(cfg.cuda_aware, -1);
}

Test(device, a_bad_cuda_awareness_names_the_variable_and_the_choices)
{
    load_fails_with(ENV("GCMPI_CUDA_AWARE=yes"),
                    "libgcmpi: GCMPI_CUDA_AWARE=yes is not a CUDA-awareness setting; expected "
                    "auto, 0 or 1");
}

Test(device, device_settings_are_per_rank_and_not_hashed)
{
    cr_assert_eq(hash_of(ENV("GCMPI_CUDA_AWARE=1")), hash_of(ENV("GCMPI_CUDA_AWARE=0")));
    cr_assert_eq(hash_of(ENV("GCMPI_GPU_LIB=/a.so")), hash_of(ENV(NULL)));
}

/* ---- auto's calibration cache (pmpi/auto_cache.c) ----------------------------- */

Test(auto_cache, is_auto_by_default_and_takes_off_or_a_directory)
{
    load_ok(ENV(NULL));
    cr_assert_str_eq(cfg.auto_cache, "auto");
    load_ok(ENV("GCMPI_AUTO_CACHE=/scratch/gcmpi"));
    cr_assert_str_eq(cfg.auto_cache, "/scratch/gcmpi");
    char *offs[] = {"GCMPI_AUTO_CACHE=off", "GCMPI_AUTO_CACHE=0", "GCMPI_AUTO_CACHE=No",
                          "GCMPI_AUTO_CACHE=false"};
    for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++) {
        load_ok(ENV(offs[i]));
        cr_assert_str_eq(cfg.auto_cache, "off", "%s", offs[i]);
    }
    load_ok(ENV("GCMPI_AUTO_CACHE=1"));
    cr_assert_str_eq(cfg.auto_cache, "auto");
}

Test(auto_cache, an_empty_value_names_the_variable_and_the_choices)
{
    load_fails_with(ENV("GCMPI_AUTO_CACHE="),
                    "libgcmpi: GCMPI_AUTO_CACHE= is empty; expected auto, off or a directory");
}

Test(auto_cache, is_per_rank_and_not_hashed)
{
    cr_assert_eq(hash_of(ENV("GCMPI_AUTO_CACHE=/a")), hash_of(ENV("GCMPI_AUTO_CACHE=off")));
    cr_assert(gcmpi_config_is_per_rank("GCMPI_AUTO_CACHE"));
}
