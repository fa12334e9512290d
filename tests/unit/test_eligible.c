/* test_eligible.c — which calls are compressed (pmpi/eligible.c): the
 * decisions are pure functions of the configuration and the call's
 * arguments, so they are tested without MPI_Init (handles are only
 * compared). */
#include "eligible.h"
#include "gcmpi_config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#define ENV(...) ((char *[]){__VA_ARGS__, NULL})

static gcmpi_config cfg;

static void load(char **env)
{
    gcmpi_config_result res;
    gcmpi_config_load(&cfg, &res, env);
    cr_assert(res.ok, "%s", res.error);
}

static float buf[4];

static gcmpi_skip allreduce(const void *sendbuf, int64_t count)
{
    return gcmpi_eligible_allreduce(&cfg, sendbuf, MPI_FLOAT, MPI_SUM, count);
}

static gcmpi_skip allgather(int64_t count)
{
    return gcmpi_eligible_allgather(&cfg, buf, count, MPI_FLOAT, count, MPI_FLOAT);
}

static gcmpi_skip comm(int relation, const char *name)
{
    gcmpi_comm_facts f = {.inter = 0, .size = 4, .world_relation = relation, .name = name};
    return gcmpi_eligible_comm(&cfg, &f);
}

Test(size, min_and_max_bytes_bound_the_compressed_range_inclusively)
{
    load(ENV("GCMPI_CODEC=topk", "GCMPI_MIN_BYTES=400", "GCMPI_MAX_BYTES=4000"));
    cr_assert_eq(allreduce(MPI_IN_PLACE, 99), GCMPI_SKIP_SMALL);
    cr_assert_eq(allreduce(MPI_IN_PLACE, 100), GCMPI_ELIGIBLE);
    cr_assert_eq(allreduce(MPI_IN_PLACE, 1000), GCMPI_ELIGIBLE);
    cr_assert_eq(allreduce(MPI_IN_PLACE, 1001), GCMPI_SKIP_LARGE);
    /* Counts whose byte size would overflow are large, not small. */
    cr_assert_eq(allreduce(MPI_IN_PLACE, INT64_MAX), GCMPI_SKIP_LARGE);
    load(ENV("GCMPI_CODEC=topk"));
    cr_assert_eq(allreduce(MPI_IN_PLACE, INT64_MAX), GCMPI_ELIGIBLE);
}

Test(size, allgather_bounds_apply_to_one_block)
{
    load(ENV("GCMPI_CODEC=fp16", "GCMPI_MIN_BYTES=400", "GCMPI_MAX_BYTES=4000"));
    cr_assert_eq(allgather(100), GCMPI_ELIGIBLE);
    cr_assert_eq(allgather(1001), GCMPI_SKIP_LARGE);
    cr_assert_eq(allgather(99), GCMPI_SKIP_SMALL);
}

Test(counts, listed_counts_pass_through_in_both_collectives)
{
    load(ENV("GCMPI_CODEC=topk", "GCMPI_ALLGATHER_CODEC=topk", "GCMPI_EXACT_COUNTS=2048,5000"));
    cr_assert_eq(allreduce(MPI_IN_PLACE, 2048), GCMPI_SKIP_EXACT_COUNT);
    cr_assert_eq(allreduce(buf, 5000), GCMPI_SKIP_EXACT_COUNT);
    cr_assert_eq(allreduce(MPI_IN_PLACE, 2049), GCMPI_ELIGIBLE);
    cr_assert_eq(allgather(5000), GCMPI_SKIP_EXACT_COUNT);
    cr_assert_eq(allgather(4999), GCMPI_ELIGIBLE);
}

Test(counts, the_first_reason_in_order_is_reported)
{
    load(ENV("GCMPI_CODEC=topk", "GCMPI_EXACT_COUNTS=10,100000", "GCMPI_MAX_BYTES=64K",
             "GCMPI_IN_PLACE_ONLY=1"));
    cr_assert_eq(allreduce(buf, 10), GCMPI_SKIP_SMALL);
    cr_assert_eq(allreduce(buf, 100000), GCMPI_SKIP_LARGE);
    cr_assert_eq(allreduce(buf, 2000), GCMPI_SKIP_NOT_IN_PLACE);
    /* Not float sums are never counted per communicator. */
    cr_assert_eq(gcmpi_eligible_allreduce(&cfg, buf, MPI_INT, MPI_SUM, 2000), GCMPI_SKIP_DATATYPE);
    cr_assert_eq(gcmpi_eligible_allreduce(&cfg, buf, MPI_FLOAT, MPI_MAX, 2000), GCMPI_SKIP_OP);
}

Test(in_place, only_in_place_allreduces_are_compressed_when_asked)
{
    load(ENV("GCMPI_CODEC=int8", "GCMPI_ALLGATHER_CODEC=int8", "GCMPI_IN_PLACE_ONLY=1"));
    cr_assert_eq(allreduce(MPI_IN_PLACE, 5000), GCMPI_ELIGIBLE);
    cr_assert_eq(allreduce(buf, 5000), GCMPI_SKIP_NOT_IN_PLACE);
    /* Allgather is not a gradient bucket: the rule does not select it. */
    cr_assert_eq(allgather(5000), GCMPI_ELIGIBLE);
    cr_assert_eq(gcmpi_eligible_allgather(&cfg, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, 5000, MPI_FLOAT),
                 GCMPI_ELIGIBLE);
    load(ENV("GCMPI_CODEC=int8"));
    cr_assert_eq(allreduce(buf, 5000), GCMPI_ELIGIBLE);
}

Test(allgather, default_under_a_gradient_codec_is_exact)
{
    static const char *const gradient_codecs[] = {"topk", "dgc", "randk", "sign", "onebit",
                                                  "int8", "qsgd", "powersgd", "eg", "topkq"};
    char entry[64];
    for (size_t i = 0; i < sizeof gradient_codecs / sizeof gradient_codecs[0]; i++) {
        snprintf(entry, sizeof entry, "GCMPI_CODEC=%s", gradient_codecs[i]);
        load(ENV(entry));
        cr_assert_eq(allgather(5000), GCMPI_SKIP_NO_CODEC, "%s", entry);
        cr_assert_eq(allreduce(MPI_IN_PLACE, 5000), GCMPI_ELIGIBLE, "%s", entry);
        cr_assert(gcmpi_compression_on(&cfg));
    }
}

Test(allgather, near_lossless_codecs_and_named_codecs_compress_it)
{
    load(ENV("GCMPI_CODEC=bf16"));
    cr_assert_eq(allgather(5000), GCMPI_ELIGIBLE);
    load(ENV("GCMPI_CODEC=topk", "GCMPI_ALLGATHER_CODEC=topk"));
    cr_assert_eq(allgather(5000), GCMPI_ELIGIBLE);
    /* Only the gather compressed: the library is on, allreduce is not. */
    load(ENV("GCMPI_ALLGATHER_CODEC=fp16"));
    cr_assert(gcmpi_compression_on(&cfg));
    cr_assert_eq(allgather(5000), GCMPI_ELIGIBLE);
    cr_assert_eq(allreduce(MPI_IN_PLACE, 5000), GCMPI_SKIP_NO_CODEC);
    load(ENV("GCMPI_CODEC=fp16", "GCMPI_ALLGATHER_CODEC=none"));
    cr_assert_eq(allgather(5000), GCMPI_SKIP_NO_CODEC);
    load(ENV("GCMPI_CODEC=none"));
    cr_assert(!gcmpi_compression_on(&cfg));
}

Test(comm, excluded_names_pass_through_whatever_selects_them)
{
    load(ENV("GCMPI_CODEC=topk", "GCMPI_COMM=!metrics"));
    cr_assert_eq(comm(MPI_CONGRUENT, "metrics"), GCMPI_SKIP_COMM_EXCLUDED);
    cr_assert_eq(comm(MPI_CONGRUENT, ""), GCMPI_ELIGIBLE);
    cr_assert_eq(comm(MPI_UNEQUAL, "grads"), GCMPI_SKIP_COMM);
    load(ENV("GCMPI_CODEC=topk", "GCMPI_COMM=all,!metrics,!tp"));
    cr_assert_eq(comm(MPI_UNEQUAL, "grads"), GCMPI_ELIGIBLE);
    cr_assert_eq(comm(MPI_UNEQUAL, "tp"), GCMPI_SKIP_COMM_EXCLUDED);
    cr_assert_eq(comm(MPI_IDENT, "metrics"), GCMPI_SKIP_COMM_EXCLUDED);
    load(ENV("GCMPI_CODEC=topk", "GCMPI_COMM=grads,!grads"));
    cr_assert_eq(comm(MPI_UNEQUAL, "grads"), GCMPI_SKIP_COMM_EXCLUDED);
}

Test(keys, every_counted_reason_has_its_own_statistics_key)
{
    static const char *const want[] = {"codec_none", "min_bytes", "max_bytes", "exact_counts",
                                       "in_place_only", "comm", "comm_excluded"};
    size_t found = 0;
    for (int a = 0; a < GCMPI_SKIP_KINDS; a++) {
        const char *key = gcmpi_skip_key((gcmpi_skip)a);
        cr_assert_eq(gcmpi_skip_counted((gcmpi_skip)a), key != NULL);
        cr_assert_str_neq(gcmpi_skip_reason((gcmpi_skip)a), "unknown");
        if (!key) continue;
        for (int b = a + 1; b < GCMPI_SKIP_KINDS; b++) {
            const char *other = gcmpi_skip_key((gcmpi_skip)b);
            cr_assert(!other || strcmp(key, other) != 0, "%s twice", key);
        }
        for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) found += strcmp(key, want[i]) == 0;
    }
    cr_assert_eq(found, sizeof want / sizeof want[0]);
    /* The report lists them in the order a call is checked. */
    cr_assert_eq(GCMPI_PASSED_REASONS, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        cr_assert_str_eq(gcmpi_skip_key(gcmpi_passed_reasons[i]), want[i]);
        cr_assert(gcmpi_skip_counted(gcmpi_passed_reasons[i]));
    }
    cr_assert_null(gcmpi_skip_key(GCMPI_ELIGIBLE));
    cr_assert_null(gcmpi_skip_key(GCMPI_SKIP_DATATYPE));
    cr_assert_null(gcmpi_skip_key(GCMPI_SKIP_DISABLED));
}
