/* gcmpi_config.h — the GCMPI_* configuration: read once at MPI_Init into one
 * immutable value. No MPI calls here; pmpi/ prints the messages and stops. */
#ifndef GCMPI_CONFIG_H
#define GCMPI_CONFIG_H

#include "gcmpi_codec.h"
#include "adapt/gc_adapt.h"

#include <stddef.h>
#include <stdint.h>

typedef enum gcmpi_algo {
    GCMPI_ALGO_AUTO = 0,
    GCMPI_ALGO_ALLGATHER,
    GCMPI_ALGO_RSAG,
    GCMPI_ALGO_NATIVE,
    GCMPI_ALGO_HIER,     /* node-aware: native inside nodes, compressed between */
    GCMPI_ALGO_PASS,     /* uncompressed: PMPI_Allreduce of the floats            */
    GCMPI_ALGO_RULE,     /* the fixed rule of coll_choose.c (auto before the model) */
    GCMPI_ALGO_SPARSE_RD, /* SparCML recursive doubling of sparse sets           */
    GCMPI_ALGO_COUNT
} gcmpi_algo;

/* The GCMPI_ALGO keyword of algo ("?" for a value out of range). */
const char *gcmpi_algo_name(gcmpi_algo algo);

typedef enum gcmpi_comm_select {
    GCMPI_COMM_WORLD_ONLY = 0, /* GCMPI_COMM=world (default): communicators congruent
                                  to MPI_COMM_WORLD (its dups: Horovod, mpi4py, torch) */
    GCMPI_COMM_ALL,            /* every intracommunicator of size >= 2 */
    GCMPI_COMM_NAMES,          /* only communicators whose MPI_Comm_set_name is listed */
} gcmpi_comm_select;

#define GCMPI_MAX_COMM_NAMES 16
#define GCMPI_MAX_EXACT_COUNTS 16
#define GCMPI_COMM_NAME_LEN 128
#define GCMPI_PATH_LEN 1024

typedef struct gcmpi_config {
    int disable;                      /* GCMPI_DISABLE: pass everything through */
    const gc_codec *codec;            /* GCMPI_CODEC (default none: nothing is
                                         compressed until it is set) */
    gc_params params;                 /* GCMPI_RATIO, GCMPI_BITS, GCMPI_BUCKET,
                                         GCMPI_RANK, GCMPI_LOSSLESS, GCMPI_CRC */
    int ef;                           /* GCMPI_EF: error feedback on (1) / off (0);
                                         auto is resolved at load (gcmpi_ef_auto) */
    int ef_auto;                      /* GCMPI_EF was auto: describe says so */
    double ef_momentum;               /* GCMPI_EF_MOMENTUM: DGC momentum correction, 0 = off */
    double momentum;                  /* GCMPI_MOMENTUM: the application's momentum, corrected
                                         transparently (pmpi/coll_momentum.c), 0 = off */
    uint64_t warmup;                  /* GCMPI_WARMUP: calls of a sparse codec's ratio warm-up */
    uint64_t ef_max_bytes;            /* GCMPI_EF_MAX_BYTES: residual memory bound per process */
    uint64_t min_bytes;               /* GCMPI_MIN_BYTES: smaller messages pass through */
    uint64_t max_bytes;               /* GCMPI_MAX_BYTES: larger messages pass through;
                                         UINT64_MAX = no bound (off) */
    gcmpi_algo algo;                  /* GCMPI_ALGO */
    int node_size;                    /* GCMPI_NODE_SIZE: ranks per node, 0 = auto */
    int node_shm;                     /* GCMPI_NODE_SHM: hier's phases inside a node
                                         through a shared window (pmpi/node_shm.c) */
    uint64_t hier_segment;            /* GCMPI_HIER_SEGMENT: least bytes of a segment of
                                         hier's pipeline (pmpi/coll_hier_pipe.c);
                                         0 = off */
    uint64_t seed;                    /* GCMPI_SEED */
    gcmpi_comm_select comm;           /* GCMPI_COMM */
    int n_comm_names;
    char comm_names[GCMPI_MAX_COMM_NAMES][GCMPI_COMM_NAME_LEN];
    int n_comm_excluded;              /* GCMPI_COMM "!NAME" items: never compressed */
    char comm_excluded[GCMPI_MAX_COMM_NAMES][GCMPI_COMM_NAME_LEN];
    const gc_codec *allgather_codec;  /* GCMPI_ALLGATHER_CODEC, auto resolved at load
                                         (gcmpi_allgather_codec_auto) */
    int allgather_codec_auto;         /* GCMPI_ALLGATHER_CODEC was auto: describe says so */
    int allgather_ef;                 /* GCMPI_ALLGATHER_EF: error feedback on allgather */
    int n_exact_counts;               /* GCMPI_EXACT_COUNTS: element counts never */
    uint64_t exact_counts[GCMPI_MAX_EXACT_COUNTS]; /* compressed                    */
    int in_place_only;                /* GCMPI_IN_PLACE_ONLY: compress only MPI_IN_PLACE
                                         allreduces */
    int stats_stderr;                 /* GCMPI_STATS includes "stderr" */
    char stats_json[GCMPI_PATH_LEN];  /* GCMPI_STATS JSON path, "" = none */
    int verify;                       /* GCMPI_VERIFY */
    int verbose;                      /* GCMPI_VERBOSE: 0..3 */
    gc_adapt_config adapt;            /* GCMPI_ADAPT and its GCMPI_GCT_*, GCMPI_EDGC_*,
                                         GCMPI_VAR_* parameters; GCMPI_RATIO=auto with
                                         GCMPI_RATIO_BUDGET/_MIN/_MAX (params.ratio then
                                         holds the starting ratio, GCMPI_RATIO_MAX) */
    int cuda_aware;                   /* GCMPI_CUDA_AWARE: -1 auto, 0 stage, 1 pass device
                                         pointers to MPI (per rank: not hashed) */
    char gpu_lib[GCMPI_PATH_LEN];     /* GCMPI_GPU_LIB, "" = beside libgcmpi.so */
    char auto_cache[GCMPI_PATH_LEN];  /* GCMPI_AUTO_CACHE: "auto", "off" or a directory
                                         (rank 0's is used: not hashed) */
    char source[GCMPI_PATH_LEN];      /* GCMPI_CONFIG file read, "" = none */
} gcmpi_config;

/* Result of reading the configuration. */
typedef struct gcmpi_config_result {
    int ok;                  /* 0: stop the job; error holds why */
    char error[1024];        /* "libgcmpi: GCMPI_RATIO=1.5 is out of range; expected a number in (0, 1]" */
    int n_warnings;
    char warnings[8][512];   /* "libgcmpi: unknown variable GCMPI_RATO=0.1 ignored;
                                did you mean GCMPI_RATIO?" */
} gcmpi_config_result;

/* Read the configuration from an environment (envp-style NULL-terminated
 * array; NULL means the process environ) and an optional GCMPI_CONFIG file
 * (KEY=VALUE lines, '#' comments; environment values win). */
void gcmpi_config_load(gcmpi_config *cfg, gcmpi_config_result *res, char *const *envp);
/* On failure (res->ok == 0) *cfg holds the defaults; res->error names the
 * first bad setting in table order, prefixed with "FILE:LINE: " when the
 * value came from the GCMPI_CONFIG file. Warnings (unknown names, a name set
 * twice in the file) do not stop the job; more than 8 are summarised in the
 * last slot. */

/* Defaults (what an empty environment gives). */
void gcmpi_config_defaults(gcmpi_config *cfg);

/* 64-bit hash of everything that must agree across ranks (payload format
 * version, codec id, params, ef, ef_momentum, min_bytes, algo, seed, comm
 * selection and exclusions, allgather codec and EF, exact counts, in-place
 * only, verify, adapt, disable); excludes per-rank things: stats,
 * verbosity, ef_max_bytes and the file the values came from. */
uint64_t gcmpi_config_hash(const gcmpi_config *cfg);

/* One line per setting, "GCMPI_CODEC=topk ..." for the report header.
 * Returns the length written (snprintf semantics). */
size_t gcmpi_config_describe(const gcmpi_config *cfg, char *buf, size_t len);

/* The settings a short report shows, as gcmpi_config_describe lines: every
 * one whose value differs from the default, and those that matter for cfg
 * (gcmpi_config_matters). Returns the length (snprintf semantics; when buf
 * is too small it holds the lines that fit whole). */
size_t gcmpi_config_describe_brief(const gcmpi_config *cfg, char *buf, size_t len);

/* 1 if variable `name` changes what cfg does: GCMPI_CODEC always; for a
 * compressing codec GCMPI_EF and the parameters that codec reads (topk:
 * GCMPI_RATIO; qsgd: GCMPI_BITS, GCMPI_BUCKET, ...), and the parameters of
 * the adaptive method chosen. 0 for every other name. */
int gcmpi_config_matters(const gcmpi_config *cfg, const char *name);

/* 1 for the variables each rank may set for itself (left out of
 * gcmpi_config_hash): GCMPI_STATS, GCMPI_VERBOSE, GCMPI_EF_MAX_BYTES,
 * GCMPI_CONFIG. */
int gcmpi_config_is_per_rank(const char *name);

/* What GCMPI_EF=auto means for a codec: 0 for compressors that are not
 * contractive (qsgd, terngrad, randk scaled by n/k), 1 otherwise. */
int gcmpi_ef_auto(const gc_codec *codec, const gc_params *p);

/* What GCMPI_ALLGATHER_CODEC=auto means for GCMPI_CODEC=codec: the codec
 * itself when it is near-lossless on any data (fp16, bf16), else none.
 * Gathered data is rarely a gradient: sparsifying or sign codecs would drop
 * most of it, so they are used on allgather only when named explicitly. */
const gc_codec *gcmpi_allgather_codec_auto(const gc_codec *codec);

/* The configuration MPI_Allgather runs with: cfg with its codec set to
 * allgather_codec, ef to allgather_ef, and no momentum correction or
 * adaptive layer (both follow gradients across calls). */
void gcmpi_config_for_allgather(const gcmpi_config *cfg, gcmpi_config *out);

/* The table of known variable names (NULL-terminated), for README and for
 * the typo warning. */
extern const char *const gcmpi_config_names[];

/* The same variables documented, in the same order, ending with name NULL:
 * the source of the README table. default_value is what
 * gcmpi_config_describe prints for gcmpi_config_defaults. */
typedef struct gcmpi_config_doc {
    const char *name;
    const char *type;
    const char *default_value;
    const char *range;
    const char *meaning;
} gcmpi_config_doc;
extern const gcmpi_config_doc gcmpi_config_docs[];

/* 1 if pmpi/ has a native path for codec c (MPI sums its compressed form:
 * none, randk, int8, powersgd), i.e. GCMPI_ALGO=native is accepted with it. */
int gcmpi_codec_has_native_path(const gc_codec *c);

#endif /* GCMPI_CONFIG_H */
