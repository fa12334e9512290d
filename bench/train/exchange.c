/* exchange.c — the gradient allreduce, shaped like a framework's: in place,
 * MPI_SUM, then a division by the number of ranks. */
#include "exchange.h"

#include "mlp.h"

int exchange_gradients(float *grads, bool per_tensor, MPI_Comm comm)
{
    int size = 1;
    int rc = MPI_Comm_size(comm, &size);
    if (rc != MPI_SUCCESS) return rc;
    if (per_tensor) {
        for (size_t t = 0; t < MLP_TENSORS; t++) {
            rc = MPI_Allreduce(MPI_IN_PLACE, grads + mlp_tensors[t].offset,
                               (int)mlp_tensors[t].count, MPI_FLOAT, MPI_SUM, comm);
            if (rc != MPI_SUCCESS) return rc;
        }
    } else {
        rc = MPI_Allreduce(MPI_IN_PLACE, grads, MLP_PARAMS, MPI_FLOAT, MPI_SUM, comm);
        if (rc != MPI_SUCCESS) return rc;
    }
    const float inv = 1.0f / (float)size;
    float *restrict g = grads;
    for (size_t i = 0; i < MLP_PARAMS; i++) g[i] *= inv;
    return MPI_SUCCESS;
}

int exchange_sum_doubles(double *v, int n, MPI_Comm comm)
{
    return MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM, comm);
}

int exchange_sum_counts(long long *v, int n, MPI_Comm comm)
{
    return MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_LONG_LONG, MPI_SUM, comm);
}
