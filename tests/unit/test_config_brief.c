/* test_config_brief.c — the short list of settings the report shows:
 * changed ones plus those the chosen codec and adaptive method read. */
#include "gcmpi_config.h"

#include <criterion/criterion.h>
#include <string.h>

#define ENV(...) ((char *[]){__VA_ARGS__, NULL})

static const char *brief_of(char **env)
{
    static gcmpi_config cfg;
    static gcmpi_config_result res;
    static char text[4096];
    gcmpi_config_load(&cfg, &res, env);
    cr_assert(res.ok, "%s", res.error);
    size_t n = gcmpi_config_describe_brief(&cfg, text, sizeof text);
    cr_assert_eq(n, strlen(text));
    return text;
}

Test(brief, defaults_show_only_the_codec)
{
    cr_assert_str_eq(brief_of(ENV("GCMPI_X_UNUSED_=1")), "GCMPI_CODEC=none\n");
}

Test(brief, default_topk_shows_codec_ratio_and_error_feedback)
{
    cr_assert_str_eq(brief_of(ENV("GCMPI_CODEC=topk")),
                     "GCMPI_CODEC=topk\nGCMPI_RATIO=0.01\nGCMPI_EF=auto\n");
}

Test(brief, a_changed_setting_is_shown_whatever_the_codec_reads)
{
    cr_assert_str_eq(brief_of(ENV("GCMPI_CODEC=topk", "GCMPI_SEED=7", "GCMPI_STATS=stderr")),
                     "GCMPI_CODEC=topk\nGCMPI_RATIO=0.01\nGCMPI_EF=auto\nGCMPI_SEED=7\n"
                     "GCMPI_STATS=stderr\n");
}

Test(brief, a_codec_shows_the_parameters_it_reads)
{
    cr_assert_str_eq(brief_of(ENV("GCMPI_CODEC=qsgd")),
                     "GCMPI_CODEC=qsgd\nGCMPI_BITS=4\nGCMPI_BUCKET=512\nGCMPI_QSGD_CODING=fixed\n"
                     "GCMPI_EF=auto\nGCMPI_SEED=42\n");
}

Test(brief, an_adaptive_method_shows_its_own_parameters_only)
{
    const char *t = brief_of(ENV("GCMPI_CODEC=topk", "GCMPI_ADAPT=edgc"));
    cr_assert(strstr(t, "GCMPI_ADAPT=edgc\n"), "%s", t);
    cr_assert(strstr(t, "GCMPI_EDGC_WINDOW=100\n"), "%s", t);
    cr_assert_null(strstr(t, "GCMPI_GCT_"), "%s", t);
    cr_assert_null(strstr(t, "GCMPI_VAR_"), "%s", t);
}

Test(brief, a_small_buffer_holds_whole_lines_only)
{
    gcmpi_config cfg;
    gcmpi_config_result res;
    gcmpi_config_load(&cfg, &res, ENV("GCMPI_CODEC=topk"));
    char text[24];
    size_t n = gcmpi_config_describe_brief(&cfg, text, sizeof text);
    cr_assert_eq(n, strlen("GCMPI_CODEC=topk\nGCMPI_RATIO=0.01\nGCMPI_EF=auto\n"));
    cr_assert_str_eq(text, "GCMPI_CODEC=topk\n");
}

Test(brief, per_rank_variables_are_those_left_out_of_the_hash)
{
    cr_assert(gcmpi_config_is_per_rank("GCMPI_STATS"));
    cr_assert(gcmpi_config_is_per_rank("GCMPI_VERBOSE"));
    cr_assert(gcmpi_config_is_per_rank("GCMPI_EF_MAX_BYTES"));
    cr_assert(gcmpi_config_is_per_rank("GCMPI_CONFIG"));
    cr_assert_not(gcmpi_config_is_per_rank("GCMPI_SEED"));
    cr_assert_not(gcmpi_config_is_per_rank("GCMPI_CODEC"));
}
