/* ef_store.h — per-buffer state of one communicator: error-feedback
 * residuals (DESIGN.md "Error feedback"), codec state and the adaptive
 * layer's block (codecs/adapt/gc_adapt.h), keyed by the buffers and layout
 * of the call, under one
 * per-process memory bound (GCMPI_EF_MAX_BYTES) shared by all communicators
 * with least-recently-used eviction. Thread-safe: one process-wide mutex
 * guards every store, the byte count and the LRU list. */
#ifndef GCMPI_EF_STORE_H
#define GCMPI_EF_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "coll.h"

/* The intercepted collectives; statistics and residuals are kept per kind. */
typedef enum gcmpi_kind {
    GCMPI_KIND_ALLREDUCE = 0,
    GCMPI_KIND_ALLGATHER,
    GCMPI_KIND_COUNT
} gcmpi_kind;

/* "The same gradient bucket as last time": a framework that reuses one
 * fusion buffer for several groups of tensors calls with the same address
 * and different counts, so the count and the layout are part of the key. */
typedef struct gcmpi_ef_key {
    const void *sendbuf;   /* NULL for MPI_IN_PLACE */
    const void *recvbuf;
    uint64_t count;        /* allreduce: elements; allgather: one block */
    gcmpi_kind kind;
    int of_node;           /* 1: hier's residual of a node's sum, kept apart
                              from this rank's own (flat) residual        */
} gcmpi_ef_key;

typedef struct gcmpi_ef_counts {
    uint64_t created;  /* residuals allocated for a new key                    */
    uint64_t reused;   /* calls that found the residual of an earlier call     */
    uint64_t evicted;  /* residuals dropped to stay under GCMPI_EF_MAX_BYTES   */
    uint64_t missed;   /* calls that found none (new key, or no room)          */
} gcmpi_ef_counts;

typedef struct gcmpi_ef_store gcmpi_ef_store;
typedef struct gcmpi_ef_entry gcmpi_ef_entry;

/* The per-process bound, set at MPI_Init before any store exists. */
void gcmpi_ef_set_limit(uint64_t max_bytes);

/* NULL when out of memory. */
gcmpi_ef_store *gcmpi_ef_store_create(void);
/* Frees every residual of the store and returns its bytes to the bound. */
void gcmpi_ef_store_free(gcmpi_ef_store *store);

/* The slot for key, zeroed if new, pinned (never evicted) until
 * gcmpi_ef_release. Sizes are in floats, except adapt_bytes (the adaptive
 * block, 64-byte aligned; 0 for none); everything counts against
 * GCMPI_EF_MAX_BYTES. A part of size 0 gets a NULL pointer. Allocates only
 * for a new key. Returns NULL, with slot pointers NULL and slot->fresh =
 * slot->adapt_fresh = 1, when the entry does not fit under the bound or
 * memory runs out: the call then runs without error feedback and without
 * adaptive state. */
gcmpi_ef_entry *gcmpi_ef_acquire(gcmpi_ef_store *store, const gcmpi_ef_key *key,
                                 size_t residual_floats, size_t server_floats,
                                 size_t state_floats, size_t adapt_bytes,
                                 gcmpi_ef_slot *slot);
void gcmpi_ef_release(gcmpi_ef_entry *entry);

/* Where an entry's floats (residual, server, state) live. Device entries
 * (calls on CUDA buffers, pmpi/device.h) hold them in device memory under
 * the same keys and the same bound; the adaptive block stays on the host.
 * A key found in the other space is dropped and started afresh. Callers
 * asking for GCMPI_EF_DEVICE hold the device lock (pmpi/device.h). */
typedef enum gcmpi_ef_space { GCMPI_EF_HOST = 0, GCMPI_EF_DEVICE } gcmpi_ef_space;
gcmpi_ef_entry *gcmpi_ef_acquire_in(gcmpi_ef_store *store, const gcmpi_ef_key *key,
                                    gcmpi_ef_space space, size_t residual_floats,
                                    size_t server_floats, size_t state_floats,
                                    size_t adapt_bytes, gcmpi_ef_slot *slot);

/* Counters of the store for one kind (evictions of its entries included). */
gcmpi_ef_counts gcmpi_ef_store_counts(const gcmpi_ef_store *store, gcmpi_kind kind);

/* Bytes held by all stores of the process. */
uint64_t gcmpi_ef_bytes_in_use(void);

#endif /* GCMPI_EF_STORE_H */
