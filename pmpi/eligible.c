/* eligible.c — the eligibility rules, in one place (DESIGN.md
 * "Eligibility"). No MPI calls: the shim gathers the communicator's facts. */
#include "eligible.h"

#include <string.h>

static MPI_Datatype float_alias;
static int have_float_alias;

void gcmpi_eligible_accept_as_float(MPI_Datatype datatype)
{
    float_alias = datatype;
    have_float_alias = 1;
}

static int is_float(MPI_Datatype datatype)
{
    return datatype == MPI_FLOAT || (have_float_alias && datatype == float_alias);
}

int gcmpi_compression_on(const gcmpi_config *cfg)
{
    if (cfg->disable) return 0;
    /* Codec none is worth running only through the zstd stage, or when an
     * algorithm is forced (to test the algorithms with exact arithmetic). */
    int codec_none = cfg->codec == NULL || strcmp(gc_codec_name(cfg->codec), "none") == 0;
    return !codec_none || cfg->params.zstd_level > 0 || cfg->algo != GCMPI_ALGO_AUTO;
}

static gcmpi_skip enabled_skip(const gcmpi_config *cfg)
{
    if (cfg->disable) return GCMPI_SKIP_DISABLED;
    return gcmpi_compression_on(cfg) ? GCMPI_ELIGIBLE : GCMPI_SKIP_NO_CODEC;
}

static gcmpi_skip size_skip(const gcmpi_config *cfg, int64_t count)
{
    if (count < 0) return GCMPI_SKIP_COUNT;
    return (uint64_t)count * sizeof(float) < cfg->min_bytes ? GCMPI_SKIP_SMALL
                                                             : GCMPI_ELIGIBLE;
}

gcmpi_skip gcmpi_eligible_allreduce(const gcmpi_config *cfg, MPI_Datatype datatype,
                                    MPI_Op op, int64_t count)
{
    if (!is_float(datatype)) return GCMPI_SKIP_DATATYPE;
    if (op != MPI_SUM) return GCMPI_SKIP_OP;
    gcmpi_skip skip = enabled_skip(cfg);
    return skip != GCMPI_ELIGIBLE ? skip : size_skip(cfg, count);
}

gcmpi_skip gcmpi_eligible_allgather(const gcmpi_config *cfg, const void *sendbuf,
                                    int64_t sendcount, MPI_Datatype sendtype,
                                    int64_t recvcount, MPI_Datatype recvtype)
{
    if (!is_float(recvtype)) return GCMPI_SKIP_DATATYPE;
    if (sendbuf != MPI_IN_PLACE) {
        if (sendtype != recvtype) return GCMPI_SKIP_DATATYPE;
        if (sendcount != recvcount) return GCMPI_SKIP_COUNT;
    }
    gcmpi_skip skip = enabled_skip(cfg);
    return skip != GCMPI_ELIGIBLE ? skip : size_skip(cfg, recvcount);
}

gcmpi_skip gcmpi_eligible_comm(const gcmpi_config *cfg, const gcmpi_comm_facts *facts)
{
    if (facts->inter || facts->size < 2) return GCMPI_SKIP_COMM;
    switch (cfg->comm) {
    case GCMPI_COMM_ALL:
        return GCMPI_ELIGIBLE;
    case GCMPI_COMM_WORLD_ONLY:
        return facts->world_relation == MPI_IDENT || facts->world_relation == MPI_CONGRUENT
                   ? GCMPI_ELIGIBLE
                   : GCMPI_SKIP_COMM;
    case GCMPI_COMM_NAMES:
        for (int i = 0; i < cfg->n_comm_names; i++)
            if (strcmp(cfg->comm_names[i], facts->name) == 0) return GCMPI_ELIGIBLE;
        return GCMPI_SKIP_COMM;
    }
    return GCMPI_SKIP_COMM;
}

const char *gcmpi_skip_reason(gcmpi_skip skip)
{
    switch (skip) {
    case GCMPI_ELIGIBLE: return "compressed";
    case GCMPI_SKIP_DISABLED: return "GCMPI_DISABLE is set";
    case GCMPI_SKIP_NO_CODEC: return "codec none without zstd stage or forced algorithm";
    case GCMPI_SKIP_DATATYPE: return "datatype is not MPI_FLOAT (or a 4-byte MPI_REAL)";
    case GCMPI_SKIP_OP: return "op is not MPI_SUM";
    case GCMPI_SKIP_COUNT: return "counts differ or are negative";
    case GCMPI_SKIP_SMALL: return "message below GCMPI_MIN_BYTES";
    case GCMPI_SKIP_COMM: return "communicator not selected by GCMPI_COMM";
    }
    return "unknown";
}
