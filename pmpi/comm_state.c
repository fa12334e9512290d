/* comm_state.c — the attribute that carries a communicator's state: the
 * private duplicate, codec workspace, buffers, per-buffer state (residuals,
 * adaptive blocks), statistics and the timeline. */
#include "comm_state.h"
#include "auto_report.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int keyval = MPI_KEYVAL_INVALID;
/* gcmpi_comm_decision's answer for a communicator without a state, kept
 * on it as skip + 1 (a local call, unlike attaching a state). */
static int decision_keyval = MPI_KEYVAL_INVALID;
static const gcmpi_config *config;

/* Live states; attaching and freeing are rare, so one mutex is enough. */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static gcmpi_comm_state *live;

static void live_add(gcmpi_comm_state *st)
{
    pthread_mutex_lock(&live_lock);
    st->prev = NULL;
    st->next = live;
    if (live) live->prev = st;
    live = st;
    pthread_mutex_unlock(&live_lock);
}

static void live_remove(gcmpi_comm_state *st)
{
    pthread_mutex_lock(&live_lock);
    if (st->prev) st->prev->next = st->next; else live = st->next;
    if (st->next) st->next->prev = st->prev;
    st->prev = st->next = NULL;
    pthread_mutex_unlock(&live_lock);
}

/* The codec each collective runs with: the report shows it per row. */
static const char *codec_label(gcmpi_kind kind)
{
    const gc_codec *c = kind == GCMPI_KIND_ALLGATHER ? config->allgather_codec : config->codec;
    return c ? gc_codec_name(c) : "none";
}

static int lossy(const gc_codec *c)
{
    return c && !(gc_codec_flags(c) & GC_LOSSLESS);
}

static void state_free(gcmpi_comm_state *st)
{
    live_remove(st);
    for (int k = 0; k < GCMPI_KIND_COUNT; k++) {
        if (st->ef) st->stats[k].ef = gcmpi_ef_store_counts(st->ef, (gcmpi_kind)k);
        if (gcmpi_stats_retire(st->label, st->size, (gcmpi_kind)k, codec_label((gcmpi_kind)k),
                               &st->stats[k]) != 0)
            fprintf(stderr, "libgcmpi: out of memory; statistics of %s are lost\n",
                    st->label);
    }
    gcmpi_timeline_retire(st->timeline);
    st->timeline = NULL;
    gcmpi_ef_store_free(st->ef);
    gc_workspace_free(st->ws);
    gcmpi_scratch_free(&st->scratch);
    if (st->rank == 0) gcmpi_auto_report_retire(st->label, &st->cache);
    gcmpi_coll_cache_free(&st->cache);
    if (st->dup != MPI_COMM_NULL) PMPI_Comm_free(&st->dup);
    free(st);
}

/* Called by MPI when the communicator is freed or the attribute deleted. */
static int state_delete(MPI_Comm comm, int key, void *attr, void *extra)
{
    (void)comm; (void)key; (void)extra;
    state_free(attr);
    return MPI_SUCCESS;
}

int gcmpi_comm_state_setup(const gcmpi_config *cfg)
{
    config = cfg;
    int rc = PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, state_delete, &keyval, NULL);
    if (rc != MPI_SUCCESS) return rc;
    return PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN,
                                   &decision_keyval, NULL);
}

static void out_of_memory(MPI_Comm comm, const char *what)
{
    fprintf(stderr, "libgcmpi: out of memory while %s; stopping the job\n", what);
    PMPI_Abort(comm, 1);
}

static void facts_of(MPI_Comm comm, gcmpi_comm_facts *f, char *name)
{
    int len = 0;
    name[0] = '\0';
    PMPI_Comm_test_inter(comm, &f->inter);
    PMPI_Comm_size(comm, &f->size);
    f->world_relation = MPI_UNEQUAL;
    if (!f->inter) PMPI_Comm_compare(comm, MPI_COMM_WORLD, &f->world_relation);
    PMPI_Comm_get_name(comm, name, &len);
    f->name = name;
}

static void label_of(const gcmpi_comm_facts *f, char *label)
{
    if (f->world_relation == MPI_IDENT)
        snprintf(label, GCMPI_LABEL_LEN, "MPI_COMM_WORLD");
    else if (f->world_relation == MPI_CONGRUENT)
        snprintf(label, GCMPI_LABEL_LEN, "dup of MPI_COMM_WORLD");
    else if (f->name[0])
        snprintf(label, GCMPI_LABEL_LEN, "%s", f->name);
    else
        snprintf(label, GCMPI_LABEL_LEN, "%s of size %d", f->inter ? "intercomm" : "comm",
                 f->size);
}

static gcmpi_comm_state *attach(MPI_Comm comm)
{
    char name[MPI_MAX_OBJECT_NAME + 1];
    gcmpi_comm_facts facts;
    facts_of(comm, &facts, name);

    gcmpi_comm_state *st = calloc(1, sizeof *st);
    if (!st) out_of_memory(comm, "attaching communicator state");
    st->user = comm;
    st->dup = MPI_COMM_NULL;
    st->size = facts.size;
    st->skip = gcmpi_eligible_comm(config, &facts);
    label_of(&facts, st->label);
    PMPI_Comm_rank(comm, &st->rank);

    if (st->skip == GCMPI_ELIGIBLE) {
        /* The library's traffic never matches a message of the program. */
        int rc = PMPI_Comm_dup(comm, &st->dup);
        if (rc != MPI_SUCCESS) {
            free(st);
            return NULL;
        }
        st->ws = gc_workspace_create();
        if (!st->ws) out_of_memory(comm, "creating the codec workspace");
        /* A lossless codec leaves nothing behind: no residuals to keep.
         * The adaptive layer keeps its per-buffer blocks in the same store. */
        st->residuals = config->ef && lossy(config->codec);
        st->allgather_residuals = config->allgather_ef && lossy(config->allgather_codec);
        if (st->residuals || st->allgather_residuals || gc_adapt_active(&config->adapt)) {
            st->ef = gcmpi_ef_store_create();
            if (!st->ef) out_of_memory(comm, "creating the residual store");
        }
    }
    if (PMPI_Comm_set_attr(comm, keyval, st) != MPI_SUCCESS) {
        gcmpi_ef_store_free(st->ef);
        gc_workspace_free(st->ws);
        if (st->dup != MPI_COMM_NULL) PMPI_Comm_free(&st->dup);
        free(st);
        return NULL;
    }
    live_add(st);
    if (config->verbose >= 2)
        fprintf(stderr, "libgcmpi: rank %d: %s (size %d): %s\n", st->rank, st->label,
                st->size, gcmpi_skip_reason(st->skip));
    return st;
}

gcmpi_comm_state *gcmpi_comm_state_of(MPI_Comm comm)
{
    void *attr = NULL;
    int found = 0;
    if (PMPI_Comm_get_attr(comm, keyval, &attr, &found) != MPI_SUCCESS) return NULL;
    return found ? attr : attach(comm);
}

gcmpi_skip gcmpi_comm_decision(MPI_Comm comm)
{
    void *attr = NULL;
    int found = 0;
    if (PMPI_Comm_get_attr(comm, keyval, &attr, &found) != MPI_SUCCESS) return GCMPI_SKIP_COMM;
    if (found) return ((const gcmpi_comm_state *)attr)->skip;
    /* Worked out once a communicator: comparing it with MPI_COMM_WORLD
     * compares their groups. */
    if (PMPI_Comm_get_attr(comm, decision_keyval, &attr, &found) == MPI_SUCCESS && found)
        return (gcmpi_skip)((intptr_t)attr - 1);
    char name[MPI_MAX_OBJECT_NAME + 1];
    gcmpi_comm_facts facts;
    facts_of(comm, &facts, name);
    const gcmpi_skip skip = gcmpi_eligible_comm(config, &facts);
    (void)PMPI_Comm_set_attr(comm, decision_keyval, (void *)((intptr_t)skip + 1));
    return skip;
}

void gcmpi_comm_state_teardown(void)
{
    for (;;) {
        pthread_mutex_lock(&live_lock);
        gcmpi_comm_state *st = live;
        pthread_mutex_unlock(&live_lock);
        if (!st) break;
        /* Deleting the attribute runs state_delete, which unlinks st. */
        if (PMPI_Comm_delete_attr(st->user, keyval) != MPI_SUCCESS) state_free(st);
    }
    if (keyval != MPI_KEYVAL_INVALID) PMPI_Comm_free_keyval(&keyval);
    if (decision_keyval != MPI_KEYVAL_INVALID) PMPI_Comm_free_keyval(&decision_keyval);
    config = NULL;
}
