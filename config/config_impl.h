/* config_impl.h — what the files of config/ share: the variable table, the
 * strict value parsers, the typo suggester. Internal to config/. */
#ifndef GCMPI_CONFIG_IMPL_H
#define GCMPI_CONFIG_IMPL_H

#include "gcmpi_config.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Every variable once: id, name, type, default, range, meaning. The names
 * table, the documentation table and the ids below are all made from it, so
 * they cannot disagree. The defaults are what gcmpi_config_describe prints
 * for gcmpi_config_defaults (a unit test holds them to that). */
#define GCMPI_CONFIG_VARS(X)                                                                    \
    X(DISABLE, "GCMPI_DISABLE", "bool", "0", "0/1, true/false, yes/no, on/off",                 \
      "pass every call straight to MPI")                                                       \
    X(CODEC, "GCMPI_CODEC", "codec name", "none",                                              \
      "none, fp16, bf16, int8, qsgd, terngrad, sign, onebit, natural, topk, randk, dgc, "      \
      "powersgd, eg, topkq", "compressor for eligible calls; none sends float32 unchanged")   \
    X(RATIO, "GCMPI_RATIO", "number or auto", "0.01", "(0, 1] or auto",                        \
      "fraction of elements kept by topk, randk, dgc, topkq; auto chooses it per call from "  \
      "the measured link and GCMPI_RATIO_BUDGET")                                              \
    X(RATIO_BUDGET, "GCMPI_RATIO_BUDGET", "number", "0.01", "> 0",                             \
      "GCMPI_RATIO=auto: seconds of communication to aim for per compressed call")            \
    X(RATIO_MIN, "GCMPI_RATIO_MIN", "number", "0.0001", "(0, 1], <= GCMPI_RATIO_MAX",          \
      "GCMPI_RATIO=auto: smallest ratio it may choose")                                        \
    X(RATIO_MAX, "GCMPI_RATIO_MAX", "number", "0.1", "(0, 1]",                                 \
      "GCMPI_RATIO=auto: largest ratio it may choose, and the ratio of the first call")       \
    X(BITS, "GCMPI_BITS", "integer", "4", "depends on the codec (qsgd: 2..8, topkq: 1..8)",   \
      "bits per element incl. sign (qsgd; topkq: per kept value)")                             \
    X(BUCKET, "GCMPI_BUCKET", "size", "512", "depends on the codec (1..2^31)",                 \
      "elements sharing one scale (int8, qsgd, terngrad, sign, onebit, natural, eg, topkq)")  \
    X(RANK, "GCMPI_RANK", "integer", "4", "depends on the codec (1..1024)",                    \
      "rank of the PowerSGD approximation")                                                    \
    X(EG_N, "GCMPI_EG_N", "integer or auto", "auto", "depends on the codec (-60..60)", \
      "eg: quantisation step 2^-n; auto derives it from the value range")                     \
    X(EG_K, "GCMPI_EG_K", "integer or auto", "auto", "depends on the codec (0..30)",           \
      "eg: Exp-Golomb order; auto picks it per bucket")                                        \
    X(DGC_SAMPLE, "GCMPI_DGC_SAMPLE", "number", "0.01", "(0, 1]",                              \
      "dgc: fraction of elements sampled to estimate the threshold")                           \
    X(DGC_TOLERANCE, "GCMPI_DGC_TOLERANCE", "number", "0.2", "[0, 10]",                        \
      "dgc: refine the threshold when the kept count misses k by more than this fraction")     \
    X(QSGD_CODING, "GCMPI_QSGD_CODING", "keyword", "fixed", "fixed, elias",                   \
      "qsgd: fixed-width levels or Elias-gamma coded levels")                                  \
    X(RANDK_UNBIASED, "GCMPI_RANDK_UNBIASED", "bool", "0", "0/1, true/false, yes/no, on/off",   \
      "randk: scale kept values by n/k (unbiased, higher variance)")                          \
    X(CRC, "GCMPI_CRC", "bool", "0", "0/1, true/false, yes/no, on/off",                        \
      "write and check a CRC32C of every payload")                                             \
    X(LOSSLESS, "GCMPI_LOSSLESS", "keyword", "off", "off, zstd (level 3), zstd:LEVEL (1..19)",  \
      "lossless zstd stage after the codec")                                                   \
    X(EF, "GCMPI_EF", "bool or auto", "auto", "auto, 0/1, true/false, yes/no, on/off",          \
      "error feedback: add what compression dropped to the next call on the same buffer; "    \
      "auto = on, except for qsgd, terngrad and unbiased randk (not contractive)")            \
    X(EF_MOMENTUM, "GCMPI_EF_MOMENTUM", "number", "0", "[0, 1)",                               \
      "DGC momentum correction with the application's momentum switched off (topk, randk, "   \
      "dgc, topkq only); 0 = plain error feedback")                                            \
    X(MOMENTUM, "GCMPI_MOMENTUM", "number", "0", "[0, 1); 0 while GCMPI_EF_MOMENTUM > 0",      \
      "momentum of the application's own SGD optimizer: the library keeps DGC's momentum "    \
      "correction and returns what makes that optimizer apply it; 0 = off")                    \
    X(WARMUP, "GCMPI_WARMUP", "integer", "1000", ">= 0",                                       \
      "topk, randk, dgc, topkq: calls per buffer size over which the ratio decays "           \
      "exponentially from 0.25 to GCMPI_RATIO (DGC's warm-up); 0 = off")                      \
    X(EF_MAX_BYTES, "GCMPI_EF_MAX_BYTES", "size", "1G", ">= 1 while GCMPI_EF=1",               \
      "bound on residual memory per process; least recently used residuals are evicted")      \
    X(MIN_BYTES, "GCMPI_MIN_BYTES", "size", "4K", ">= 0",                                      \
      "messages smaller than this pass through uncompressed")                                  \
    X(MAX_BYTES, "GCMPI_MAX_BYTES", "size or off", "off", "off, or a size >= GCMPI_MIN_BYTES",   \
      "messages larger than this pass through uncompressed (allgather: one rank's block)")      \
    X(ALGO, "GCMPI_ALGO", "keyword", "auto",                                                    \
      "auto, rule, allgather, rsag, native, hier, sparse_rd, passthrough",                    \
      "collective algorithm; auto: the cost model's fastest per call size (measured once per " \
      "communicator), rule: the fixed rule; native only for none, randk, int8, powersgd; "     \
      "hier reduces inside each node and compresses between nodes only (for MPI_Allgather, " \
      "hier and auto gather the compressed blocks node by node); sparse_rd (sparse "          \
      "codecs: topk, randk, dgc, topkq) sums sparse sets by recursive doubling; passthrough sends " \
      "floats uncompressed")                                                                   \
    X(NODE_SIZE, "GCMPI_NODE_SIZE", "integer or auto", "auto", "auto or 1..2^31-1",             \
      "ranks per node for hier, auto and the node-by-node MPI_Allgather: auto asks MPI "     \
      "which ranks share memory; q groups ranks "                                             \
      "0..q-1, q..2q-1, ... (one host emulating several nodes)")                               \
    X(AUTO_CACHE, "GCMPI_AUTO_CACHE", "directory, auto or off", "auto",                      \
      "auto, off, or a directory (made if missing)",                                          \
      "GCMPI_ALGO=auto: where rank 0 keeps each communicator's calibration and trial "      \
      "outcomes between jobs, keyed by hosts, layout, MPI, library, settings and "           \
      "collective, and checked before use (allreduce: one fresh link measurement; "          \
      "allgather: each size's first call against its cached median); "                      \
      "auto = $XDG_CACHE_HOME/libgcmpi or ~/.cache/libgcmpi")                                 \
    X(NODE_SHM, "GCMPI_NODE_SHM", "bool", "1", "0/1, true/false, yes/no, on/off",              \
      "hier: sum and gather inside a node through an MPI shared-memory window (one copy) "    \
      "instead of MPI_Reduce_scatter and MPI_Allgatherv, made to fit the room /dev/shm has "  \
      "(through MPI where none is left); 0 = through MPI")                                    \
    X(HIER_SEGMENT, "GCMPI_HIER_SEGMENT", "size or off", "1M",                                 \
      "off, or a size >= 4 (bytes)",                                                            \
      "hier between nodes with an allgather (sparse codecs up to 8 nodes, any codec on 2): "  \
      "a rank's chunk goes in up to 8 segments of at least this many bytes, each summed in "  \
      "the node while the one before crosses the link; off = the whole chunk at once")        \
    X(SEED, "GCMPI_SEED", "uint64", "42", "0..2^64-1 (decimal or 0x hex)",                     \
      "seed of stochastic rounding and random selection (same on every rank)")                \
    X(COMM, "GCMPI_COMM", "list", "world", "world, all, or up to 16 comma-separated names; "  \
      "and up to 16 !NAME exclusions",                                                          \
      "communicators compressed: congruent to MPI_COMM_WORLD, every one, or by MPI_Comm_set_name; " \
      "!NAME items exclude communicators by name (world,!metrics)")                            \
    X(ALLGATHER_CODEC, "GCMPI_ALLGATHER_CODEC", "codec name or auto", "auto",                   \
      "auto, or any GCMPI_CODEC value", "compressor for MPI_Allgather of floats; auto = "        \
      "GCMPI_CODEC when it is fp16 or bf16, else none (gathered features are not gradients)")  \
    X(ALLGATHER_EF, "GCMPI_ALLGATHER_EF", "bool", "0", "0/1, true/false, yes/no, on/off",       \
      "error feedback on MPI_Allgather (mixes one call's dropped values into the next)")       \
    X(EXACT_COUNTS, "GCMPI_EXACT_COUNTS", "list", "none",                                      \
      "none, or up to 16 comma-separated element counts",                                       \
      "calls of exactly these element counts (allgather: per block) pass through uncompressed") \
    X(IN_PLACE_ONLY, "GCMPI_IN_PLACE_ONLY", "bool", "0", "0/1, true/false, yes/no, on/off",     \
      "compress only MPI_Allreduce(MPI_IN_PLACE, ...) (gradient buckets of Horovod, DDP)")     \
    X(STATS, "GCMPI_STATS", "list", "off", "off/0, 1/stderr, PATH.json, stderr,PATH.json",      \
      "statistics at MPI_Finalize: on stderr and/or into a JSON file (rank 0)")               \
    X(VERIFY, "GCMPI_VERIFY", "bool", "0", "0/1, true/false, yes/no, on/off",                  \
      "also run the exact allreduce and report the relative error (debugging, slow)")          \
    X(VERBOSE, "GCMPI_VERBOSE", "integer", "0", "0..3", "diagnostics on stderr")               \
    X(ADAPT, "GCMPI_ADAPT", "keyword", "none", "none, gct (eg), edgc (topk, dgc, topkq, "       \
      "powersgd), variance (topk, dgc, topkq)",                                                 \
      "adaptive layer: gct shapes gradients so eg codes them in fewer bits; edgc sets the "    \
      "ratio or rank from the gradient's entropy; variance sets the ratio from how much the "  \
      "gradient moves and, with topkq, each bucket's bit width")                              \
    X(GCT_LAMBDA, "GCMPI_GCT_LAMBDA", "number", "1e-05", ">= 0",                              \
      "gct: initial strength of the shaping (Lagrange multiplier); 0 leaves gradients "        \
      "as they are")                                                                           \
    X(GCT_LR, "GCMPI_GCT_LR", "number", "0.01", "> 0",                                         \
      "gct: the learning rate of the training (the shaping term divides by it)")              \
    X(GCT_EPS, "GCMPI_GCT_EPS", "number", "0.001", "> 0",                                      \
      "gct: added to the previous gradient before the shaping divides by it")                 \
    X(GCT_DECAY, "GCMPI_GCT_DECAY", "number", "0.8", "(0, 1]",                                 \
      "gct: the strength is multiplied by this every GCMPI_GCT_DECAY_EVERY calls")            \
    X(GCT_DECAY_EVERY, "GCMPI_GCT_DECAY_EVERY", "integer", "1000", ">= 1",                     \
      "gct: calls on a buffer between two decay steps")                                        \
    X(GCT_FORM, "GCMPI_GCT_FORM", "keyword", "eq9", "eq9, alg2",                               \
      "gct: Eq. 9 of the GCT paper (shaping term times sign(g)) or its Algorithm 2 (without)") \
    X(EDGC_ALPHA, "GCMPI_EDGC_ALPHA", "number", "0.1", "(0, 1]",                               \
      "edgc: fraction of calls whose gradient entropy is measured")                           \
    X(EDGC_BETA, "GCMPI_EDGC_BETA", "number", "0.01", "(0, 1]",                                \
      "edgc: fraction of the elements sampled to measure the entropy")                        \
    X(EDGC_WINDOW, "GCMPI_EDGC_WINDOW", "integer", "100", ">= 1",                              \
      "edgc: calls per window; the ratio or rank changes only between windows")               \
    X(EDGC_MIN, "GCMPI_EDGC_MIN", "number or auto", "auto",                                    \
      "auto, or a ratio in (0, 1] (topk, dgc, topkq) or a rank in 1..1024 (powersgd); "       \
      "<= GCMPI_EDGC_MAX",                                                                     \
      "edgc: smallest ratio or rank; auto = a quarter of GCMPI_RATIO or GCMPI_RANK")          \
    X(EDGC_MAX, "GCMPI_EDGC_MAX", "number or auto", "auto",                                    \
      "auto, or a ratio in (0, 1] (topk, dgc, topkq) or a rank in 1..1024 (powersgd)",         \
      "edgc: largest ratio or rank; auto = 4 times GCMPI_RATIO or GCMPI_RANK")                 \
    X(VAR_ALPHA, "GCMPI_VAR_ALPHA", "number", "1", "[0, 4]",                                   \
      "variance: how strongly the ratio follows the gradient's movement; 0 keeps GCMPI_RATIO") \
    X(VAR_MEMORY, "GCMPI_VAR_MEMORY", "integer", "20", "1..100000",                            \
      "variance: calls the short-term average spans (the long-term one spans 10 times more)") \
    X(VAR_MIN, "GCMPI_VAR_MIN", "number or auto", "auto", "auto or (0, 1]; <= GCMPI_VAR_MAX",  \
      "variance: smallest ratio; auto = a quarter of GCMPI_RATIO")                            \
    X(VAR_MAX, "GCMPI_VAR_MAX", "number or auto", "auto", "auto or (0, 1]",                    \
      "variance: largest ratio; auto = 4 times GCMPI_RATIO")                                   \
    X(VAR_WIDTHS, "GCMPI_VAR_WIDTHS", "list", "1,2,3,4,6,8",                                   \
      "1 to 8 comma-separated integers in 1..8, ascending",                                   \
      "variance with topkq: the bit widths a bucket may be quantised to")                     \
    X(VAR_TARGET, "GCMPI_VAR_TARGET", "number", "0.02", "(0, 1)",                              \
      "variance with topkq: each bucket gets the smallest width whose relative quantisation "  \
      "error (squared) stays below this")                                                      \
    X(CUDA_AWARE, "GCMPI_CUDA_AWARE", "keyword", "auto", "auto, 0, 1",                         \
      "device buffers of calls that are not compressed: 1 hands them to MPI as they are, 0 "   \
      "stages them through pinned host memory, auto asks MPIX_Query_cuda_support")             \
    X(GPU_LIB, "GCMPI_GPU_LIB", "path", "", "a loadable libgcmpi_gpu.so",                      \
      "GPU library loaded once CUDA is in the process; empty = libgcmpi_gpu.so beside "        \
      "libgcmpi.so")                                                                           \
    X(CONFIG, "GCMPI_CONFIG", "path", "", "a readable file",                                   \
      "file of GCMPI_NAME=VALUE lines read first; the environment wins")

typedef enum cfg_var {
#define CFG_ENUM(id, name, type, def, range, meaning) CFG_##id,
    GCMPI_CONFIG_VARS(CFG_ENUM)
#undef CFG_ENUM
    CFG_VAR_COUNT
} cfg_var;

/* Keyword values shared by judging and describing, NULL-terminated; the
 * index is the stored value (gc_adapt_method, gc_gct_params.alg2). */
extern const char *const cfg_adapt_words[];
extern const char *const cfg_gct_forms[];

/* ---- value parsers --------------------------------------------------------
 * Strict: no surrounding or trailing characters, no empty strings, no
 * locale dependence, overflow detected. Leading/trailing blanks are removed
 * by the caller before. */

typedef enum cfg_status {
    CFG_OK = 0,
    CFG_SYNTAX, /* not of the expected form */
    CFG_RANGE,  /* well formed, but too large, too small or negative */
} cfg_status;

/* 0/1/true/false/yes/no/on/off, ASCII case-insensitive. */
cfg_status cfg_parse_bool(const char *s, int *out);
/* Optional sign and decimal digits, in [lo, hi]. */
cfg_status cfg_parse_int(const char *s, long long lo, long long hi, long long *out);
/* Decimal digits, or 0x and hex digits; no sign. */
cfg_status cfg_parse_u64(const char *s, uint64_t *out);
/* Decimal digits with an optional K, M or G suffix (powers of 1024). A sign
 * is a syntax error: sizes are never negative. */
cfg_status cfg_parse_size(const char *s, uint64_t *out);
/* [+-]digits[.digits][(e|E)[+-]digits] (or .digits), correctly rounded,
 * finite; no inf, nan or hex floats. Overflow to infinity is CFG_RANGE. */
cfg_status cfg_parse_double(const char *s, double *out);
/* Shortest decimal that cfg_parse_double reads back to the same double,
 * with '.' whatever the locale. */
void cfg_format_double(double v, char *buf, size_t len);

/* ASCII case-insensitive equality (strcasecmp depends on the locale). */
int cfg_ieq(const char *a, const char *b);
/* Index of s in the NULL-terminated words (case-insensitive), or -1. */
int cfg_keyword(const char *s, const char *const *words);

/* ---- typo suggestion -------------------------------------------------------- */

/* Optimal-string-alignment distance (Damerau-Levenshtein with adjacent
 * transpositions), ASCII case-insensitive; SIZE_MAX when either string is
 * longer than 64 characters (no typo of a known name is). */
size_t cfg_edit_distance(const char *a, const char *b);
/* The known name closest to name, or NULL when none is close enough to be
 * a plausible typo. */
const char *cfg_suggest(const char *name);

/* ---- codec parameter messages ----------------------------------------------- */

/* gc_params_check messages start "<param>=<value> ...". Returns the variable
 * that sets <param> (ratio -> CFG_RATIO, zstd_level -> CFG_LOSSLESS, ...), or
 * -1 when the message does not start that way or names no variable; on
 * success *value and *value_len give <value> (up to the first blank), *rest the
 * text after it (" is out of range; ..."). */
int cfg_param_var(const char *gc_message, const char **value, size_t *value_len,
                  const char **rest);

/* ---- where the values come from --------------------------------------------- */

/* One variable's raw value (blanks around it removed, quotes removed in the
 * file), or value NULL when unset. file is NULL for the environment. */
typedef struct cfg_setting {
    char *value;
    const char *file;
    unsigned line;
} cfg_setting;

typedef struct cfg_sources {
    cfg_setting set[CFG_VAR_COUNT];
    char path[GCMPI_PATH_LEN]; /* the GCMPI_CONFIG file, "" = none */
} cfg_sources;

/* Gather the GCMPI_* settings of envp (NULL: environ) and of the
 * GCMPI_CONFIG file, environment first. Unknown names become warnings.
 * Returns 1, or 0 with res->error set (unreadable file, malformed line, out
 * of memory). Free with cfg_sources_free in either case. */
int cfg_sources_read(cfg_sources *src, gcmpi_config_result *res, char *const *envp);
void cfg_sources_free(cfg_sources *src);

/* Values are echoed in messages at most this long (then "..."). */
#define CFG_SHOW_MAX 200
#define CFG_SHOW_FMT "%.200s%s"
#define CFG_SHOW(v) (v), (strlen(v) > CFG_SHOW_MAX ? "..." : "")

/* res->error = formatted text; returns 0. */
int cfg_error(gcmpi_config_result *res, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append a warning; past the last slot, that slot says how many were lost. */
void cfg_warn(gcmpi_config_result *res, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* GCMPI_CONFIG_IMPL_H */
