/* ef_store.c — per-buffer memory (residuals, codec state, the adaptive
 * layer's block): a hash table per communicator, one LRU list and one byte
 * count per process, all under one mutex. The lock is taken twice per
 * compressed call (acquire, release), never on a pass-through. */
#include "ef_store.h"

#include "device.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

struct gcmpi_ef_entry {
    gcmpi_ef_key key;
    gcmpi_ef_store *owner;
    gcmpi_ef_entry *chain;          /* next in the owner's hash bucket    */
    gcmpi_ef_entry *older, *newer;  /* process-wide LRU list              */
    size_t bytes;                   /* charged against the bound          */
    size_t residual_floats, server_floats, state_floats;
    size_t adapt_bytes;             /* the adaptive block after the floats */
    int pinned;                     /* in use by a call: not evictable    */
    int momentum_lapsed;            /* gcmpi_ef_slot.momentum_lapsed      */
    float *dev;                     /* GCMPI_EF_DEVICE: residual, server and
                                       state in device memory (dev_bytes)  */
    size_t dev_bytes;
    float data[];                   /* residual, then server, then state,
                                       then the adaptive block (64-byte
                                       aligned)                           */
};

/* Entries are 64-byte aligned, and so is the adaptive block within them:
 * its history arrays are scanned like residuals. */
#define ENTRY_ALIGN 64

static size_t align_up(size_t x)
{
    return (x + ENTRY_ALIGN - 1) / ENTRY_ALIGN * ENTRY_ALIGN;
}

/* Offset of the adaptive block from the start of the entry. */
static size_t adapt_offset(size_t floats)
{
    return align_up(offsetof(gcmpi_ef_entry, data) + floats * sizeof(float));
}

struct gcmpi_ef_store {
    gcmpi_ef_entry **buckets;
    size_t n_buckets;               /* power of two                       */
    size_t n_entries;
    gcmpi_ef_counts counts[GCMPI_KIND_COUNT];
};

/* Static initialisation: nothing runs before MPI_Init. */
static pthread_mutex_t ef_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t ef_limit;
static uint64_t ef_used;
static gcmpi_ef_entry *lru_oldest, *lru_newest;

/* Device memory of dropped entries, freed once ef_lock is released: the
 * device path takes its own lock before this one, so freeing under ef_lock
 * could deadlock against it. */
typedef struct dev_garbage { float *p; size_t bytes; struct dev_garbage *next; } dev_garbage;
static dev_garbage *garbage;

static void free_garbage(dev_garbage *g)
{
    while (g) {
        dev_garbage *next = g->next;
        gcmpi_device_free(g->p, g->bytes);
        free(g);
        g = next;
    }
}

static void collect_garbage(void)
{
    pthread_mutex_lock(&ef_lock);
    dev_garbage *g = garbage;
    garbage = NULL;
    pthread_mutex_unlock(&ef_lock);
    free_garbage(g);
}

/* Caller holds ef_lock. Frees the host part now and the device part later;
 * when even the list node cannot be allocated the device memory is freed
 * now (rare: out of host memory). */
static void entry_free(gcmpi_ef_entry *e)
{
    if (e->dev) {
        dev_garbage *g = malloc(sizeof *g);
        if (g) {
            g->p = e->dev;
            g->bytes = e->dev_bytes;
            g->next = garbage;
            garbage = g;
        } else {
            gcmpi_device_free(e->dev, e->dev_bytes);
        }
    }
    free(e);
}

void gcmpi_ef_set_limit(uint64_t max_bytes)
{
    pthread_mutex_lock(&ef_lock);
    ef_limit = max_bytes;
    pthread_mutex_unlock(&ef_lock);
}

uint64_t gcmpi_ef_bytes_in_use(void)
{
    pthread_mutex_lock(&ef_lock);
    uint64_t used = ef_used;
    pthread_mutex_unlock(&ef_lock);
    return used;
}

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static size_t key_hash(const gcmpi_ef_key *k)
{
    uint64_t h = mix64((uint64_t)(uintptr_t)k->sendbuf + 0x9E3779B97F4A7C15ull);
    h = mix64(h ^ (uint64_t)(uintptr_t)k->recvbuf);
    h = mix64(h ^ k->count ^ ((uint64_t)k->kind << 56) ^ ((uint64_t)k->of_node << 48));
    return (size_t)h;
}

static int key_equal(const gcmpi_ef_key *a, const gcmpi_ef_key *b)
{
    return a->sendbuf == b->sendbuf && a->recvbuf == b->recvbuf && a->count == b->count &&
           a->kind == b->kind && a->of_node == b->of_node;
}

gcmpi_ef_store *gcmpi_ef_store_create(void)
{
    gcmpi_ef_store *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->n_buckets = 16;
    s->buckets = calloc(s->n_buckets, sizeof *s->buckets);
    if (!s->buckets) {
        free(s);
        return NULL;
    }
    return s;
}

/* ---- LRU list (caller holds ef_lock) ---- */

static void lru_unlink(gcmpi_ef_entry *e)
{
    if (e->older) e->older->newer = e->newer; else lru_oldest = e->newer;
    if (e->newer) e->newer->older = e->older; else lru_newest = e->older;
    e->older = e->newer = NULL;
}

static void lru_push_newest(gcmpi_ef_entry *e)
{
    e->older = lru_newest;
    e->newer = NULL;
    if (lru_newest) lru_newest->newer = e; else lru_oldest = e;
    lru_newest = e;
}

/* ---- hash table (caller holds ef_lock) ---- */

static gcmpi_ef_entry **bucket_of(gcmpi_ef_store *s, const gcmpi_ef_key *k)
{
    return &s->buckets[key_hash(k) & (s->n_buckets - 1)];
}

static void table_remove(gcmpi_ef_entry *e)
{
    gcmpi_ef_store *s = e->owner;
    for (gcmpi_ef_entry **p = bucket_of(s, &e->key); *p; p = &(*p)->chain) {
        if (*p == e) {
            *p = e->chain;
            s->n_entries--;
            return;
        }
    }
}

/* Keeps the load factor at most 1; a failed growth keeps the old table. */
static void table_grow(gcmpi_ef_store *s)
{
    size_t n = s->n_buckets * 2;
    gcmpi_ef_entry **b = calloc(n, sizeof *b);
    if (!b) return;
    for (size_t i = 0; i < s->n_buckets; i++) {
        gcmpi_ef_entry *e = s->buckets[i];
        while (e) {
            gcmpi_ef_entry *next = e->chain;
            size_t j = key_hash(&e->key) & (n - 1);
            e->chain = b[j];
            b[j] = e;
            e = next;
        }
    }
    free(s->buckets);
    s->buckets = b;
    s->n_buckets = n;
}

static void entry_drop(gcmpi_ef_entry *e)
{
    table_remove(e);
    lru_unlink(e);
    ef_used -= e->bytes;
    entry_free(e);
}

/* Evicts the least recently used entry no call is using; 0 if none. */
static int evict_one(void)
{
    for (gcmpi_ef_entry *e = lru_oldest; e; e = e->newer) {
        if (e->pinned) continue;
        e->owner->counts[e->key.kind].evicted++;
        entry_drop(e);
        return 1;
    }
    return 0;
}

static void slot_fill(gcmpi_ef_slot *slot, gcmpi_ef_entry *e, int fresh)
{
    /* A device entry's floats are in device memory: its host part is the
     * header and the adaptive block alone. */
    const size_t floats = e->dev ? 0 : e->residual_floats + e->server_floats + e->state_floats;
    float *f = e->dev ? e->dev : e->data;
    slot->residual = e->residual_floats ? f : NULL;
    slot->server = e->server_floats ? f + e->residual_floats : NULL;
    slot->state = e->state_floats ? f + e->residual_floats + e->server_floats : NULL;
    slot->adapt = e->adapt_bytes ? (char *)e + adapt_offset(floats) : NULL;
    slot->fresh = fresh;
    slot->adapt_fresh = fresh;
    slot->momentum_lapsed = &e->momentum_lapsed;
}

gcmpi_ef_entry *gcmpi_ef_acquire(gcmpi_ef_store *s, const gcmpi_ef_key *key,
                                 size_t residual_floats, size_t server_floats,
                                 size_t state_floats, size_t adapt_bytes, gcmpi_ef_slot *slot)
{
    return gcmpi_ef_acquire_in(s, key, GCMPI_EF_HOST, residual_floats, server_floats,
                               state_floats, adapt_bytes, slot);
}

static gcmpi_ef_entry *acquire_locked(gcmpi_ef_store *s, const gcmpi_ef_key *key,
                                      gcmpi_ef_space space, size_t residual_floats,
                                      size_t server_floats, size_t state_floats,
                                      size_t adapt_bytes, gcmpi_ef_slot *slot);

gcmpi_ef_entry *gcmpi_ef_acquire_in(gcmpi_ef_store *s, const gcmpi_ef_key *key,
                                    gcmpi_ef_space space, size_t residual_floats,
                                    size_t server_floats, size_t state_floats,
                                    size_t adapt_bytes, gcmpi_ef_slot *slot)
{
    gcmpi_ef_entry *e = acquire_locked(s, key, space, residual_floats, server_floats,
                                       state_floats, adapt_bytes, slot);
    collect_garbage();
    return e;
}

static gcmpi_ef_entry *acquire_locked(gcmpi_ef_store *s, const gcmpi_ef_key *key,
                                      gcmpi_ef_space space, size_t residual_floats,
                                      size_t server_floats, size_t state_floats,
                                      size_t adapt_bytes, gcmpi_ef_slot *slot)
{
    memset(slot, 0, sizeof *slot);
    slot->fresh = 1;
    slot->adapt_fresh = 1;
    pthread_mutex_lock(&ef_lock);
    gcmpi_ef_counts *counts = &s->counts[key->kind];

    gcmpi_ef_entry *e = *bucket_of(s, key);
    while (e && !key_equal(&e->key, key)) e = e->chain;
    if (e && e->residual_floats == residual_floats && e->server_floats == server_floats &&
        e->state_floats == state_floats && e->adapt_bytes == adapt_bytes &&
        (e->dev != NULL) == (space == GCMPI_EF_DEVICE)) {
        counts->reused++;
        lru_unlink(e);
        lru_push_newest(e);
        e->pinned = 1;
        slot_fill(slot, e, 0);
        pthread_mutex_unlock(&ef_lock);
        return e;
    }
    if (e) entry_drop(e); /* same key, other shape: cannot be continued */
    counts->missed++;

    const size_t all_floats = residual_floats + server_floats + state_floats;
    /* On the device, the floats live in device memory and the host entry
     * keeps only the header and the adaptive block. */
    const size_t floats = space == GCMPI_EF_DEVICE ? 0 : all_floats;
    const size_t dev_bytes = space == GCMPI_EF_DEVICE ? all_floats * sizeof(float) : 0;
    const size_t room = (SIZE_MAX / 2 - sizeof(gcmpi_ef_entry)) / sizeof(float);
    if (all_floats > room || adapt_bytes > SIZE_MAX / 4) {
        pthread_mutex_unlock(&ef_lock);
        return NULL;
    }
    const uint64_t bytes = adapt_offset(floats) + align_up(adapt_bytes) + dev_bytes;
    if (bytes > ef_limit) {
        pthread_mutex_unlock(&ef_lock);
        return NULL;
    }
    while (ef_used + bytes > ef_limit && evict_one()) {}
    if (ef_used + bytes > ef_limit) {
        pthread_mutex_unlock(&ef_lock);
        return NULL;
    }
    const size_t host_bytes = (size_t)bytes - dev_bytes;
    void *mem = NULL;
    if (posix_memalign(&mem, ENTRY_ALIGN, host_bytes) != 0) {
        pthread_mutex_unlock(&ef_lock);
        return NULL;
    }
    e = memset(mem, 0, host_bytes);
    if (dev_bytes) {
        /* Device memory of entries evicted just now goes back first, so
         * device memory stays within the bound too. Safe under ef_lock:
         * device-space callers hold the device lock (ef_store.h). */
        dev_garbage *g = garbage;
        garbage = NULL;
        free_garbage(g);
        e->dev = gcmpi_device_alloc_zeroed(dev_bytes);
        e->dev_bytes = dev_bytes;
        if (!e->dev) {
            free(mem);
            pthread_mutex_unlock(&ef_lock);
            return NULL;
        }
    }
    e->key = *key;
    e->owner = s;
    e->bytes = (size_t)bytes;
    e->residual_floats = residual_floats;
    e->server_floats = server_floats;
    e->state_floats = state_floats;
    e->adapt_bytes = adapt_bytes;
    e->pinned = 1;
    if (s->n_entries >= s->n_buckets) table_grow(s);
    gcmpi_ef_entry **b = bucket_of(s, key);
    e->chain = *b;
    *b = e;
    s->n_entries++;
    lru_push_newest(e);
    ef_used += bytes;
    counts->created++;
    slot_fill(slot, e, 1);
    pthread_mutex_unlock(&ef_lock);
    return e;
}

void gcmpi_ef_release(gcmpi_ef_entry *e)
{
    if (!e) return;
    pthread_mutex_lock(&ef_lock);
    e->pinned = 0;
    pthread_mutex_unlock(&ef_lock);
}

gcmpi_ef_counts gcmpi_ef_store_counts(const gcmpi_ef_store *s, gcmpi_kind kind)
{
    pthread_mutex_lock(&ef_lock);
    gcmpi_ef_counts c = s->counts[kind];
    pthread_mutex_unlock(&ef_lock);
    return c;
}

void gcmpi_ef_store_free(gcmpi_ef_store *s)
{
    if (!s) return;
    pthread_mutex_lock(&ef_lock);
    for (size_t i = 0; i < s->n_buckets; i++) {
        gcmpi_ef_entry *e = s->buckets[i];
        while (e) {
            gcmpi_ef_entry *next = e->chain;
            lru_unlink(e);
            ef_used -= e->bytes;
            entry_free(e);
            e = next;
        }
    }
    pthread_mutex_unlock(&ef_lock);
    free(s->buckets);
    free(s);
    collect_garbage();
}
