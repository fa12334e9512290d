/* auto_cache.h — GCMPI_AUTO_CACHE: GCMPI_ALGO=auto's agreed calibration
 * figures kept between jobs.
 *
 * A communicator's calibration costs its first auto call from under a
 * second (one host) to seconds (slow links; 9 s on the emulated 2 x 4
 * cluster of this machine, most of a 13 s training epoch). The same job
 * run again on the same hosts measures the same figures, so rank 0 keeps
 * them in a file named after everything they depend on: the library and
 * its calibration's version, the MPI library, the ranks and their hosts in
 * rank order, the node layout and the hashed settings (codec, ratio,
 * algorithm ...). What the key cannot see (another transport chosen by
 * the MPI's own settings, a loaded machine) is caught before use: one
 * link figure is measured again (coll_auto.c), and a cached model that
 * misses it by GCMPI_AUTO_CACHE_TOLERANCE is measured afresh and saved
 * over. MPI_Allgather's trials (coll_auto_gather.c) have no figures: their
 * file (its own key, collective=allgather) holds the settled rows alone,
 * each checked by the first call of its size against its median. A
 * missing, unreadable, corrupt or foreign file is a miss, never an error:
 * the job calibrates as without a cache. */
#ifndef GCMPI_AUTO_CACHE_H
#define GCMPI_AUTO_CACHE_H

#include <mpi.h>
#include <stddef.h>

#include "coll.h"

/* Bump when a figure's meaning changes (sizes, how runs are timed): older
 * files then no longer match any key. */
#define GCMPI_AUTO_CALIBRATION_VERSION 11 /* 2: the 64 KiB allreduces; 3: a
                                            settled line's median, the
                                            collective in the key; 4: inputs
                                            written before timing, encode
                                            without the inf/NaN pass; 5: the
                                            codec timed by the host's ranks
                                            together; 6: hier's columns'
                                            share of the link; 7: sparse_rd's
                                            own passes; 8: more codec calls a
                                            run at 64 KiB and 1 MiB; 9: and
                                            at 16 MiB where ranks waited
                                            longer than they worked, a
                                            1 MiB point inside the node; 10:
                                            the node's points in size order
                                            (the same measurements); 11:
                                            the codec at 8 KiB too */
/* A cached model holds while a fresh run of its checked figure is within
 * this factor of the cached one. Runs of one figure varied by up to 1.7x
 * on this 2-core machine; 1 and 10 Gbit/s differ by several times. */
#define GCMPI_AUTO_CACHE_TOLERANCE 2.0

#define GCMPI_AUTO_CACHE_KEY_LEN 512

/* Rank 0's view of a communicator's cache file; the other ranks keep
 * on = 0. */
typedef struct gcmpi_auto_cache {
    int on;                                /* a directory to read and write */
    char dir[GCMPI_AUTO_CACHE_FILE_LEN];
    char path[GCMPI_AUTO_CACHE_FILE_LEN];  /* dir/auto-HASH.txt             */
    char key[GCMPI_AUTO_CACHE_KEY_LEN];
} gcmpi_auto_cache;

/* Looks comm's calibration up for collective ("allreduce" or
 * "allgather"). Collective over comm: one reduction of the ranks' host
 * names (hashed) to rank 0, which reads the file, and one broadcast of
 * what it found. On return *found is the same on every rank, and when it
 * is 1 *out holds the file's contents everywhere. Returns an MPI error
 * code (a failed collective); a cache that cannot be read is *found = 0
 * with MPI_SUCCESS. */
int gcmpi_auto_cache_lookup(const gcmpi_config *cfg, MPI_Comm comm, const gcmpi_nodes *nodes,
                            const char *collective, gcmpi_auto_cache *c,
                            gcmpi_auto_cached *out, int *found);

/* Rank 0 (c->on), local: writes *in under c's key, through a temporary
 * file and a rename so that a concurrent job reads the old file or the
 * new one. Returns 0, or -1 with errno. */
int gcmpi_auto_cache_save(const gcmpi_auto_cache *c, const gcmpi_auto_cached *in,
                          double calibration_s);

/* The file format alone (tests): 0 on success; read returns -1 for a
 * missing, corrupt or foreign file (another key or figure count). */
int gcmpi_auto_cache_write_file(const char *path, const char *key, const gcmpi_auto_cached *in,
                                double calibration_s);
int gcmpi_auto_cache_read_file(const char *path, const char *key, gcmpi_auto_cached *out);

/* Whether a fresh measurement agrees with the cached one (both > 0). */
int gcmpi_auto_cache_agrees(double cached, double fresh);

#endif /* GCMPI_AUTO_CACHE_H */
