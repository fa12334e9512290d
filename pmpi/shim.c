/* shim.c — the interposed MPI functions (STYLE.md "One place knows PMPI").
 *
 * Each wrapper is thin: decide eligibility, hand the call to the compressed
 * collectives (coll.h), or call PMPI_* with the arguments untouched. The
 * library only ever calls PMPI_*, and its own traffic runs on private
 * duplicates of the communicators. Nothing happens before MPI_Init or
 * MPI_Init_thread has succeeded (STYLE.md "Inert until MPI_Init"): no
 * constructors, no output, no allocation. */
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapt_call.h"
#include "coll.h"
#include "coll_device.h"
#include "comm_state.h"
#include "device.h"
#include "device_stage.h"
#include "ef_store.h"
#include "eligible.h"
#include "gcmpi_config.h"
#include "init_check.h"
#include "node_shm.h"
#include "report.h"
#include "stats.h"

#define GCMPI_EXPORT __attribute__((visibility("default")))

#ifndef GCMPI_VERSION
#define GCMPI_VERSION GC_VERSION_STRING
#endif

static gcmpi_config cfg;        /* immutable between MPI_Init and MPI_Finalize  */
static gcmpi_config ag_cfg;     /* what MPI_Allgather runs with (its codec and
                                   error feedback), derived once from cfg       */
static int active;              /* 1 while the library intercepts               */
static MPI_Comm world;          /* private duplicate of MPI_COMM_WORLD: report */
static int world_rank;          /* rank in MPI_COMM_WORLD: 0 keeps timelines    */

/* Set while the library itself is inside MPI, so an MPI library that calls
 * its own MPI_* entry points never re-enters the shim. Per thread: under
 * MPI_THREAD_MULTIPLE another thread's call must still be intercepted. */
static _Thread_local int inside;

static int intercepting(void)
{
    return active && !inside;
}

/* ---- MPI_Init / MPI_Init_thread ---------------------------------------- */

/* Stops every rank cleanly after each printed its message: no hang, no
 * abort banner, a non-zero exit status for mpirun. All ranks get here
 * together because the decision comes from one PMPI_Allreduce. */
static void stop_job(void)
{
    fflush(stderr);
    PMPI_Finalize();
    exit(1);
}

/* The describe lines joined into one line, so that messages of different
 * ranks do not interleave line by line. */
static void describe_one_line(char *buf, size_t len)
{
    gcmpi_config_describe(&cfg, buf, len);
    for (char *c = buf; *c; c++)
        if (*c == '\n') *c = ' ';
    size_t n = strlen(buf);
    while (n > 0 && buf[n - 1] == ' ') buf[--n] = '\0';
}

static const char *thread_level_name(int level)
{
    switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    }
    return "unknown";
}

static void start(int thread_level)
{
    inside = 1;
    static gcmpi_config_result res; /* 5 KB: off the stack of the caller */
    gcmpi_config_load(&cfg, &res, NULL);
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    world_rank = rank;

    /* One MPI_MAX tells every rank whether any configuration is invalid and
     * the smallest and largest hash (max of ~h is ~min h). The program has
     * no message in flight inside MPI_Init, so MPI_COMM_WORLD is safe. */
    /* Rank 0 writes the statistics: a path it cannot write stops the job
     * now, not after it ran. */
    if (res.ok && rank == 0 && gcmpi_stats_path_check(&cfg, res.error, sizeof res.error) != 0)
        res.ok = 0;
    uint64_t hash = res.ok ? gcmpi_config_hash(&cfg) : 0;
    uint64_t agree[3] = {res.ok ? 0u : 1u, hash, ~hash};
    PMPI_Allreduce(MPI_IN_PLACE, agree, 3, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    if (agree[0]) {
        if (!res.ok)
            fprintf(stderr, "%s (rank %d)\n", res.error, rank);
        else
            fprintf(stderr,
                    "libgcmpi: rank %d stops: the GCMPI_* configuration of another rank is "
                    "invalid (see its message)\n",
                    rank);
        stop_job();
    }
    if (agree[1] != ~agree[2]) {
        gcmpi_explain_mismatch(&cfg, MPI_COMM_WORLD);
        stop_job();
    }
    if (rank == 0)
        for (int i = 0; i < res.n_warnings && i < 8; i++) fprintf(stderr, "%s\n", res.warnings[i]);

    int real_size = 0;
    if (PMPI_Type_size(MPI_REAL, &real_size) == MPI_SUCCESS && real_size == (int)sizeof(float))
        gcmpi_eligible_accept_as_float(MPI_REAL);
    gcmpi_config_for_allgather(&cfg, &ag_cfg);
    gcmpi_ef_set_limit(cfg.ef_max_bytes);
    gcmpi_device_setup(&cfg);
    if (gcmpi_comm_state_setup(&cfg) != MPI_SUCCESS ||
        PMPI_Comm_dup(MPI_COMM_WORLD, &world) != MPI_SUCCESS) {
        fprintf(stderr, "libgcmpi: rank %d: MPI refused a keyval or a communicator at "
                        "MPI_Init; stopping the job\n", rank);
        PMPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (cfg.verbose >= 1 && rank == 0) {
        char desc[4096];
        describe_one_line(desc, sizeof desc);
        fprintf(stderr, "libgcmpi %s: active (%s, %s): %s\n", GCMPI_VERSION,
                gcmpi_compression_on(&cfg) ? "compressing" : "passing everything through",
                thread_level_name(thread_level), desc);
    }
    active = 1;
    inside = 0;
}

GCMPI_EXPORT int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    if (rc != MPI_SUCCESS || inside) return rc;
    int provided = MPI_THREAD_SINGLE;
    PMPI_Query_thread(&provided);
    start(provided);
    return rc;
}

GCMPI_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc != MPI_SUCCESS || inside) return rc;
    start(*provided);
    return rc;
}

/* ---- MPI_Finalize ------------------------------------------------------ */

GCMPI_EXPORT int MPI_Finalize(void)
{
    if (intercepting()) {
        inside = 1;
        active = 0;
        /* States of MPI_COMM_WORLD, MPI_COMM_SELF and communicators the
         * program kept go before PMPI_Finalize, which would otherwise run
         * their delete callbacks when freeing the duplicates is too late. */
        gcmpi_node_shm_finalizing();
        gcmpi_comm_state_teardown();
        gcmpi_report_finalize(&cfg, world);
        gcmpi_device_teardown();
        gcmpi_stats_clear();
        gcmpi_timeline_clear();
        PMPI_Comm_free(&world);
        inside = 0;
    }
    return PMPI_Finalize();
}

/* ---- one compressed call ----------------------------------------------- */

/* The communicator state when the call is compressed, NULL to pass it
 * through. Calls that are not float sums cost a few comparisons and a
 * relaxed counter; float sums find their communicator's cached decision
 * and count why they passed through (passed_by). */
static gcmpi_comm_state *target_of(gcmpi_skip skip, MPI_Comm comm, gcmpi_kind kind)
{
    if (skip == GCMPI_SKIP_DISABLED) return NULL;
    if (skip != GCMPI_ELIGIBLE && !gcmpi_skip_counted(skip)) {
        gcmpi_stats_count_other();
        return NULL;
    }
    /* Nothing compressed at all: no state, no statistics. */
    if (skip == GCMPI_SKIP_NO_CODEC && !gcmpi_compression_on(&cfg)) return NULL;
    if (comm == MPI_COMM_NULL) return NULL; /* PMPI_* reports the error */
    gcmpi_comm_state *st = gcmpi_comm_state_of(comm);
    if (!st) return NULL;
    if (skip != GCMPI_ELIGIBLE || st->skip != GCMPI_ELIGIBLE) {
        const gcmpi_skip why = skip != GCMPI_ELIGIBLE ? skip : st->skip;
        gcmpi_stats_add_passed(&st->stats[kind], why);
        if (cfg.verbose >= 3)
            fprintf(stderr, "libgcmpi: rank %d: %s on %s passed through: %s\n", st->rank,
                    gcmpi_kind_name(kind), st->label, gcmpi_skip_reason(why));
        return NULL;
    }
    return st;
}

static int named(const gc_codec *codec, const char *name)
{
    return strcmp(gc_codec_name(codec), name) == 0;
}

static int codec_is(const char *name)
{
    return named(cfg.codec, name);
}

/* Codecs whose gc_params.ratio is their setting. */
static int uses_ratio(const gc_codec *c)
{
    return named(c, "topk") || named(c, "randk") || named(c, "dgc") || named(c, "topkq");
}

static int has_ratio(void)
{
    return uses_ratio(cfg.codec);
}

/* GCMPI_VERBOSE=3: one line per compressed call, with the communicator's
 * compressed call number and the parameters the call used (the adaptive
 * layer's decision, the same text on every rank). */
static void trace_call(const gcmpi_comm_state *st, gcmpi_kind kind, size_t count,
                       gcmpi_algo algo, const gcmpi_ef_slot *slot, const gc_params *used)
{
    const gc_codec *codec = kind == GCMPI_KIND_ALLGATHER ? ag_cfg.codec : cfg.codec;
    char setting[64] = "", how[48];
    if (uses_ratio(codec)) snprintf(setting, sizeof setting, ", ratio %.9g", used->ratio);
    else if (named(codec, "powersgd")) snprintf(setting, sizeof setting, ", rank %u", used->rank);
    if (kind == GCMPI_KIND_ALLGATHER && algo != GCMPI_ALGO_PASS)
        snprintf(how, sizeof how, "blocks of %s, %s", gc_codec_name(codec),
                 algo == GCMPI_ALGO_HIER ? "node by node" : "flat");
    else snprintf(how, sizeof how, "%s", gcmpi_algo_name(algo));
    fprintf(stderr, "libgcmpi: rank %d: %s of %zu floats on %s: %s, %s, call %llu%s\n", st->rank,
            gcmpi_kind_name(kind), count, st->label, how,
            !slot->residual ? "no residual" : slot->fresh ? "new residual" : "residual reused",
            (unsigned long long)st->calls, setting);
}

/* Shared by all ranks of the communicator: the configured seed and the
 * number of compressed calls on it so far. */
static uint64_t next_call_seed(gcmpi_comm_state *st)
{
    uint64_t z = cfg.seed + 0x9E3779B97F4A7C15ull * ++st->calls;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static gcmpi_coll_ctx context_of(gcmpi_comm_state *st, gcmpi_call_stats *cs)
{
    gcmpi_coll_ctx ctx = {
        .comm = st->dup,
        .rank = st->rank,
        .size = st->size,
        .cfg = &cfg,
        .call_seed = next_call_seed(st),
        .ws = st->ws,
        .scratch = &st->scratch,
        .stats = cs,
        .cache = &st->cache,
    };
    return ctx;
}

/* The key's slot: residuals when error feedback is on, the adaptive block
 * when the layer is (count floats of the first allreduce key; for a device
 * buffer its history is device memory after the codec state). */
static gcmpi_ef_entry *residual_of(gcmpi_comm_state *st, const gcmpi_ef_key *key,
                                   gcmpi_algo algo, gcmpi_ef_slot *slot, int on_dev)
{
    const int allreduce = key->kind == GCMPI_KIND_ALLREDUCE;
    const gcmpi_config *c = allreduce ? &cfg : &ag_cfg;
    const int residuals = allreduce ? st->residuals : st->allgather_residuals;
    const size_t adapt = allreduce ? gcmpi_adapt_slot_bytes(&cfg, (size_t)key->count, on_dev) : 0;
    const size_t history = allreduce ? gcmpi_adapt_device_floats(&cfg, (size_t)key->count, on_dev) : 0;
    if (!st->ef || (!residuals && adapt == 0) || algo == GCMPI_ALGO_PASS) {
        memset(slot, 0, sizeof *slot);
        slot->fresh = slot->adapt_fresh = 1;
        return NULL;
    }
    size_t server = 0, state = 0, momentum = 0;
    if (residuals) {
        gcmpi_coll_slot_sizes(c, algo, key->count, st->size, &server, &state);
        if (allreduce) momentum = gcmpi_coll_momentum_floats(c, key->count);
    }
    gcmpi_ef_entry *e = gcmpi_ef_acquire_in(st->ef, key, on_dev ? GCMPI_EF_DEVICE : GCMPI_EF_HOST,
                                            residuals ? key->count : 0, server,
                                            state + momentum + history, adapt, slot);
    gcmpi_coll_slot_split(slot, state, momentum, history);
    return e;
}

/* A copy for GCMPI_VERIFY; stops the job when memory runs out, because
 * the exact collective that follows must run on every rank or on none. */
static float *verify_buffer(gcmpi_comm_state *st, unsigned slot, size_t floats)
{
    float *buf = gcmpi_scratch_get(&st->scratch, GCMPI_SCRATCH_SHIM_FIRST + slot,
                                   floats * sizeof(float));
    if (!buf) {
        fprintf(stderr, "libgcmpi: out of memory for GCMPI_VERIFY; stopping the job\n");
        PMPI_Abort(st->user, 1);
    }
    return buf;
}

static double relative_error(const float *exact, const float *got, size_t n)
{
    double diff = 0.0, norm = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)exact[i] - (double)got[i];
        diff += d * d;
        norm += (double)exact[i] * (double)exact[i];
    }
    return norm > 0.0 ? sqrt(diff / norm) : sqrt(diff);
}

static int exact_allreduce(float *buf, size_t count, MPI_Comm comm)
{
#ifdef GCMPI_HAVE_LARGE_COUNT
    if (count > INT_MAX)
        return PMPI_Allreduce_c(MPI_IN_PLACE, buf, (MPI_Count)count, MPI_FLOAT, MPI_SUM, comm);
#endif
    return PMPI_Allreduce(MPI_IN_PLACE, buf, (int)count, MPI_FLOAT, MPI_SUM, comm);
}

static int exact_allgather(const float *block, float *out, size_t count, MPI_Comm comm)
{
#ifdef GCMPI_HAVE_LARGE_COUNT
    if (count > INT_MAX)
        return PMPI_Allgather_c(block, (MPI_Count)count, MPI_FLOAT, out, (MPI_Count)count,
                                MPI_FLOAT, comm);
#endif
    return PMPI_Allgather(block, (int)count, MPI_FLOAT, out, (int)count, MPI_FLOAT, comm);
}

/* MPI semantics for a failed call: the communicator's error handler runs
 * (MPI_ERRORS_ARE_FATAL stops the job, so no rank waits forever), and with
 * MPI_ERRORS_RETURN the code is returned. */
static int call_failed(gcmpi_comm_state *st, MPI_Comm comm, const char *what, int rc)
{
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (PMPI_Error_string(rc, msg, &len) != MPI_SUCCESS)
        snprintf(msg, sizeof msg, "MPI error %d", rc);
    fprintf(stderr, "libgcmpi: rank %d: compressed %s on %s failed: %s\n", st->rank, what,
            st->label, msg);
    PMPI_Comm_call_errhandler(comm, rc);
    return rc;
}

/* rank 0 of MPI_COMM_WORLD: one timeline point per call. ratio and rank
 * are what the call used (adapted or configured), bits topkq's mean width
 * when adapted, else its configured one. */
static void timeline_add(gcmpi_comm_state *st, const gc_params *used,
                         const gc_adapt_report *rep, const gcmpi_call_stats *cs, size_t count)
{
    if (world_rank != 0) return;
    if (!st->timeline) st->timeline = gcmpi_timeline_create(st->label, gc_codec_name(cfg.codec));
    if (!st->timeline) return; /* out of memory: the report lacks this timeline */
    double v[GCMPI_TL_FIELDS];
    v[GCMPI_TL_RATIO] = has_ratio() ? used->ratio : NAN;
    v[GCMPI_TL_RANK] = codec_is("powersgd") ? (double)used->rank : NAN;
    v[GCMPI_TL_BITS] = !isnan(rep->bits) ? rep->bits : codec_is("topkq") ? used->bits : NAN;
    v[GCMPI_TL_LAMBDA] = rep->lambda;
    v[GCMPI_TL_ENTROPY] = rep->entropy;
    v[GCMPI_TL_VARIANCE] = rep->variance;
    const double el = (double)cs->eg_elements;
    v[GCMPI_TL_EG_BITS] = cs->eg_elements ? cs->eg_code_bits / el : NAN;
    v[GCMPI_TL_FL_BITS] = cs->eg_elements ? cs->eg_fl_bits / el : NAN;
    v[GCMPI_TL_SENT_BITS] = 8.0 * (double)cs->bytes_sent / (double)count;
    v[GCMPI_TL_COMM_MS] = 1e3 * cs->comm_s;
    gcmpi_timeline_add(st->timeline, st->calls, v);
}

/* MPI_Allreduce, compressed. Under a warm-up, and with the adaptive layer
 * on, the algorithms get a per-call copy of the configuration holding
 * this call's agreed parameters; auto's pick sees the warm-up's ratio
 * (a trial and its cached outcome are of the ratio the calls send at),
 * not the adaptive layer's, which follows each rank's own link time. */
static int allreduce_run(gcmpi_comm_state *st, MPI_Comm comm, const void *sendbuf,
                         void *recvbuf, size_t count, int on_dev)
{
    inside = 1;
    int in_place = sendbuf == MPI_IN_PLACE;
    const float *in = in_place ? recvbuf : sendbuf;
    gcmpi_call_stats cs = {.bytes_offered = count * sizeof(float)};
    gcmpi_coll_ctx ctx = context_of(st, &cs);
    int rc = MPI_SUCCESS;
    gcmpi_config call;
    const gc_params *used = &cfg.params;
    /* DGC's warm-up: a floor under the configured ratio, from a call
     * position all ranks share; before the pick, for auto's trial and its
     * cached outcomes are of the ratio the call sends at. Under the
     * adaptive layer the floor goes under its ratio, further down. */
    const int warming = has_ratio() && cfg.warmup > 0 && count > 0;
    if (warming && !gc_adapt_active(&cfg.adapt)) {
        const double warm = gcmpi_warmup_ratio(&st->warmup, count, used->ratio, cfg.warmup);
        if (warm > used->ratio) {
            call = cfg;
            call.params.ratio = warm;
            ctx.cfg = &call;
            used = &call.params;
        }
    }
    /* auto measures the communicator on its first call (collective). */
    gcmpi_algo algo = gcmpi_coll_pick(&ctx, count, &rc);
    gcmpi_ef_key key = {in_place ? NULL : sendbuf, recvbuf, count, GCMPI_KIND_ALLREDUCE,
                        algo == GCMPI_ALGO_HIER};
    gcmpi_ef_slot slot;
    gcmpi_ef_entry *entry = residual_of(st, &key, algo, &slot, on_dev);
    float *exact = NULL;
    if (cfg.verify) {
        exact = verify_buffer(st, 0, count);
        if (count && on_dev) gcmpi_device_copy(exact, in, count * sizeof(float), 0);
        else if (count) memcpy(exact, in, count * sizeof(float));
    }

    /* count is the same on every rank: all adapt, or none does. Only then
     * is the configuration copied (it holds a few KiB of names and paths). */
    const int adaptive = gc_adapt_active(&cfg.adapt) && count > 0 && rc == MPI_SUCCESS;
    gcmpi_adapt_call ac;
    const float *send = in;
    if (adaptive) {
        call = cfg;
        ctx.cfg = &call;
        used = &call.params;
        rc = gcmpi_adapt_begin(&ac, &cfg, st, &ctx, &slot, in, count, on_dev, &call, &send);
    }
    /* The warm-up's floor under the adapted ratio. */
    if (warming && adaptive && rc == MPI_SUCCESS) {
        const double warm = gcmpi_warmup_ratio(&st->warmup, count, used->ratio, cfg.warmup);
        if (warm > used->ratio) {
            ctx.cfg = &call;
            used = &call.params;
            call.params.ratio = warm;
        }
    }

    if (cfg.verbose >= 3) trace_call(st, GCMPI_KIND_ALLREDUCE, count, algo, &slot, used);

    if (rc == MPI_SUCCESS && on_dev)
        rc = gcmpi_device_allreduce_compressed(&ctx, algo, send, recvbuf, count, &slot);
    else if (rc == MPI_SUCCESS)
        rc = gcmpi_allreduce_compressed(&ctx, algo, send, recvbuf, count, &slot);
    gc_adapt_report rep = {NAN, NAN, NAN, NAN, NAN, NAN};
    if (adaptive)
        gcmpi_adapt_end(&ac, &cfg, st, rc == MPI_SUCCESS, recvbuf, count, &cs, &rep);
    gcmpi_ef_release(entry);
    gcmpi_stats_add_call(&st->stats[GCMPI_KIND_ALLREDUCE], &cs, rc != MPI_SUCCESS);
    if (rc == MPI_SUCCESS && count > 0) timeline_add(st, used, &rep, &cs, count);

    if (rc == MPI_SUCCESS && exact) {
        rc = exact_allreduce(exact, count, st->dup);
        const float *got = recvbuf;
        if (rc == MPI_SUCCESS && on_dev) {
            float *host = verify_buffer(st, 1, count);
            rc = gcmpi_device_copy(host, recvbuf, count * sizeof(float), 0);
            got = host;
        }
        if (rc == MPI_SUCCESS)
            gcmpi_stats_add_verify(&st->stats[GCMPI_KIND_ALLREDUCE],
                                   relative_error(exact, got, count));
    }
    inside = 0;
    return rc == MPI_SUCCESS ? rc : call_failed(st, comm, "MPI_Allreduce", rc);
}

/* MPI_Allgather, compressed with GCMPI_ALLGATHER_CODEC and the configured
 * (static) parameters: the adaptive layer adapts allreduce only (a
 * gathered block is not a gradient summed with others, and its state would
 * have nothing to observe). */
static int allgather_run(gcmpi_comm_state *st, MPI_Comm comm, const void *sendbuf,
                         void *recvbuf, size_t count, int on_dev)
{
    inside = 1;
    int in_place = sendbuf == MPI_IN_PLACE;
    const float *block = in_place ? (const float *)recvbuf + (size_t)st->rank * count : sendbuf;
    gcmpi_call_stats cs = {.bytes_offered = count * sizeof(float)};
    gcmpi_coll_ctx ctx = context_of(st, &cs);
    ctx.cfg = &ag_cfg;
    /* How the payloads travel, or passthrough (auto's trial): before the
     * slot, which passthrough does not touch. */
    int rc = MPI_SUCCESS;
    const gcmpi_algo way = gcmpi_gather_pick(&ctx, count, &rc);
    gcmpi_ef_key key = {in_place ? NULL : sendbuf, recvbuf, count, GCMPI_KIND_ALLGATHER, 0};
    gcmpi_ef_slot slot;
    gcmpi_ef_entry *entry = residual_of(
        st, &key, way == GCMPI_ALGO_PASS ? GCMPI_ALGO_PASS : GCMPI_ALGO_ALLGATHER, &slot, on_dev);
    float *copy = NULL;
    if (cfg.verify) {
        copy = verify_buffer(st, 0, count);
        if (count && on_dev) gcmpi_device_copy(copy, block, count * sizeof(float), 0);
        else if (count) memcpy(copy, block, count * sizeof(float));
    }

    if (cfg.verbose >= 3) trace_call(st, GCMPI_KIND_ALLGATHER, count, way, &slot, &cfg.params);
    if (rc == MPI_SUCCESS)
        rc = on_dev ? gcmpi_device_allgather_compressed(&ctx, way, block, recvbuf, count, &slot)
                    : gcmpi_allgather_compressed(&ctx, way, block, recvbuf, count, &slot);
    gcmpi_ef_release(entry);
    gcmpi_stats_add_call(&st->stats[GCMPI_KIND_ALLGATHER], &cs, rc != MPI_SUCCESS);

    if (rc == MPI_SUCCESS && copy) {
        size_t total = count * (size_t)st->size;
        float *exact = verify_buffer(st, 1, total);
        rc = exact_allgather(copy, exact, count, st->dup);
        const float *got = recvbuf;
        if (rc == MPI_SUCCESS && on_dev) {
            float *host = verify_buffer(st, 0, total); /* copy is used up */
            rc = gcmpi_device_copy(host, recvbuf, total * sizeof(float), 0);
            got = host;
        }
        if (rc == MPI_SUCCESS)
            gcmpi_stats_add_verify(&st->stats[GCMPI_KIND_ALLGATHER],
                                   relative_error(exact, got, total));
    }
    inside = 0;
    return rc == MPI_SUCCESS ? rc : call_failed(st, comm, "MPI_Allgather", rc);
}

/* ---- device buffers (device.h) ------------------------------------------ */

/* A call whose buffers are (partly) CUDA device memory: compressed on the
 * device when st is set, else staged through host memory or handed over
 * (device_stage.h). Runs under the device lock; inside is set while the
 * shim itself calls PMPI_*. */
static int device_call_begin(void)
{
    gcmpi_device_lock();
    gcmpi_device_stats_mut()->calls++;
    return 1;
}

static int device_call_end(int rc)
{
    gcmpi_device_unlock();
    return rc;
}

static int staging_failed(MPI_Comm comm, const char *what, int rc)
{
    fprintf(stderr, "libgcmpi: rank %d: %s on device buffers: staging through host memory "
                    "failed (MPI error %d)\n", world_rank, what, rc);
    PMPI_Comm_call_errhandler(comm, rc);
    return rc;
}

/* After PMPI_* ran on the staged buffers: its failure is returned as it is
 * (it already ran the error handler); a failed copy back is reported. */
static int staged_result(gcmpi_stage *sg, int mpi, MPI_Comm comm, const char *what)
{
    if (mpi != MPI_SUCCESS) return mpi;
    int rc = gcmpi_stage_finish(sg, mpi);
    return rc == MPI_SUCCESS ? rc : staging_failed(comm, what, rc);
}

/* ---- the wrappers, one macro per shape (int and MPI-4 MPI_Count) --------- */

#define GCMPI_ALLREDUCE_WRAPPER(NAME, REAL, COUNT_T)                                      \
    GCMPI_EXPORT int NAME(const void *sendbuf, void *recvbuf, COUNT_T count,             \
                          MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)               \
    {                                                                                    \
        gcmpi_comm_state *st = NULL;                                                     \
        if (!intercepting()) return REAL(sendbuf, recvbuf, count, datatype, op, comm);   \
        st = target_of(gcmpi_eligible_allreduce(&cfg, sendbuf, datatype, op,             \
                                                (int64_t)count),                         \
                       comm, GCMPI_KIND_ALLREDUCE);                                      \
        if (gcmpi_device_any(sendbuf, recvbuf) && device_call_begin()) {                 \
            if (st) return device_call_end(                                              \
                allreduce_run(st, comm, sendbuf, recvbuf, (size_t)count, 1));            \
            gcmpi_stage sg;                                                              \
            inside = 1;                                                                  \
            int rc = gcmpi_stage_allreduce(&sg, sendbuf, recvbuf, (int64_t)count,        \
                                           datatype);                                    \
            if (rc != MPI_SUCCESS) rc = staging_failed(comm, "MPI_Allreduce", rc);       \
            else rc = staged_result(&sg, REAL(sg.send, sg.recv, count, datatype, op,     \
                                              comm), comm, "MPI_Allreduce");             \
            inside = 0;                                                                  \
            return device_call_end(rc);                                                  \
        }                                                                                \
        if (!st) return REAL(sendbuf, recvbuf, count, datatype, op, comm);               \
        return allreduce_run(st, comm, sendbuf, recvbuf, (size_t)count, 0);              \
    }

#define GCMPI_ALLGATHER_WRAPPER(NAME, REAL, COUNT_T)                                      \
    GCMPI_EXPORT int NAME(const void *sendbuf, COUNT_T sendcount, MPI_Datatype sendtype, \
                          void *recvbuf, COUNT_T recvcount, MPI_Datatype recvtype,       \
                          MPI_Comm comm)                                                 \
    {                                                                                    \
        gcmpi_comm_state *st = NULL;                                                     \
        if (!intercepting())                                                             \
            return REAL(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,      \
                        comm);                                                           \
        st = target_of(gcmpi_eligible_allgather(&cfg, sendbuf, (int64_t)sendcount,       \
                                                sendtype, (int64_t)recvcount, recvtype), \
                       comm, GCMPI_KIND_ALLGATHER);                                      \
        if (gcmpi_device_any(sendbuf, recvbuf) && device_call_begin()) {                 \
            if (st) return device_call_end(                                              \
                allgather_run(st, comm, sendbuf, recvbuf, (size_t)recvcount, 1));        \
            gcmpi_stage sg;                                                              \
            inside = 1;                                                                  \
            int rc = gcmpi_stage_allgather(&sg, sendbuf, (int64_t)sendcount, sendtype,   \
                                           recvbuf, (int64_t)recvcount, recvtype, comm); \
            if (rc != MPI_SUCCESS) rc = staging_failed(comm, "MPI_Allgather", rc);       \
            else rc = staged_result(&sg, REAL(sg.send, sendcount, sendtype, sg.recv,     \
                                              recvcount, recvtype, comm),                \
                                    comm, "MPI_Allgather");                              \
            inside = 0;                                                                  \
            return device_call_end(rc);                                                  \
        }                                                                                \
        if (!st)                                                                         \
            return REAL(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,      \
                        comm);                                                           \
        return allgather_run(st, comm, sendbuf, recvbuf, (size_t)recvcount, 0);          \
    }

/* MPI_Bcast and MPI_Allgatherv are never compressed: they are intercepted
 * only so that device buffers reach an MPI that is not CUDA-aware through
 * host memory (device_stage.h); a host-only job pays the one check of
 * gcmpi_device_any. */
#define GCMPI_BCAST_WRAPPER(NAME, REAL, COUNT_T)                                          \
    GCMPI_EXPORT int NAME(void *buffer, COUNT_T count, MPI_Datatype datatype, int root,  \
                          MPI_Comm comm)                                                 \
    {                                                                                    \
        if (!intercepting() || !gcmpi_device_any(buffer, NULL))                          \
            return REAL(buffer, count, datatype, root, comm);                            \
        device_call_begin();                                                             \
        gcmpi_stage sg;                                                                  \
        inside = 1;                                                                      \
        int rc = gcmpi_stage_bcast(&sg, buffer, (int64_t)count, datatype, root, comm);   \
        if (rc != MPI_SUCCESS) rc = staging_failed(comm, "MPI_Bcast", rc);               \
        else rc = staged_result(&sg, REAL(sg.recv, count, datatype, root, comm), comm,   \
                                "MPI_Bcast");                                            \
        inside = 0;                                                                      \
        return device_call_end(rc);                                                      \
    }

#define GCMPI_ALLGATHERV_WRAPPER(NAME, REAL, COUNT_T, DISPL_T)                            \
    GCMPI_EXPORT int NAME(const void *sendbuf, COUNT_T sendcount, MPI_Datatype sendtype, \
                          void *recvbuf, const COUNT_T recvcounts[],                     \
                          const DISPL_T displs[], MPI_Datatype recvtype, MPI_Comm comm)  \
    {                                                                                    \
        if (!intercepting() || !gcmpi_device_any(sendbuf, recvbuf))                      \
            return REAL(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,       \
                        recvtype, comm);                                                 \
        device_call_begin();                                                             \
        gcmpi_stage sg;                                                                  \
        inside = 1;                                                                      \
        int peers = 0;                                                                   \
        int rc = gcmpi_stage_peers(comm, &peers);                                        \
        int64_t lo = INT64_MAX, hi = INT64_MIN, total = 0;                               \
        for (int r = 0; rc == MPI_SUCCESS && r < peers; r++) {                           \
            if (recvcounts[r] <= 0) continue;                                            \
            const int64_t d = (int64_t)displs[r], c = (int64_t)recvcounts[r];            \
            lo = d < lo ? d : lo;                                                        \
            hi = d + c > hi ? d + c : hi;                                                \
            total += c;                                                                  \
        }                                                                                \
        if (total == 0) lo = hi = 0;                                                     \
        if (rc == MPI_SUCCESS)                                                           \
            rc = gcmpi_stage_allgatherv(&sg, sendbuf, (int64_t)sendcount, sendtype,      \
                                        recvbuf, lo, hi, total, recvtype);               \
        if (rc != MPI_SUCCESS) rc = staging_failed(comm, "MPI_Allgatherv", rc);          \
        else rc = staged_result(&sg, REAL(sg.send, sendcount, sendtype, sg.recv,         \
                                          recvcounts, displs, recvtype, comm),           \
                                comm, "MPI_Allgatherv");                                 \
        inside = 0;                                                                      \
        return device_call_end(rc);                                                      \
    }

/* MPI_Iallreduce and MPI_Iallgather are not compressed: the compressed
 * collectives are sequences of blocking calls, and a nonblocking call must
 * return without waiting for other ranks. They are intercepted only to
 * count the calls the blocking forms would have compressed, so the report
 * tells a job that reduces its gradients with them why nothing shrank;
 * the arguments go to PMPI_* untouched, and only local MPI calls are made
 * here (no communicator state is attached: its first use is collective). */
static void note_nonblocking(gcmpi_skip skip, MPI_Comm comm, const char *what, uint64_t bytes)
{
    if (skip != GCMPI_ELIGIBLE || comm == MPI_COMM_NULL) return;
    if (gcmpi_comm_decision(comm) != GCMPI_ELIGIBLE) return;
    gcmpi_stats_count_nonblocking(bytes);
    if (cfg.verbose >= 3)
        fprintf(stderr, "libgcmpi: rank %d: %s of %llu bytes passed through: nonblocking "
                        "collectives are not compressed\n", world_rank, what,
                (unsigned long long)bytes);
}

#define GCMPI_IALLREDUCE_WRAPPER(NAME, REAL, COUNT_T)                                     \
    GCMPI_EXPORT int NAME(const void *sendbuf, void *recvbuf, COUNT_T count,             \
                          MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,               \
                          MPI_Request *request)                                          \
    {                                                                                    \
        if (intercepting())                                                              \
            note_nonblocking(gcmpi_eligible_allreduce(&cfg, sendbuf, datatype, op,       \
                                                      (int64_t)count),                   \
                             comm, #NAME, (uint64_t)count * sizeof(float));              \
        return REAL(sendbuf, recvbuf, count, datatype, op, comm, request);               \
    }

#define GCMPI_IALLGATHER_WRAPPER(NAME, REAL, COUNT_T)                                     \
    GCMPI_EXPORT int NAME(const void *sendbuf, COUNT_T sendcount, MPI_Datatype sendtype, \
                          void *recvbuf, COUNT_T recvcount, MPI_Datatype recvtype,       \
                          MPI_Comm comm, MPI_Request *request)                           \
    {                                                                                    \
        if (intercepting())                                                              \
            note_nonblocking(gcmpi_eligible_allgather(&cfg, sendbuf, (int64_t)sendcount, \
                                                      sendtype, (int64_t)recvcount,      \
                                                      recvtype),                         \
                             comm, #NAME, (uint64_t)recvcount * sizeof(float));          \
        return REAL(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,    \
                    request);                                                            \
    }

GCMPI_ALLREDUCE_WRAPPER(MPI_Allreduce, PMPI_Allreduce, int)
GCMPI_ALLGATHER_WRAPPER(MPI_Allgather, PMPI_Allgather, int)
GCMPI_BCAST_WRAPPER(MPI_Bcast, PMPI_Bcast, int)
GCMPI_ALLGATHERV_WRAPPER(MPI_Allgatherv, PMPI_Allgatherv, int, int)
GCMPI_IALLREDUCE_WRAPPER(MPI_Iallreduce, PMPI_Iallreduce, int)
GCMPI_IALLGATHER_WRAPPER(MPI_Iallgather, PMPI_Iallgather, int)
#ifdef GCMPI_HAVE_LARGE_COUNT
GCMPI_IALLREDUCE_WRAPPER(MPI_Iallreduce_c, PMPI_Iallreduce_c, MPI_Count)
GCMPI_IALLGATHER_WRAPPER(MPI_Iallgather_c, PMPI_Iallgather_c, MPI_Count)
GCMPI_ALLREDUCE_WRAPPER(MPI_Allreduce_c, PMPI_Allreduce_c, MPI_Count)
GCMPI_ALLGATHER_WRAPPER(MPI_Allgather_c, PMPI_Allgather_c, MPI_Count)
GCMPI_BCAST_WRAPPER(MPI_Bcast_c, PMPI_Bcast_c, MPI_Count)
GCMPI_ALLGATHERV_WRAPPER(MPI_Allgatherv_c, PMPI_Allgatherv_c, MPI_Count, MPI_Aint)
#endif
