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
#include "gcmpi_codec.h"
#include "stream_copy.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* Each rank's part: a header on its own cache line (its rc in the
 * allgather; its rc and the bytes it shares in gcmpi_node_shm_share), then
 * the floats or the shared bytes. */
#define HEADER_BYTES 64
#define SHARED_BYTES_AT 8 /* where the header holds the shared bytes' count */

/* Where the node's shared memory lives: Open MPI's osc/sm puts a
 * window's backing file in /dev/shm, as MPICH does its segments. */
#define SHM_DIR "/dev/shm"
/* Beyond the parts: Open MPI's control block and page rounding (4 ranks,
 * 64 MiB parts: 20 KiB), with room to spare. */
#define WINDOW_OVERHEAD ((size_t)256 << 10)
/* The fewest floats a part worth making: below this the rounds' barriers
 * cost more than MPI's own reduce-scatter. */
#define LEAST_PART_FLOATS ((size_t)64 << 10)

struct gcmpi_node_shm {
    MPI_Win win;
    int q;             /* ranks of the node                         */
    size_t cap;        /* floats in each rank's part                */
    size_t asked;      /* floats a part was asked to hold: more than
                          cap when the node's shared memory had less
                          room (not asked again for as much)        */
    unsigned char **part; /* q pointers: every rank's part, mapped here */
};

static int finalizing;
static size_t max_floats = GCMPI_NODE_SHM_MAX_FLOATS;
static size_t room_override = SIZE_MAX;
static int streaming = -1;

void gcmpi_node_shm_set_max_floats(size_t floats)
{
    max_floats = floats > 0 ? floats : 1;
}

void gcmpi_node_shm_set_streaming(int mode)
{
    streaming = mode;
}

void gcmpi_node_shm_set_room(size_t bytes)
{
    room_override = bytes;
}

/* Bytes the node's shared memory can still take (SIZE_MAX: not known).
 * A window larger than that is not refused by Open MPI 4.1 on every rank:
 * its first rank fails and the others wait for it forever. */
static size_t room_here(void)
{
    if (room_override != SIZE_MAX) return room_override;
    struct statvfs v;
    if (statvfs(SHM_DIR, &v) != 0) return SIZE_MAX;
    const uint64_t free_bytes = (uint64_t)v.f_bavail * v.f_frsize;
    /* An eighth kept for MPI's own segments and other jobs. */
    const uint64_t usable = free_bytes - free_bytes / 8;
    return usable > SIZE_MAX - 1 ? SIZE_MAX - 1 : (size_t)usable;
}

/* Floats a part may hold so that q parts fit in room bytes. */
static size_t part_floats_in(size_t room, int q)
{
    if (room == SIZE_MAX) return SIZE_MAX;
    if (room <= WINDOW_OVERHEAD) return 0;
    const size_t per_rank = (room - WINDOW_OVERHEAD) / (size_t)q;
    return per_rank > HEADER_BYTES + 4096 ? (per_rank - HEADER_BYTES - 4096) / sizeof(float) : 0;
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

/* This rank's part backed by memory now: a tmpfs short of room fails here
 * with an error (MADV_POPULATE_WRITE, Linux 5.14) instead of a SIGBUS at a
 * later call's first write to it, where the room was taken meanwhile (by
 * another node emulated on the same host, another job). A kernel without
 * it (EINVAL) leaves the pages to be faulted in as they are written. */
static int part_backed(void *at, size_t bytes)
{
#ifdef MADV_POPULATE_WRITE
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t lo = (uintptr_t)at & ~(page - 1);
    const uintptr_t hi = ((uintptr_t)at + bytes + page - 1) & ~(page - 1);
    if (madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE) == 0) return 1;
    return errno == EINVAL;
#else
    (void)at;
    (void)bytes;
    return 1;
#endif
}

/* The window itself, parts of s->cap floats, every part backed on every
 * rank: *backed 0 on every rank (and the window freed) where some part was
 * not. Collective over node. */
static int allocate(gcmpi_node_shm *s, MPI_Comm node, int me, int *backed)
{
    /* Non-contiguous parts: each rank's pages may sit near it (NUMA). */
    MPI_Info info;
    PMPI_Info_create(&info);
    PMPI_Info_set(info, "alloc_shared_noncontig", "true");
    void *base = NULL;
    const size_t bytes = HEADER_BYTES + s->cap * sizeof(float);
    int rc = PMPI_Win_allocate_shared((MPI_Aint)bytes, 1, info, node, &base, &s->win);
    PMPI_Info_free(&info);
    for (int i = 0; rc == MPI_SUCCESS && i < s->q; i++) {
        MPI_Aint part_bytes;
        int unit;
        void *at = NULL;
        rc = PMPI_Win_shared_query(s->win, i, &part_bytes, &unit, &at);
        s->part[i] = at;
    }
    if (rc != MPI_SUCCESS) return rc;
    const int mine = part_backed(s->part[me], bytes);
    rc = PMPI_Allreduce(&mine, backed, 1, MPI_INT, MPI_MIN, node);
    if (rc == MPI_SUCCESS && *backed) return PMPI_Win_lock_all(MPI_MODE_NOCHECK, s->win);
    PMPI_Win_free(&s->win);
    return rc;
}

/* Windows of nodes on one host share its /dev/shm (nodes emulated with
 * GCMPI_NODE_SIZE, other communicators' nodes, other jobs), and two nodes
 * that each saw room for a window need not both fit: Open MPI then fails
 * on one node's first rank and its other ranks wait forever. So a node's
 * first rank reserves the bytes its window may take before the node
 * agrees on the room: a file in /dev/shm named for its process, a
 * sequence number and the bytes, read by every later reservation and
 * removed once the window is made (its pages are backed by then, and
 * statvfs counts them). The host's lock (an flock beside the files) is
 * held only while the files are read and one is written: never across a
 * collective. Held across the node's agreement and MPI_Win_allocate_shared
 * (before 2026-12-07), it hung jobs that made windows in two threads: a
 * rank waiting in flock was one the holder's collective waited for, or
 * one Open MPI's serialised making of communicators (one a process at a
 * time; the window makes one) waited for. */
#define RESERVE_DIR SHM_DIR
#define RESERVE_PREFIX "libgcmpi-reserve-"

/* Bytes reserved by live processes (files of dead ones are removed). */
static size_t reserved_on_host(void)
{
    DIR *d = opendir(RESERVE_DIR);
    if (!d) return 0;
    const size_t prefix = strlen(RESERVE_PREFIX);
    size_t sum = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        long pid;
        unsigned long seq;
        unsigned long long bytes;
        if (strncmp(e->d_name, RESERVE_PREFIX, prefix) != 0 ||
            sscanf(e->d_name + prefix, "%ld-%lu-%llu", &pid, &seq, &bytes) != 3)
            continue;
        if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
            unlinkat(dirfd(d), e->d_name, 0);
            continue;
        }
        sum = bytes > SIZE_MAX - sum ? SIZE_MAX : sum + (size_t)bytes;
    }
    closedir(d);
    return sum;
}

/* The first rank's room for a window of q parts of `floats` floats: what
 * /dev/shm has free less what other windows being made reserved, reserved
 * in turn (name: the file to remove once the window is made; "" where none
 * was made: no lock file to be had, or the room is not known). */
static size_t reserve_room(int q, size_t floats, char *name, size_t name_len)
{
    static _Atomic unsigned long seq;
    name[0] = '\0';
    size_t room = room_here();
    /* A room set by gcmpi_node_shm_set_room (tests) is a fixed figure
     * that no window takes from. */
    if (room == SIZE_MAX || room_override != SIZE_MAX) return room;
    const int fd = open(RESERVE_DIR "/libgcmpi-windows.lock", O_RDONLY | O_CREAT | O_CLOEXEC,
                        0644);
    if (fd < 0) return room;
    while (flock(fd, LOCK_EX) != 0)
        if (errno != EINTR) break;
    const size_t others = reserved_on_host();
    room = room_here(); /* now that no window can be reserved meanwhile */
    room = room > others ? room - others : 0;
    const size_t part = HEADER_BYTES + 4096 + floats * sizeof(float);
    const size_t want = floats > (SIZE_MAX - WINDOW_OVERHEAD) / sizeof(float) / (size_t)q
                            ? SIZE_MAX
                            : WINDOW_OVERHEAD + part * (size_t)q;
    const size_t take = want < room ? want : room;
    snprintf(name, name_len, "%s/%s%ld-%lu-%zu", RESERVE_DIR, RESERVE_PREFIX, (long)getpid(),
             seq++, take);
    const int made = open(name, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (made >= 0) close(made);
    else name[0] = '\0';
    close(fd); /* the lock goes with it */
    return room;
}

/* The window: q parts of `floats` floats, fewer where the room agreed on
 * (the least any rank sees, the first rank's less what is reserved) holds
 * fewer, but at least `least`. */
static int make_window(gcmpi_node_shm **shm, MPI_Comm node, int q, int me, size_t floats,
                       size_t least)
{
    gcmpi_node_shm *s = calloc(1, sizeof *s);
    if (s) s->part = malloc((size_t)q * sizeof *s->part);
    char reservation[256] = "";
    const size_t room = me == 0 ? reserve_room(q, floats, reservation, sizeof reservation)
                                : room_here();
    /* One agreement: whether every rank got its pointers, and the least
     * room any rank sees (after the old window went). */
    uint64_t mine[2] = {s && s->part, room}, all[2] = {0, 0};
    int rc = PMPI_Allreduce(mine, all, 2, MPI_UINT64_T, MPI_MIN, node);
    const size_t fit = part_floats_in(all[1] > SIZE_MAX ? SIZE_MAX : (size_t)all[1], q);
    int backed = 0;
    if (rc == MPI_SUCCESS && all[0]) {
        s->q = q;
        s->asked = floats;
        s->cap = floats < fit ? floats : fit;
        /* What the room said may be gone by now: half as much, until it is
         * backed or less than `least`. */
        while (rc == MPI_SUCCESS && !backed && s->cap >= least && s->cap > 0) {
            rc = allocate(s, node, me, &backed);
            if (rc == MPI_SUCCESS && !backed) s->cap /= 2;
        }
    }
    if (reservation[0]) unlink(reservation);
    if (rc != MPI_SUCCESS || !all[0] || !backed) {
        if (s) free(s->part);
        free(s);
        return rc != MPI_SUCCESS ? rc : !all[0] ? MPI_ERR_NO_MEM : GCMPI_NODE_SHM_NO_ROOM;
    }
    *shm = s;
    return MPI_SUCCESS;
}

/* A window whose parts hold `floats` floats, or as many as the node's
 * shared memory has room for when that is fewer but at least `least`
 * (s->cap says which; the same on every rank of the node, so all grow
 * together). GCMPI_NODE_SHM_NO_ROOM on every rank of the node when not
 * even `least` fit. */
static int window_of(gcmpi_node_shm **shm, MPI_Comm node, size_t floats, size_t least)
{
    if (*shm && ((*shm)->cap >= floats || (*shm)->asked >= floats)) return MPI_SUCCESS;
    gcmpi_node_shm_free(*shm);
    *shm = NULL;
    int q, me;
    PMPI_Comm_size(node, &q);
    PMPI_Comm_rank(node, &me);
    return make_window(shm, node, q, me, floats, least);
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
 * time so out stays in cache while every rank's piece is added; this
 * rank's own piece (`own`, rank `me`) is read where it lies, not from the
 * window. Returns 1 when the sum holds no inf or NaN, checked block by
 * block while in cache: a pass of its own over the sum cost hier's column
 * a read of its chunk. */
static int sum_parts(float *out, const gcmpi_node_shm *s, size_t at, size_t n, const float *own,
                     int me)
{
    enum { BLOCK = 2048 };
    int finite = 1;
    float kept[BLOCK];
    for (size_t b = 0; b < n; b += BLOCK) {
        const size_t m = n - b < BLOCK ? n - b : BLOCK;
        /* In place own is out: kept before out is written over. */
        const float *mine = own + b;
        if (own == out) {
            memcpy(kept, own + b, m * sizeof(float));
            mine = kept;
        }
        memcpy(out + b, me == 0 ? mine : floats_of(s, 0) + at + b, m * sizeof(float));
        for (int r = 1; r < s->q; r++) {
            const float *src = r == me ? mine : floats_of(s, r) + at + b;
            for (size_t k = 0; k < m; k++) out[b + k] += src[k];
        }
        finite &= gc_all_finite(out + b, m);
    }
    return finite;
}

int gcmpi_node_shm_reduce_scatter(gcmpi_node_shm **shm, MPI_Comm node, const float *in,
                                  float *out, const int *counts, const int *displs,
                                  size_t round_floats, int *finite)
{
    int q, me, all_finite = 1;
    if (finite) *finite = 0;
    PMPI_Comm_size(node, &q);
    PMPI_Comm_rank(node, &me);
    const size_t longest = largest(counts, q);
    size_t total = 0;
    for (int i = 0; i < q; i++) total += counts[i] > 0 ? (size_t)counts[i] : 0;
    /* A round moves `piece` floats of every chunk: q pieces in a part. */
    const size_t most = round_floats && max_floats >= GCMPI_NODE_SHM_MAX_FLOATS ? round_floats
                                                                               : max_floats;
    size_t want = total < most ? total : most;
    size_t piece = want / (size_t)q;
    if (piece < longest && piece * (size_t)q < want) piece++;
    if (piece > longest) piece = longest;
    if (piece == 0) { /* nothing to sum anywhere */
        if (finite) *finite = 1;
        return MPI_SUCCESS;
    }
    const size_t least = piece * (size_t)q < LEAST_PART_FLOATS ? piece * (size_t)q
                                                                : LEAST_PART_FLOATS;
    int rc = window_of(shm, node, piece * (size_t)q, least);
    if (rc != MPI_SUCCESS) return rc;
    const gcmpi_node_shm *s = *shm;
    /* A window the room held smaller: more rounds of smaller pieces. */
    if (s->cap < (size_t)q) return GCMPI_NODE_SHM_NO_ROOM; /* the same on every rank */
    if (piece > s->cap / (size_t)q) piece = s->cap / (size_t)q;
    float *mine = floats_of(s, me);
    for (size_t from = 0; from < longest && rc == MPI_SUCCESS; from += piece) {
        /* Piece j of this round of every other rank's chunk into slot j
         * of this rank's part; its own piece only this rank sums, from
         * `in` (in == out: sum_parts keeps each block before writing it,
         * and later rounds read ranges after it). */
        for (int j = 0; j < q; j++) {
            const size_t m = j == me ? 0 : clamp_piece(counts[j], from, piece);
            if (m) memcpy(mine + (size_t)j * piece, in + displs[j] + from, m * sizeof(float));
        }
        rc = fence(s, node);
        const size_t m = clamp_piece(counts[me], from, piece);
        if (rc == MPI_SUCCESS && m)
            all_finite &= sum_parts(out + displs[me] + from, s, (size_t)me * piece, m,
                                    in + displs[me] + from, me);
        /* Nobody writes the next round over a part still being read. */
        if (rc == MPI_SUCCESS) rc = fence(s, node);
    }
    if (finite && rc == MPI_SUCCESS) *finite = all_finite;
    return rc;
}

/* The start of a gather through the window: the node's size and this
 * rank's place, *worst at my_rc, and a window whose parts hold `floats`
 * (grown where they hold less, as far as the node's room allows). */
static int gather_start(gcmpi_node_shm **shm, MPI_Comm node, size_t floats, int my_rc,
                        int *worst, int *q, int *me)
{
    PMPI_Comm_size(node, q);
    PMPI_Comm_rank(node, me);
    *worst = my_rc;
    return window_of(shm, node, floats, 1);
}

int gcmpi_node_shm_allgather(gcmpi_node_shm **shm, MPI_Comm node, float *out, const int *counts,
                             const int *displs, int my_rc, int *worst)
{
    int q, me;
    int rc = gather_start(shm, node, 1, my_rc, worst, &q, &me);
    if (rc != MPI_SUCCESS) return rc;
    const gcmpi_node_shm *s = *shm;
    const size_t longest = largest(counts, q), step = s->cap < max_floats ? s->cap : max_floats;
    size_t total = 0;
    for (int i = 0; i < q; i++) total += counts[i] > 0 ? (size_t)counts[i] : 0;
    /* What the node's ranks write here together is larger than the cache:
     * past it (stream_copy.h). */
    const int past_cache = streaming >= 0 ? streaming
                                          : gcmpi_outgrows_cache((size_t)q * total * sizeof(float));
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
            if (mj && past_cache)
                gcmpi_copy_past_cache(out + displs[j] + from, floats_of(s, j), mj);
            else if (mj)
                memcpy(out + displs[j] + from, floats_of(s, j), mj * sizeof(float));
        }
        if (rc == MPI_SUCCESS) rc = fence(s, node);
        from += step;
    } while (rc == MPI_SUCCESS && from < longest);
    return rc;
}

int gcmpi_node_shm_share(gcmpi_node_shm **shm, MPI_Comm node, size_t room, const void *bytes,
                         int64_t len, int my_rc, const unsigned char **from, int64_t *lens,
                         int *worst)
{
    int q, me;
    if (room > GCMPI_NODE_SHM_SHARE_MAX_BYTES) room = GCMPI_NODE_SHM_SHARE_MAX_BYTES;
    /* A window remembers what it was asked, so a node short of room does
     * not try to grow it again each call. */
    int rc = gather_start(shm, node, (room + sizeof(float) - 1) / sizeof(float), my_rc, worst,
                          &q, &me);
    if (rc != MPI_SUCCESS) return rc;
    const gcmpi_node_shm *s = *shm;
    /* What does not fit this rank's part is not shared: its readers see -1. */
    if (len < 0 || (uint64_t)len > (uint64_t)s->cap * sizeof(float)) len = -1;
    memcpy(s->part[me], &my_rc, sizeof my_rc);
    memcpy(s->part[me] + SHARED_BYTES_AT, &len, sizeof len);
    if (len > 0) memcpy(s->part[me] + HEADER_BYTES, bytes, (size_t)len);
    rc = fence(s, node);
    for (int j = 0; rc == MPI_SUCCESS && j < q; j++) {
        int theirs;
        memcpy(&theirs, s->part[j], sizeof theirs);
        if (theirs > *worst) *worst = theirs;
        memcpy(&lens[j], s->part[j] + SHARED_BYTES_AT, sizeof lens[j]);
        from[j] = s->part[j] + HEADER_BYTES;
    }
    return rc;
}

int gcmpi_node_shm_release(const gcmpi_node_shm *shm, MPI_Comm node)
{
    return fence(shm, node);
}
