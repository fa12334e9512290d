/* node_shm.c — hier's reduce-scatter and allgather inside a node through a
 * shared-memory window (node_shm.h).
 *
 * Why: MPI's reduce-scatter inside a node moves the vector through
 * point-to-point messages, copied into and out of MPI's own shared
 * segments; Open MPI 4.1's took longer than its whole allreduce (64 MiB, 4
 * ranks on one host: 175 ms against 118 ms). Through the window each
 * rank's vector is copied once and each chunk is summed where it lies:
 * 25 ms in the same run.
 *
 * Synchronisation is MPI-3's for shared windows under the unified model:
 * a passive epoch on every rank for the window's life (lock_all), and
 * MPI_Win_sync, a barrier of the node, MPI_Win_sync between writing a
 * part and reading it. Every rank writes only its own part. */
#include "node_shm.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Each rank's part: a header (its rc in the allgather) on its own cache
 * line, then the floats. */
#define HEADER_BYTES 64

struct gcmpi_node_shm {
    MPI_Win win;
    int q;             /* ranks of the node                         */
    size_t cap;        /* floats in each rank's part                */
    unsigned char **part; /* q pointers: every rank's part, mapped here */
};

static int finalizing;
static size_t max_floats = GCMPI_NODE_SHM_MAX_FLOATS;

void gcmpi_node_shm_set_max_floats(size_t floats)
{
    max_floats = floats > 0 ? floats : 1;
}

void gcmpi_node_shm_finalizing(void)
{
    finalizing = 1;
}

int gcmpi_node_shm_possible(MPI_Comm node, int *possible)
{
    MPI_Comm shared;
    int node_size, shared_size = 0;
    *possible = 0;
    PMPI_Comm_size(node, &node_size);
    int rc = PMPI_Comm_split_type(node, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared);
    if (rc != MPI_SUCCESS) return rc;
    PMPI_Comm_size(shared, &shared_size);
    PMPI_Comm_free(&shared);
    const int mine = shared_size == node_size;
    return PMPI_Allreduce(&mine, possible, 1, MPI_INT, MPI_MIN, node);
}

void gcmpi_node_shm_free(gcmpi_node_shm *s)
{
    if (!s) return;
    if (!finalizing) {
        PMPI_Win_unlock_all(s->win);
        PMPI_Win_free(&s->win);
    }
    free(s->part);
    free(s);
}

/* A window whose parts hold at least floats floats (the same on every
 * rank of the node, so all grow together). */
static int window_of(gcmpi_node_shm **shm, MPI_Comm node, size_t floats)
{
    if (*shm && (*shm)->cap >= floats) return MPI_SUCCESS;
    gcmpi_node_shm_free(*shm);
    *shm = NULL;
    int q, rc;
    PMPI_Comm_size(node, &q);
    gcmpi_node_shm *s = calloc(1, sizeof *s);
    if (s) s->part = malloc((size_t)q * sizeof *s->part);
    int ok = s && s->part, all_ok = 0;
    rc = PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, node);
    if (rc != MPI_SUCCESS || !all_ok) {
        if (s) free(s->part);
        free(s);
        return rc != MPI_SUCCESS ? rc : MPI_ERR_NO_MEM;
    }
    s->q = q;
    s->cap = floats;
    /* Non-contiguous parts: each rank's pages may sit near it (NUMA). */
    MPI_Info info;
    PMPI_Info_create(&info);
    PMPI_Info_set(info, "alloc_shared_noncontig", "true");
    void *mine = NULL;
    rc = PMPI_Win_allocate_shared((MPI_Aint)(HEADER_BYTES + floats * sizeof(float)), 1, info,
                                  node, &mine, &s->win);
    PMPI_Info_free(&info);
    for (int i = 0; rc == MPI_SUCCESS && i < q; i++) {
        MPI_Aint bytes;
        int unit;
        void *at = NULL;
        rc = PMPI_Win_shared_query(s->win, i, &bytes, &unit, &at);
        s->part[i] = at;
    }
    if (rc == MPI_SUCCESS) rc = PMPI_Win_lock_all(MPI_MODE_NOCHECK, s->win);
    if (rc != MPI_SUCCESS) {
        free(s->part);
        free(s);
        return rc;
    }
    *shm = s;
    return MPI_SUCCESS;
}

static float *floats_of(const gcmpi_node_shm *s, int rank)
{
    return (float *)(void *)(s->part[rank] + HEADER_BYTES);
}

/* What this rank wrote is visible to the node, and what the others wrote
 * is visible here. */
static int fence(const gcmpi_node_shm *s, MPI_Comm node)
{
    PMPI_Win_sync(s->win);
    int rc = PMPI_Barrier(node);
    PMPI_Win_sync(s->win);
    return rc;
}

static size_t clamp_piece(int count, size_t from, size_t piece)
{
    const size_t c = count > 0 ? (size_t)count : 0;
    return from >= c ? 0 : c - from < piece ? c - from : piece;
}

static size_t largest(const int *counts, int q)
{
    size_t m = 0;
    for (int i = 0; i < q; i++)
        if (counts[i] > 0 && (size_t)counts[i] > m) m = (size_t)counts[i];
    return m;
}

/* out = sum over ranks of src[r], in rank order, a cache-sized block at a
 * time so out stays in cache while every rank's piece is added. */
static void sum_parts(float *out, const gcmpi_node_shm *s, size_t at, size_t n)
{
    enum { BLOCK = 2048 };
    for (size_t b = 0; b < n; b += BLOCK) {
        const size_t m = n - b < BLOCK ? n - b : BLOCK;
        memcpy(out + b, floats_of(s, 0) + at + b, m * sizeof(float));
        for (int r = 1; r < s->q; r++) {
            const float *src = floats_of(s, r) + at + b;
            for (size_t k = 0; k < m; k++) out[b + k] += src[k];
        }
    }
}

int gcmpi_node_shm_reduce_scatter(gcmpi_node_shm **shm, MPI_Comm node, const float *in,
                                  float *out, const int *counts, const int *displs)
{
    int q, me;
    PMPI_Comm_size(node, &q);
    PMPI_Comm_rank(node, &me);
    const size_t longest = largest(counts, q);
    size_t total = 0;
    for (int i = 0; i < q; i++) total += counts[i] > 0 ? (size_t)counts[i] : 0;
    /* A round moves `piece` floats of every chunk: q pieces in a part. */
    size_t want = total < max_floats ? total : max_floats;
    size_t piece = want / (size_t)q;
    if (piece < longest && piece * (size_t)q < want) piece++;
    if (piece > longest) piece = longest;
    if (piece == 0) return MPI_SUCCESS; /* nothing to sum anywhere */
    int rc = window_of(shm, node, piece * (size_t)q);
    if (rc != MPI_SUCCESS) return rc;
    const gcmpi_node_shm *s = *shm;
    float *mine = floats_of(s, me);
    for (size_t from = 0; from < longest && rc == MPI_SUCCESS; from += piece) {
        /* Piece j of this round of every chunk into slot j of this rank's
         * part (in == out: this rank's own range is copied before it is
         * overwritten below, and later rounds read ranges after it). */
        for (int j = 0; j < q; j++) {
            const size_t m = clamp_piece(counts[j], from, piece);
            if (m) memcpy(mine + (size_t)j * piece, in + displs[j] + from, m * sizeof(float));
        }
        rc = fence(s, node);
        const size_t m = clamp_piece(counts[me], from, piece);
        if (rc == MPI_SUCCESS && m) sum_parts(out + displs[me] + from, s, (size_t)me * piece, m);
        /* Nobody writes the next round over a part still being read. */
        if (rc == MPI_SUCCESS) rc = fence(s, node);
    }
    return rc;
}

int gcmpi_node_shm_allgather(gcmpi_node_shm **shm, MPI_Comm node, float *out, const int *counts,
                             const int *displs, int my_rc, int *worst)
{
    int q, me;
    PMPI_Comm_size(node, &q);
    PMPI_Comm_rank(node, &me);
    *worst = my_rc;
    int rc = window_of(shm, node, 1);
    if (rc != MPI_SUCCESS) return rc;
    const gcmpi_node_shm *s = *shm;
    const size_t longest = largest(counts, q), step = s->cap < max_floats ? s->cap : max_floats;
    size_t from = 0;
    do {
        memcpy(s->part[me], &my_rc, sizeof my_rc);
        const size_t m = clamp_piece(counts[me], from, step);
        if (m) memcpy(floats_of(s, me), out + displs[me] + from, m * sizeof(float));
        rc = fence(s, node);
        for (int j = 0; rc == MPI_SUCCESS && j < q; j++) {
            int theirs;
            memcpy(&theirs, s->part[j], sizeof theirs);
            if (theirs > *worst) *worst = theirs;
            const size_t mj = j == me ? 0 : clamp_piece(counts[j], from, step);
            if (mj) memcpy(out + displs[j] + from, floats_of(s, j), mj * sizeof(float));
        }
        if (rc == MPI_SUCCESS) rc = fence(s, node);
        from += step;
    } while (rc == MPI_SUCCESS && from < longest);
    return rc;
}
