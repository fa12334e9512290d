/* test_adapt_state.c — the per-buffer interface of the adaptive layer
 * (adapt.c): what must be agreed, the fixed-point agreement, the mean of
 * proposals as the setting, GCT's shaping through the state, and which
 * configurations get a width policy. The methods' own arithmetic is tested
 * in test_adapt_gct.c and test_adapt_edgc.c; the agreement across real
 * ranks in tests/mpi (adapt-*). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "adapt_test_util.h"

/* A zeroed, initialised state block; free() it. */
static void *state(const gc_adapt_config *cfg, const gc_codec *c, const gc_params *p, size_t n)
{
    size_t bytes = gc_adapt_state_bytes(cfg, c, n);
    void *st = aligned_alloc(64, (bytes + 63) / 64 * 64);
    cr_assert_not_null(st);
    memset(st, 0, bytes);
    gc_adapt_state_init(st, cfg, c, p, n);
    return st;
}

Test(adapt_state, only_methods_that_change_a_bound_or_shape_agree)
{
    gc_adapt_config none = config(GC_ADAPT_NONE), gct = config(GC_ADAPT_GCT),
                    edgc = config(GC_ADAPT_EDGC), var = config(GC_ADAPT_VARIANCE),
                    aut = config(GC_ADAPT_NONE);
    aut.ratio_auto.on = 1;
    cr_assert_eq(gc_adapt_agree_len(&none, codec("topk")), 0);
    cr_assert_eq(gc_adapt_agree_len(&gct, codec("eg")), 0);
    cr_assert_eq(gc_adapt_agree_len(&edgc, codec("topk")), GC_ADAPT_AGREE_LEN);
    cr_assert_eq(gc_adapt_agree_len(&var, codec("topkq")), GC_ADAPT_AGREE_LEN);
    cr_assert_eq(gc_adapt_agree_len(&aut, codec("topk")), GC_ADAPT_AGREE_LEN);
}

Test(adapt_state, history_methods_keep_one_float_per_element)
{
    gc_adapt_config gct = config(GC_ADAPT_GCT), var = config(GC_ADAPT_VARIANCE),
                    edgc = config(GC_ADAPT_EDGC);
    size_t base = gc_adapt_state_bytes(&edgc, codec("topk"), 1000);
    cr_assert_eq(gc_adapt_state_bytes(&edgc, codec("topk"), 0), base, "edgc keeps no history");
    cr_assert_geq(gc_adapt_state_bytes(&gct, codec("eg"), 1000), base + 1000 * sizeof(float));
    cr_assert_geq(gc_adapt_state_bytes(&var, codec("topk"), 1000), base + 1000 * sizeof(float));
}

Test(adapt_state, proposal_goes_out_in_32_32_fixed_point)
{
    gc_adapt_config cfg = config(GC_ADAPT_EDGC);
    gc_params p;
    gc_params_default(&p);
    p.ratio = 0.01;
    float g[64] = {0};
    void *st = state(&cfg, codec("topk"), &p, 64);
    int64_t local[GC_ADAPT_AGREE_LEN];
    gc_adapt_local(st, &cfg, g, 64, 7, local);
    cr_assert_eq(local[0], (int64_t)llround(0.01 * FIX_ONE));
    cr_assert_eq(local[3], 0);
    free(st);
}

Test(adapt_state, the_setting_is_the_mean_of_the_proposals)
{
    gc_adapt_config cfg = config(GC_ADAPT_EDGC);
    gc_params p;
    gc_params_default(&p);
    p.ratio = 0.01;
    void *st = state(&cfg, codec("topk"), &p, 64);
    /* Three ranks proposed 0.01, 0.02 and 0.03: every rank uses 0.02,
     * whatever it proposed itself. */
    int64_t sum[GC_ADAPT_AGREE_LEN] = {llround(0.01 * FIX_ONE) + llround(0.02 * FIX_ONE) +
                                           llround(0.03 * FIX_ONE),
                                       0, 0, 0};
    gc_adapt_decide(st, &cfg, sum, 3, &p);
    cr_assert_float_eq(p.ratio, 0.02, 1e-9);
    free(st);

    /* powersgd: ranks 3, 4 and 6 average 4.33, rounded to rank 4. */
    gc_params_default(&p);
    p.rank = 4;
    st = state(&cfg, codec("powersgd"), &p, 64);
    int64_t rsum[GC_ADAPT_AGREE_LEN] = {(int64_t)(13 * FIX_ONE), 0, 0, 0};
    gc_adapt_decide(st, &cfg, rsum, 3, &p);
    cr_assert_eq(p.rank, 4);
    free(st);
}

Test(adapt_state, a_window_of_agreed_entropies_moves_the_next_proposal)
{
    gc_adapt_config cfg = config(GC_ADAPT_EDGC);
    cfg.edgc.window = 2;
    cfg.edgc.alpha = 1.0;
    gc_params p;
    gc_params_default(&p);
    p.ratio = 0.01;
    void *st = state(&cfg, codec("topk"), &p, 64);
    float g[64] = {0};
    int64_t local[GC_ADAPT_AGREE_LEN];
    /* Window 1 (anchor): entropy 5 bits. Window 2: 4 bits, one bit less,
     * so the model halves the ratio for window 3 (setting = base 2^(h-h_ref)). */
    const double h[4] = {5, 5, 4, 4};
    for (int call = 0; call < 4; call++) {
        gc_adapt_local(st, &cfg, g, 64, (uint64_t)call, local);
        int64_t sum[GC_ADAPT_AGREE_LEN] = {2 * local[0], llround(2 * h[call] * FIX_ONE), 2, 0};
        gc_params q = p;
        gc_adapt_decide(st, &cfg, sum, 2, &q);
        cr_assert_float_eq(q.ratio, 0.01, 1e-9, "call %d uses the anchor's setting", call);
        gc_adapt_observe(st, &cfg, g, 64, 2, 100.0, 0.001);
    }
    gc_adapt_local(st, &cfg, g, 64, 4, local);
    cr_assert_eq(local[0], llround(0.005 * FIX_ONE), "window 3 proposes half the ratio");
    free(st);
}

Test(adapt_state, gct_shapes_from_the_second_call_with_the_remembered_mean)
{
    gc_adapt_config cfg = config(GC_ADAPT_GCT);
    cfg.gct.lambda = 0.1;
    cfg.gct.lr = 0.5;
    cfg.gct.eps = 1e-3;
    gc_params p;
    gc_params_default(&p);
    enum { N = 5 };
    const float g[N] = {1.0f, -2.0f, 0.5f, 0.0f, 3.0f};
    const float allreduced[N] = {4.0f, -4.0f, 2.0f, 1.0f, 8.0f};
    float out[N];
    void *st = state(&cfg, codec("eg"), &p, N);
    cr_assert_eq(gc_adapt_shape(st, &cfg, g, out, N), 1);
    cr_assert_arr_eq(out, g, sizeof g, "first call: nothing to compare with, g unchanged");
    gc_adapt_observe(st, &cfg, allreduced, N, 2, 0, 0);
    cr_assert_eq(gc_adapt_shape(st, &cfg, g, out, N), 1);

    /* The same through gct.c directly: prev = allreduced / 2 ranks, and the
     * state's lambda after one call (no decay yet). */
    float prev[N], want[N];
    gc_gct_remember(allreduced, N, 2, prev);
    gc_gct_state ref;
    gc_gct_init(&ref, &cfg.gct);
    ref.calls = 1;
    gc_gct_shape(&ref, &cfg.gct, g, prev, want, N);
    cr_assert_arr_eq(out, want, sizeof want);
    cr_assert_neq(memcmp(out, g, sizeof g), 0, "the second call is shaped");

    gc_adapt_report r;
    gc_adapt_report_of(st, &cfg, &r);
    cr_assert_float_eq(r.lambda, 0.1, 1e-12);
    cr_assert(isnan(r.entropy) && isnan(r.bits));
    free(st);
}

Test(adapt_state, only_variance_with_topkq_installs_a_width_policy)
{
    gc_params p;
    gc_params_default(&p);
    gc_adapt_config var = config(GC_ADAPT_VARIANCE), edgc = config(GC_ADAPT_EDGC);
    void *a = state(&var, codec("topkq"), &p, 16);
    void *b = state(&var, codec("topk"), &p, 16);
    void *c = state(&edgc, codec("topkq"), &p, 16);
    const gc_width_policy *pol = gc_adapt_width_policy(a, &var);
    cr_assert_not_null(pol);
    cr_assert_not_null(pol->choose);
    cr_assert_null(gc_adapt_width_policy(b, &var));
    cr_assert_null(gc_adapt_width_policy(c, &edgc));
    free(a);
    free(b);
    free(c);
}
