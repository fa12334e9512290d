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

/* Codec none is worth running only through the zstd stage, or when an
 * algorithm is forced (to test the algorithms with exact arithmetic);
 * auto and rule choose, they force nothing. */
static int codec_runs(const gcmpi_config *cfg, const gc_codec *codec)
{
    int codec_none = codec == NULL || strcmp(gc_codec_name(codec), "none") == 0;
    return !codec_none || cfg->params.zstd_level > 0 ||
           (cfg->algo != GCMPI_ALGO_AUTO && cfg->algo != GCMPI_ALGO_RULE);
}

int gcmpi_compression_on(const gcmpi_config *cfg)
{
    if (cfg->disable) return 0;
    return codec_runs(cfg, cfg->codec) || codec_runs(cfg, cfg->allgather_codec);
}

static gcmpi_skip enabled_skip(const gcmpi_config *cfg, const gc_codec *codec)
{
    if (cfg->disable) return GCMPI_SKIP_DISABLED;
    return codec_runs(cfg, codec) ? GCMPI_ELIGIBLE : GCMPI_SKIP_NO_CODEC;
}

static int listed(const gcmpi_config *cfg, uint64_t count)
{
    for (int i = 0; i < cfg->n_exact_counts; i++)
        if (cfg->exact_counts[i] == count) return 1;
    return 0;
}

/* The rules on the element count (one rank's block for allgather). */
static gcmpi_skip count_skip(const gcmpi_config *cfg, int64_t count)
{
    if (count < 0) return GCMPI_SKIP_COUNT;
    /* Saturated: a count beyond 2^62 is above any GCMPI_MAX_BYTES but off. */
    const uint64_t n = (uint64_t)count;
    const uint64_t bytes = n > UINT64_MAX / sizeof(float) ? UINT64_MAX : n * sizeof(float);
    if (bytes < cfg->min_bytes) return GCMPI_SKIP_SMALL;
    if (bytes > cfg->max_bytes) return GCMPI_SKIP_LARGE;
    if (listed(cfg, (uint64_t)count)) return GCMPI_SKIP_EXACT_COUNT;
    return GCMPI_ELIGIBLE;
}

gcmpi_skip gcmpi_eligible_allreduce(const gcmpi_config *cfg, const void *sendbuf,
                                    MPI_Datatype datatype, MPI_Op op, int64_t count)
{
    if (!is_float(datatype)) return GCMPI_SKIP_DATATYPE;
    if (op != MPI_SUM) return GCMPI_SKIP_OP;
    gcmpi_skip skip = enabled_skip(cfg, cfg->codec);
    if (skip == GCMPI_ELIGIBLE) skip = count_skip(cfg, count);
    if (skip == GCMPI_ELIGIBLE && cfg->in_place_only && sendbuf != MPI_IN_PLACE)
        skip = GCMPI_SKIP_NOT_IN_PLACE;
    return skip;
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
    gcmpi_skip skip = enabled_skip(cfg, cfg->allgather_codec);
    return skip != GCMPI_ELIGIBLE ? skip : count_skip(cfg, recvcount);
}

static int named(const char *name, const char (*names)[GCMPI_COMM_NAME_LEN], int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0) return 1;
    return 0;
}

gcmpi_skip gcmpi_eligible_comm(const gcmpi_config *cfg, const gcmpi_comm_facts *facts)
{
    if (facts->inter || facts->size < 2) return GCMPI_SKIP_COMM;
    if (named(facts->name, cfg->comm_excluded, cfg->n_comm_excluded))
        return GCMPI_SKIP_COMM_EXCLUDED;
    switch (cfg->comm) {
    case GCMPI_COMM_ALL:
        return GCMPI_ELIGIBLE;
    case GCMPI_COMM_WORLD_ONLY:
        return facts->world_relation == MPI_IDENT || facts->world_relation == MPI_CONGRUENT
                   ? GCMPI_ELIGIBLE
                   : GCMPI_SKIP_COMM;
    case GCMPI_COMM_NAMES:
        return named(facts->name, cfg->comm_names, cfg->n_comm_names) ? GCMPI_ELIGIBLE
                                                                       : GCMPI_SKIP_COMM;
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
    case GCMPI_SKIP_LARGE: return "message above GCMPI_MAX_BYTES";
    case GCMPI_SKIP_EXACT_COUNT: return "count listed in GCMPI_EXACT_COUNTS";
    case GCMPI_SKIP_NOT_IN_PLACE: return "not MPI_IN_PLACE while GCMPI_IN_PLACE_ONLY=1";
    case GCMPI_SKIP_COMM_EXCLUDED: return "communicator excluded by !NAME in GCMPI_COMM";
    case GCMPI_SKIP_KINDS: break;
    }
    return "unknown";
}

const char *gcmpi_skip_key(gcmpi_skip skip)
{
    switch (skip) {
    case GCMPI_SKIP_NO_CODEC: return "codec_none";
    case GCMPI_SKIP_SMALL: return "min_bytes";
    case GCMPI_SKIP_LARGE: return "max_bytes";
    case GCMPI_SKIP_EXACT_COUNT: return "exact_counts";
    case GCMPI_SKIP_NOT_IN_PLACE: return "in_place_only";
    case GCMPI_SKIP_COMM: return "comm";
    case GCMPI_SKIP_COMM_EXCLUDED: return "comm_excluded";
    default: return NULL; /* not counted per communicator */
    }
}

const gcmpi_skip gcmpi_passed_reasons[GCMPI_PASSED_REASONS] = {
    GCMPI_SKIP_NO_CODEC, GCMPI_SKIP_SMALL,       GCMPI_SKIP_LARGE, GCMPI_SKIP_EXACT_COUNT,
    GCMPI_SKIP_NOT_IN_PLACE, GCMPI_SKIP_COMM, GCMPI_SKIP_COMM_EXCLUDED,
};

/* The keys and gcmpi_passed_reasons name the same set (a unit test holds
 * them to it); the switch keeps the pass-through path free of loops. */
int gcmpi_skip_counted(gcmpi_skip skip)
{
    return gcmpi_skip_key(skip) != NULL;
}
