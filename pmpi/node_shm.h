/* node_shm.h — hier's two phases inside a node (reduce-scatter, then
 * allgather of the chunks) through one MPI-3 shared-memory window over the
 * node communicator, instead of PMPI_Reduce_scatter and PMPI_Allgatherv.
 *
 * Each rank copies its vector into its part of the window once and sums
 * its own chunk straight from every rank's copy; then each rank puts its
 * chunk into the window and copies the others' chunks out. Vectors larger
 * than the window go in rounds. Only for ranks that share memory: from
 * MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), or GCMPI_NODE_SIZE blocks
 * that MPI says share memory. */
#ifndef GCMPI_NODE_SHM_H
#define GCMPI_NODE_SHM_H

#include "cost_model.h"

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

/* Most floats one rank's part of the window holds (4 MiB): a larger
 * vector goes in rounds, two barriers each. A node's window is then a
 * sixteenth of a 64 MiB vector's (room in a container's /dev/shm), and a
 * round can stay in the shared last-level cache between one rank copying
 * its vector in and the others summing from it: on the emulated 2 x 4
 * cluster (2 cores, 32 MiB L3), hier's 64 MiB topk calls one after
 * another took 185-216 ms with 4 MiB parts against 261-332 ms with one
 * 64 MiB round (four runs each); alternating with rsag, 186-188 against
 * 177-223. Where the node's shared memory (/dev/shm: 64 MiB in a Docker
 * container by default) has less room, the parts are made smaller, down
 * to 64 Ki floats. */
#define GCMPI_NODE_SHM_MAX_FLOATS ((size_t)1 << 20)

/* Most floats of a part one round of hier's pipeline uses (16 MiB): a
 * segment is summed in one round where it fits, since the pipeline has
 * cut the vector into rounds already (segments sized for the link), and
 * every round costs two barriers of the node's ranks. On the emulated
 * 2 x 4 cluster (8 ranks on 2 cores, 64 MiB topk 0.01: 512 Ki-float
 * segments, 2 Mi floats a part) hier's median went from 94.8 ms (two
 * rounds a segment, 18 jobs) to 89.2 ms (one, 36 jobs; README, issue 14's
 * twelfth entry). */
#define GCMPI_NODE_SHM_PIPE_MAX_FLOATS ((size_t)4 << 20)

/* Returned, on every rank of the node, when no window fits the node's
 * shared memory: nothing was done, the caller sums through MPI instead.
 * Never an MPI error code (those are >= 0). */
#define GCMPI_NODE_SHM_NO_ROOM (-1)

typedef struct gcmpi_node_shm gcmpi_node_shm;

/* Whether the ranks of node can share a window: every rank's shared-memory
 * split of node is the whole of node. Collective over node. */
int gcmpi_node_shm_possible(MPI_Comm node, int *possible);

/* Local rank i gets in out[displs[i] .. displs[i] + counts[i]) the node's
 * sum of that range of every rank's in, summed in local rank order
 * (in == out allowed). The window (*shm, created or grown here; collective
 * over node with the same counts on every rank) is kept for the next
 * call. finite (may be NULL) is set to 1 when this rank's sum holds no inf
 * or NaN, found while summing (so an encoder of the sum need not scan it
 * again), else 0. round_floats: the most floats of a rank's part one
 * round uses (0: GCMPI_NODE_SHM_MAX_FLOATS; the same on every rank of the
 * node; a smaller figure set by gcmpi_node_shm_set_max_floats wins).
 * Returns an MPI error code, or GCMPI_NODE_SHM_NO_ROOM. */
int gcmpi_node_shm_reduce_scatter(gcmpi_node_shm **shm, MPI_Comm node, const float *in,
                                  float *out, const int *counts, const int *displs,
                                  size_t round_floats, int *finite);

/* Every rank ends with every rank's chunk out[displs[i] .. + counts[i]),
 * and with *worst the largest of the ranks' my_rc (so an error of one rank
 * reaches its whole node without one more collective). The chunks are
 * written with streaming stores where the node's outputs together
 * outgrow the last-level cache (stream_copy.h). Collective over
 * node, after gcmpi_node_shm_reduce_scatter with the same counts. */
int gcmpi_node_shm_allgather(gcmpi_node_shm **shm, MPI_Comm node, float *out, const int *counts,
                             const int *displs, int my_rc, int *worst);

/* GCMPI_NODE_SHM_SHARE_MAX_BYTES (cost_model.h): the most bytes a part
 * of the window is grown to for gcmpi_node_shm_share (the reduce-scatter's
 * rounds use at most GCMPI_NODE_SHM_PIPE_MAX_FLOATS of it). */

/* Every rank of the node publishes len bytes at `bytes` (len < 0, or more
 * than a part of the window holds: nothing) beside my_rc; on return
 * from[i] and lens[i] (q entries each) are local rank i's bytes and their
 * count (-1: none), readable in place until gcmpi_node_shm_release, and
 * *worst the largest my_rc of the node. The window's parts are grown to
 * room bytes first where they hold less (the same room on every rank of
 * the node, at most GCMPI_NODE_SHM_SHARE_MAX_BYTES; less where the node's
 * shared memory has less). For what is smaller than the floats it stands
 * for (hier's sparse payloads, decoded by every rank instead of their
 * sums copied). Collective over node; the window must not be in use by a
 * reduce-scatter or allgather meanwhile. GCMPI_NODE_SHM_NO_ROOM on every
 * rank of the node where growing it left no window at all. */
int gcmpi_node_shm_share(gcmpi_node_shm **shm, MPI_Comm node, size_t room, const void *bytes,
                         int64_t len, int my_rc, const unsigned char **from, int64_t *lens,
                         int *worst);
/* Ends what gcmpi_node_shm_share published: once every rank of the node
 * is here, the window may be written again. Collective over node. */
int gcmpi_node_shm_release(const gcmpi_node_shm *shm, MPI_Comm node);

/* Sets the most floats of a part (tests: a small part forces rounds);
 * GCMPI_NODE_SHM_MAX_FLOATS until then. The same on every rank. */
void gcmpi_node_shm_set_max_floats(size_t floats);

/* Tests and bench/node_bench.c: the allgather copies chunks out past the
 * cache (1, stream_copy.h) or through it (0) whatever their size; -1 (the
 * default): past it where the node's outputs outgrow the cache. */
void gcmpi_node_shm_set_streaming(int mode);

/* Tests: the bytes of shared memory a window may take, instead of what
 * /dev/shm has free (SIZE_MAX: measure it again). */
void gcmpi_node_shm_set_room(size_t bytes);

/* Frees the window (collective over its node) ... */
void gcmpi_node_shm_free(gcmpi_node_shm *shm);

/* ... except after this: at MPI_Finalize, communicators' states go in an
 * order of each rank's own, and freeing a window is a barrier of its node;
 * PMPI_Finalize releases what is left. */
void gcmpi_node_shm_finalizing(void);

#endif
