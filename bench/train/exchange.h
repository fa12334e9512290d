/* exchange.h — everything the trainer sends over MPI. Gradients go through
 * MPI_Allreduce on MPI_FLOAT (what libgcmpi compresses); the loss and
 * accuracy counters use MPI_DOUBLE and MPI_LONG_LONG so they stay exact. */
#ifndef TRAIN_EXCHANGE_H
#define TRAIN_EXCHANGE_H

#include <mpi.h>
#include <stdbool.h>

/* Averages the fused gradient buffer (mlp.h layout) over the ranks of comm:
 * one in-place MPI_Allreduce over the whole buffer, or with per_tensor one
 * per tensor (W1, b1, W2, b2, W3, b3). Returns the MPI error code. */
int exchange_gradients(float *grads, bool per_tensor, MPI_Comm comm);

/* Sums n doubles or 64-bit counters across the ranks of comm, in place. */
int exchange_sum_doubles(double *v, int n, MPI_Comm comm);
int exchange_sum_counts(long long *v, int n, MPI_Comm comm);

#endif
