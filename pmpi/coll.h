/* coll.h — the compressed collective algorithms (DESIGN.md "Compressed
 * collectives"). The shim (shim.c) decides eligibility, finds the
 * per-communicator state and the error-feedback slot, and calls these.
 * Every function here is collective over ctx->comm (the shim's private
 * duplicate of the user's communicator) and only calls PMPI_*. All ranks
 * finish with bit-identical results. */
#ifndef GCMPI_COLL_H
#define GCMPI_COLL_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "cost_model.h"
#include "gcmpi_codec.h"
#include "gcmpi_config.h"

/* Scratch buffers owned by one communicator's state, grown and reused so
 * the steady state allocates nothing. */
#define GCMPI_SCRATCH_SLOTS 8
typedef struct gcmpi_scratch {
    void  *buf[GCMPI_SCRATCH_SLOTS];
    size_t cap[GCMPI_SCRATCH_SLOTS];
} gcmpi_scratch;

/* Slots 0..5 belong to the collective algorithms (coll_impl.h names
 * them), slots from GCMPI_SCRATCH_SHIM_FIRST on to the shim: +0 and +1
 * GCMPI_VERIFY's copies (+1 is also the adaptive layer's, adapt_call.h). */
#define GCMPI_SCRATCH_SHIM_FIRST 6

/* Returns a buffer of >= bytes in slot (below GCMPI_SCRATCH_SLOTS), or
 * NULL (out of memory).
 * The contents are not kept when the buffer grows. */
void *gcmpi_scratch_get(gcmpi_scratch *s, unsigned slot, size_t bytes);
void  gcmpi_scratch_free(gcmpi_scratch *s);

/* What one compressed call measured; the shim adds it to the statistics. */
typedef struct gcmpi_call_stats {
    uint64_t bytes_offered;   /* count * sizeof(float) */
    uint64_t bytes_sent;      /* bytes this rank handed to PMPI_* (payloads, sizes) */
    double   encode_s, decode_s, comm_s;
    double   eg_code_bits, eg_fl_bits; /* eg: summed bits (for per-element averages) */
    uint64_t eg_elements;
    int      nonfinite_in;    /* this rank's input held inf or NaN: sent as it
                                 is, no residual or momentum updated */
    int      node_payloads;   /* hier: this rank's node gathered the columns'
                                 payloads, not the summed floats */
} gcmpi_call_stats;

/* Per-buffer slot of one (buffer, count) key, from the shim's store.
 * Residual, server and state are NULL when error feedback is off, adapt
 * when the adaptive layer is. All start zeroed. */
typedef struct gcmpi_ef_slot {
    float *residual;   /* count floats: this rank's residual            */
    float *server;     /* rsag: server residual of this rank's chunk     */
    float *state;      /* codec state: powersgd's Q (warm start), DGC
                          momentum u                                     */
    float *momentum;   /* GCMPI_MOMENTUM (allreduce): 2*count floats, the
                          local momentum u, then the application's momentum
                          m as the library mirrors it (coll_momentum.c)  */
    void *adapt;       /* the adaptive layer's block (gc_adapt.h)        */
    float *history;    /* device buffers: the block's n floats of history,
                          kept apart in device memory after the momentum
                          (gc_adapt.h "the history kept apart"); NULL on
                          the host, where they are in the block          */
    int fresh;         /* 1 on the first call with this key              */
    int adapt_fresh;   /* 1 when adapt is new (zeroed, not initialised)  */
    int state_reset;   /* 1 when state belongs to other parameters (the
                          adaptive layer changed powersgd's rank): start
                          it afresh                                      */
    int *momentum_lapsed; /* kept with the key: 1 when an exact call
                          (passthrough, hier in one node) left u and m
                          behind, so the next call restarts them; NULL
                          without a store entry                          */
} gcmpi_ef_slot;

/* Sizes (in floats) of the server and state parts of a slot for a call.
 * They depend on cfg's static parameters only, never on a call's adapted
 * ones: powersgd's state is sized for the largest rank the adaptive layer
 * can choose. */
void gcmpi_coll_slot_sizes(const gcmpi_config *cfg, gcmpi_algo algo, size_t count,
                           int comm_size, size_t *server_floats, size_t *state_floats);

/* Floats of a slot's momentum part (GCMPI_MOMENTUM) for an allreduce of
 * count floats: 2*count when on, else 0. The shim asks for them, and for a
 * device buffer's adaptive history, after the codec state (one entry, so
 * eviction drops all of a key's state at once) and gcmpi_coll_slot_split
 * points slot->momentum and slot->history at them. */
size_t gcmpi_coll_momentum_floats(const gcmpi_config *cfg, size_t count);
void gcmpi_coll_slot_split(gcmpi_ef_slot *slot, size_t state_floats, size_t momentum_floats,
                           size_t history_floats);

/* The largest powersgd rank a call can use under cfg (cfg->params.rank
 * unless EDGC adapts it). */
unsigned gcmpi_coll_max_rank(const gcmpi_config *cfg);

/* Which ranks of a communicator share a node (coll_hier.c): a node
 * communicator and one of the nodes' leaders (local rank 0 of each node).
 * Built once per communicator and kept in its state. */
typedef struct gcmpi_nodes {
    MPI_Comm node;      /* the ranks of this rank's node, in rank order      */
    MPI_Comm leaders;   /* local rank 0 of every node, in node order;
                           MPI_COMM_NULL on the other ranks                 */
    MPI_Comm column;    /* local rank i of every node (i = node_rank), in
                           node order: hier's reduce-scatter style          */
    int node_rank, node_size; /* this rank in its node, its node's size     */
    int node_index;     /* this rank's node: 0 .. n_nodes-1                  */
    int n_nodes;        /* nodes of the communicator (same on all ranks)     */
    int max_node_size;  /* ranks of the largest node (same on all ranks)     */
    int min_node_size;  /* ranks of the smallest node (same on all ranks)    */
    int *counts, *displs; /* node_size entries each: hier's chunk layout of
                           the current call (not in scratch: the algorithm
                           between nodes uses every scratch slot)          */
    int *by_node;       /* the communicator's ranks node by node (node_index
                           order), each node's in rank order: p entries      */
    int *node_start;    /* n_nodes + 1 entries: node k's ranks are
                           by_node[node_start[k] .. node_start[k + 1] - 1]   */
    int *node_counts, *node_displs; /* n_nodes entries each: the node-by-node
                           payload all-gather's layout of the current call  */
    int shm_possible;   /* the node's ranks share memory (node_shm.h)        */
    struct gcmpi_node_shm *shm; /* its window, made on first use             */
} gcmpi_nodes;

/* Splits comm into nodes: ranks that share memory
 * (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)) when node_size is 0, else
 * consecutive blocks of node_size ranks (GCMPI_NODE_SIZE: one host
 * emulating several nodes; the last node may be smaller). Collective over
 * comm. Returns an MPI error code; *out is NULL on failure. */
int gcmpi_nodes_create(MPI_Comm comm, int node_size, gcmpi_nodes **out);
/* The same with this rank's node named by color (>= 0; ranks of one color
 * form a node, in rank order), or by shared memory when color < 0: nodes
 * that are not consecutive ranks, as a round-robin placement makes them. */
int gcmpi_nodes_create_by_color(MPI_Comm comm, int color, gcmpi_nodes **out);
void gcmpi_nodes_free(gcmpi_nodes *nodes);

/* GCMPI_ALGO=auto (coll_auto.c): the agreed cost model of a communicator
 * and the choices it made, per call size, for the report. */
#define GCMPI_AUTO_MAX_CHOICES 32
#define GCMPI_AUTO_TRIALS 4       /* candidates tried per call size     */
/* Calls each candidate runs: as many as fit GCMPI_AUTO_TRIAL_BUDGET_S by
 * the first round's time (agreed: the slowest rank's), from
 * GCMPI_AUTO_TRIAL_MIN_CALLS to GCMPI_AUTO_TRIAL_CALLS. Three calls of a
 * millisecond on 4 ranks over 2 cores put a flat MPI_Allgather ahead of
 * passthrough (1.38 against 1.58 ms) whose five timed calls then took
 * 1.55 against 1.12; calls that short cost a trial of nine little. */
#define GCMPI_AUTO_TRIAL_CALLS 9
#define GCMPI_AUTO_TRIAL_MIN_CALLS 3
#define GCMPI_AUTO_TRIAL_BUDGET_S 0.2
/* After two rounds, a candidate whose calls were all more than this many
 * times the fastest candidate's best call is left out, and the calls it
 * would have run go to the others as more rounds (up to
 * GCMPI_AUTO_TRIAL_CALLS): on the emulated 2 x 4 cluster a 64 MiB trial
 * ran three rounds of hier (~120 ms), rsag (~170), the flat allgather
 * (~400) and passthrough (~1200), and three calls of the two close ones
 * settled on the slower one. 3: a candidate's first call took up to 4x
 * its later ones there (connections, pages, residuals). */
#define GCMPI_AUTO_PRUNE 3.0
#define GCMPI_AUTO_MARGIN 0.05    /* a lossy pick must beat passthrough's
                                     median call by this fraction          */
#define GCMPI_AUTO_TIE 0.05       /* trial medians this close to the fastest
                                     are a tie: the model's fastest of them */
/* A sparse codec's kept fraction that moved by this factor since a size's
 * trial (GCMPI_WARMUP's decay from 0.25; not under the adaptive layer,
 * whose auto ratio is each rank's own) starts a new trial there, at most
 * GCMPI_AUTO_RETRIALS times a size: a choice settled at a quarter of the
 * elements does not hold at 1 %. */
#define GCMPI_AUTO_RETRIAL_FACTOR 2.0
#define GCMPI_AUTO_RETRIALS 8
/* A call size with no row of its own takes the nearest row within this
 * factor of it that was tried at the same kept fraction (within
 * GCMPI_AUTO_RETRIAL_FACTOR): its trial's candidate, or its settled
 * choice, its time scaled to the row's size by the model. Horovod's
 * default tensor fusion reduced 10 sizes in two epochs of its MNIST
 * example, six of them 21070-21840 floats, in 15 trials; the costs
 * of two algorithms cross slowly with size, so a neighbour's choice
 * loses little where they cross and nothing elsewhere. */
#define GCMPI_AUTO_BAND 1.25
/* A settled size's calls are checked against its trial after
 * GCMPI_AUTO_DRIFT_CALLS of them, then after twice as many each time
 * (one small allreduce a check). When the slowest rank's median of its
 * latest GCMPI_AUTO_DRIFT_CALLS calls is above (1 + GCMPI_AUTO_DRIFT)
 * times the trial's median for the settled algorithm and slower than
 * another candidate's trial median by GCMPI_AUTO_MARGIN, and the calls
 * since the previous check lost at least what the last trial's other
 * candidates cost beyond the settled one, the size is tried again
 * (within GCMPI_AUTO_RETRIALS): a few trial calls caught in a
 * slow moment of a shared host had put native ahead of hier's window
 * (45 against 67 ms, 4 ranks, 64 MiB) whose calls then took 31 against
 * native's 69. */
#define GCMPI_AUTO_DRIFT_CALLS 16
#define GCMPI_AUTO_DRIFT 0.5
/* A trial's outcome as GCMPI_AUTO_CACHE keeps it: a call size, the
 * kept fraction it was tried at (sparse codecs under a warm-up), the
 * algorithm settled on and its median trial call on the slowest rank
 * (what MPI_Allgather's rows are checked against; 0: not known). */
typedef struct gcmpi_auto_settled {
    size_t count;
    double ratio;
    gcmpi_algo algo;
    double median_s;
} gcmpi_auto_settled;

#define GCMPI_AUTO_FIGURES 55
/* What GCMPI_AUTO_CACHE keeps (auto_cache.h): the agreed figures, and the
 * trials' outcomes that a job with the same key settles on without trying
 * its candidates again. */
typedef struct gcmpi_auto_cached {
    double figures[GCMPI_AUTO_FIGURES];
    int n_settled;
    gcmpi_auto_settled settled[GCMPI_AUTO_MAX_CHOICES];
} gcmpi_auto_cached;

typedef struct gcmpi_auto_choice {
    size_t count;          /* floats of the call                        */
    int device;            /* this rank's trial calls included calls on
                              device buffers (rows are per count alone:
                              ranks may differ in where their buffers
                              live, and must agree on the algorithm)     */
    gcmpi_algo algo;       /* what auto runs (after the trial: settled) */
    gcmpi_algo model;      /* the model's pick                          */
    double predicted_s;    /* the model's time for it                   */
    uint64_t calls;        /* calls run with algo once settled          */
    double measured_s;     /* their summed time on this rank (calls of
                              other sizes in its band scaled to count)   */
    /* Calls of other sizes that took this row (GCMPI_AUTO_BAND), trial
     * calls included, and the smallest and largest of those sizes. */
    uint64_t band_calls;
    size_t band_min, band_max;
    /* The trial: the model's three fastest and passthrough, each run for a
     * few calls; the fastest by median call (agreed over ranks: MAX) is
     * settled on. */
    int settled, n_trial;
    int trial_rounds;      /* calls each candidate runs (0: not agreed yet,
                              after the first round)                     */
    int trial_pruned;      /* the slow candidates were left out (after the
                              second round; GCMPI_AUTO_PRUNE)            */
    int trial_dropped[GCMPI_AUTO_TRIALS]; /* left out: runs no more calls */
    gcmpi_algo trial[GCMPI_AUTO_TRIALS];
    int trial_calls[GCMPI_AUTO_TRIALS];
    double trial_s[GCMPI_AUTO_TRIALS][GCMPI_AUTO_TRIAL_CALLS]; /* this rank's
                                                                  call times */
    double trial_median_s[GCMPI_AUTO_TRIALS]; /* each candidate's median call,
                                                 the slowest rank's (agreed) */
    double ratio;          /* sparse codecs: the kept fraction of the
                              latest trial's calls (0: not known)        */
    int retrials;          /* trials started again since the first      */
    int drifted;           /* tried again because its calls fell behind:
                              measured, not settled from the cache (which
                              holds the outcome that fell behind)        */
    int drift_retrials;    /* of retrials, those for that reason         */
    uint64_t picks;        /* settled picks since the trial             */
    unsigned drift_n;      /* settled calls recorded in drift_s (a ring
                              of the latest)                             */
    double drift_s[GCMPI_AUTO_DRIFT_CALLS];
    int from_cache;        /* settled on a cached trial's outcome        */
    /* MPI_Allgather: a cached outcome under its check (coll_auto_gather.c) */
    int checking, checks;  /* check calls running; how many failed      */
    gcmpi_algo check_algo;
    double cached_s;       /* the cached median call                     */
    double check_s;        /* this rank's last check call               */
    double checked_s;      /* the slowest rank's, agreed (0: none yet)  */
} gcmpi_auto_choice;

/* Where a model's figures came from (GCMPI_AUTO_CACHE, auto_cache.h). */
typedef enum gcmpi_auto_source {
    GCMPI_AUTO_MEASURED = 0, /* measured: no cache, or no file for its key  */
    GCMPI_AUTO_CACHED,       /* read from the cache, and its check held     */
    GCMPI_AUTO_REMEASURED    /* the cached figures failed the check:
                                measured again                           */
} gcmpi_auto_source;

#define GCMPI_AUTO_CACHE_FILE_LEN 4352
typedef struct gcmpi_auto_model {
    gcmpi_cost_env env;    /* agreed figures: the same on every rank    */
    double calibration_s;  /* what measuring (or reading and checking
                              the cache) and agreeing took here         */
    gcmpi_auto_source source;
    double check_cached_s, check_fresh_s; /* the checked figure, cached
                              and measured again (0: not checked)        */
    int cache_saved;       /* rank 0: 1 saved, -1 could not be saved    */
    char cache_file[GCMPI_AUTO_CACHE_FILE_LEN]; /* rank 0: "" = no cache */
    struct gcmpi_auto_cache *cache; /* rank 0's file (auto_cache.h), NULL:
                              none, or not rank 0                        */
    gcmpi_auto_cached cached; /* the agreed figures and the trials'
                              outcomes, as a cache file holds them: the
                              same on every rank                         */
    gcmpi_algo inner;      /* hier's algorithm between nodes            */
    int n_choices;
    gcmpi_auto_choice choices[GCMPI_AUTO_MAX_CHOICES];
} gcmpi_auto_model;

/* auto's choices for the compressed MPI_Allgather (coll_auto_gather.c):
 * rows shaped as allreduce's, with no model behind them (a row's model
 * is the way hier takes, its predicted_s 0). */
typedef struct gcmpi_gather_choices {
    int p, n_nodes;           /* the communicator's ranks and nodes      */
    int n;
    gcmpi_auto_choice rows[GCMPI_AUTO_MAX_CHOICES];
    /* GCMPI_AUTO_CACHE: the settled rows of an earlier job with the same
     * key (n_settled, no figures), the same on every rank, and rank 0's
     * file (NULL: none, or not rank 0); cache_saved as the model's. */
    gcmpi_auto_cached cached;
    struct gcmpi_auto_cache *cache;
    int cache_saved;
    char cache_file[GCMPI_AUTO_CACHE_FILE_LEN];
} gcmpi_gather_choices;

/* What a communicator keeps for the algorithms across calls: built on
 * first use (collectively), freed with the communicator's state. */
typedef struct gcmpi_coll_cache {
    gcmpi_nodes *nodes;       /* hier's and auto's node split            */
    gcmpi_auto_model *model;  /* auto's measured model                   */
    gcmpi_gather_choices *gather; /* auto's MPI_Allgather trials         */
} gcmpi_coll_cache;

void gcmpi_coll_cache_free(gcmpi_coll_cache *cache);

typedef struct gcmpi_coll_ctx {
    MPI_Comm comm;             /* private duplicate: never the user's comm */
    int rank, size;
    const gcmpi_config *cfg;
    uint64_t call_seed;        /* identical on all ranks for this call     */
    gc_workspace *ws;          /* this communicator's codec workspace      */
    gcmpi_scratch *scratch;    /* this communicator's buffers              */
    gcmpi_call_stats *stats;   /* filled by the algorithm                  */
    gcmpi_coll_cache *cache;   /* the communicator's node split and auto
                                  model, kept by the owner; NULL: hier
                                  builds a split per call, auto uses the
                                  rule                                      */
    gcmpi_nodes *gather_nodes; /* non-NULL: payload all-gathers go
                                  node by node (the compressed
                                  MPI_Allgather under hier or auto)         */
    int on_device;             /* the call's buffers are device memory: the
                                  device path times the whole call for
                                  auto's trial (staging included), so the
                                  host algorithm it may run inside does not */
    /* The floats gcmpi_coll_run found finite for the call it runs: an
     * encode of a part of them skips the codec's own pass over its input
     * (gc_encode_finite). NULL: none. */
    const float *finite_in;
    size_t finite_n;
} gcmpi_coll_ctx;

/* The algorithm auto picks (or cfg->algo when forced) for this call.
 * A pure function of arguments all ranks share. */
gcmpi_algo gcmpi_coll_choose(const gcmpi_config *cfg, size_t count, int comm_size);

/* The algorithm of this call: for GCMPI_ALGO=auto the cost model's pick
 * (measuring and agreeing the figures on the communicator's first auto
 * call: collective), else gcmpi_coll_choose. Identical on every rank.
 * *rc is an MPI error when measuring failed (every rank then fails). */
gcmpi_algo gcmpi_coll_pick(gcmpi_coll_ctx *ctx, size_t count, int *rc);

/* GCMPI_ALGO=auto: the communicator's model, measured on first use
 * (collective over ctx->comm), and its pick for count floats with the
 * predicted seconds. */
int gcmpi_auto_model_of(gcmpi_coll_ctx *ctx, gcmpi_auto_model **model);
/* The agreement step alone: every rank's GCMPI_AUTO_FIGURES measured
 * figures (times of the primitives at two sizes and a third and fourth
 * large one with their sizes, over the communicator and between leaders;
 * inside a node at three sizes; the input scan's, encode's and decode's
 * times at three sizes; the payload ratio) are all-gathered, each
 * replaced by its (lower) median over ranks and turned into *model, the
 * same on every rank whatever each rank measured.
 * Collective over ctx->comm. */
int gcmpi_auto_agree(gcmpi_coll_ctx *ctx, const gcmpi_nodes *nodes, const double *local,
                     gcmpi_auto_model *model);
gcmpi_algo gcmpi_auto_pick(const gcmpi_config *cfg, const gcmpi_auto_model *model, size_t count,
                           double *predicted);
/* The model at the kept fraction ratio (a warm-up's, not cfg's configured
 * one the codec was timed at): a sparse codec's payload and its union
 * scale with it; others, or ratio 0, are the model as measured. */
gcmpi_cost_env gcmpi_auto_env_at(const gcmpi_config *cfg, const gcmpi_auto_model *model,
                                 double ratio);
/* The algorithms auto chooses from for cfg on env; returns how many. */
int gcmpi_auto_candidates(const gcmpi_config *cfg, const gcmpi_cost_env *env, gcmpi_algo *out);
/* 1 while the row count's call takes (its own, or a neighbour's within
 * GCMPI_AUTO_BAND) is in its trial (auto only): its calls are timed from
 * a barrier. */
int gcmpi_auto_in_trial(gcmpi_coll_ctx *ctx, size_t count);
/* Adds one call's measured seconds to the row the call took (a
 * neighbour's: scaled to that row's size by the model). */
void gcmpi_auto_note(gcmpi_coll_ctx *ctx, size_t count, gcmpi_algo algo, double seconds);

/* The pieces of a trial both collectives' auto use (coll_auto.c). The row
 * of count among rows[0 .. *n) (added when add and there is room; NULL
 * otherwise). */
gcmpi_auto_choice *gcmpi_auto_row(gcmpi_auto_choice *rows, int *n, size_t count, int add);
/* The candidate of an unsettled row whose turn it is (the one with the
 * fewest calls so far), or -1 when each has had its calls. After the first
 * round it agrees on the rounds (one PMPI_Allreduce over ctx->comm, made
 * at the same call on every rank); *rc is its error. */
int gcmpi_auto_next_candidate(gcmpi_coll_ctx *ctx, gcmpi_auto_choice *c, int *rc);
/* Each candidate's median call on the slowest rank, and whether any rank's
 * calls were on device buffers, into c->trial_median_s and c->device: one
 * PMPI_Allreduce (MAX) over ctx->comm, so every rank holds the same. */
int gcmpi_auto_agree_medians(gcmpi_coll_ctx *ctx, gcmpi_auto_choice *c);
/* The agreed median trial call of a settled row's algorithm; 0 when it
 * was not tried (settled from a cache, or a single candidate). */
double gcmpi_auto_settled_median(const gcmpi_auto_choice *c);
/* One call's seconds into its row: a trial call of algo, or (settled) a
 * call of the settled algorithm. */
void gcmpi_auto_record(gcmpi_auto_choice *c, gcmpi_algo algo, double seconds, int on_device);

/* How a compressed MPI_Allgather of count floats a rank travels
 * (coll_auto_gather.c): GCMPI_ALGO_ALLGATHER (the payloads all-gathered
 * flat), GCMPI_ALGO_HIER (node by node, where the communicator spans
 * several nodes of several ranks; flat otherwise) or GCMPI_ALGO_PASS
 * (PMPI_Allgather of the floats, uncompressed). GCMPI_ALGO=hier goes node
 * by node, auto by a trial of the three per count (node by node without
 * the communicator's state), every other value flat. Identical on every
 * rank; collective on a communicator's first call (its node split). *rc
 * is an MPI error when that failed (on every rank). */
gcmpi_algo gcmpi_gather_pick(gcmpi_coll_ctx *ctx, size_t count, int *rc);
/* 1 while count's MPI_Allgather row is in its trial (auto only). */
int gcmpi_gather_in_trial(gcmpi_coll_ctx *ctx, size_t count);
/* Adds one MPI_Allgather call's measured seconds to the row of its count. */
void gcmpi_gather_note(gcmpi_coll_ctx *ctx, size_t count, gcmpi_algo way, double seconds);

/* The fixed rule (coll_choose.c) over comm_size ranks, whatever cfg->algo
 * says: never hier. hier runs it between its nodes. */
gcmpi_algo gcmpi_coll_rule(const gcmpi_config *cfg, size_t count, int comm_size);

/* out[0..count) = sum over ranks of in[0..count), compressed with
 * cfg->codec. in may equal out (MPI_IN_PLACE resolved by the shim).
 * Returns MPI_SUCCESS or an MPI error code. */
int gcmpi_allreduce_compressed(gcmpi_coll_ctx *ctx, gcmpi_algo algo, const float *in,
                               float *out, size_t count, gcmpi_ef_slot *ef);

/* out[r*count .. (r+1)*count) = block of rank r, each block compressed
 * and travelling as way says (gcmpi_gather_pick's; GCMPI_ALGO_AUTO or
 * GCMPI_ALGO_RULE: picked here), or passed through uncompressed. block may
 * be out + rank*count (MPI_IN_PLACE). Times the call for auto's trial
 * unless ctx->on_device (the device path times its own). */
int gcmpi_allgather_compressed(gcmpi_coll_ctx *ctx, gcmpi_algo way, const float *block,
                               float *out, size_t count, gcmpi_ef_slot *ef);

#endif
