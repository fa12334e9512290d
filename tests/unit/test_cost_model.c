/* test_cost_model.c — pmpi/cost_model.c: the predictions and the pick are
 * sane (monotonic in size and link speed, compression wins only where the
 * link is slow) on links given through the alpha-beta forms. */
#include <criterion/criterion.h>
#include <math.h>

#include "cost_model.h"

static const gcmpi_algo all[] = {GCMPI_ALGO_PASS, GCMPI_ALGO_ALLGATHER, GCMPI_ALGO_RSAG,
                                 GCMPI_ALGO_NATIVE, GCMPI_ALGO_HIER, GCMPI_ALGO_SPARSE_RD};
#define N_ALL ((int)(sizeof all / sizeof all[0]))

/* p ranks in nodes of q: shared memory inside (1 us, 10 GB/s), beta_inter
 * bytes/s between (10 us); a codec encoding at 2 GB/s, decoding at 5 GB/s. */
static gcmpi_cost_env cluster(int p, int q, double beta_inter, double ratio, double density)
{
    const int nodes = (p + q - 1) / q;
    gcmpi_cost_env e = {
        .p = p,
        .n_nodes = nodes,
        .flat = nodes > 1 ? gcmpi_prims_alpha_beta(p, q, 10e-6, beta_inter)
                          : gcmpi_prims_alpha_beta(p, 1, 1e-6, 10e9),
        .between = gcmpi_prims_alpha_beta(nodes, 1, 10e-6, beta_inter),
        .reduce_bcast = gcmpi_reduce_bcast_alpha_beta(q, 1e-6, 10e9),
        .encode = gcmpi_lin_rate(2e9),
        .decode = gcmpi_lin_rate(5e9),
        .payload_ratio = ratio,
        .native_ratio = 0,
        .density = density,
    };
    return e;
}

Test(cost_model, every_prediction_grows_with_the_message)
{
    gcmpi_cost_env e = cluster(16, 4, 1.25e9, 0.25, 0);
    for (int a = 0; a < N_ALL; a++) {
        double prev = 0;
        for (double bytes = 4096; bytes <= 1e9; bytes *= 4) {
            double t = gcmpi_cost_predict(&e, all[a], GCMPI_ALGO_RSAG, bytes);
            if (isinf(t)) break;
            cr_assert_gt(t, prev, "algo %d at %g bytes", all[a], bytes);
            prev = t;
        }
    }
}

Test(cost_model, a_slower_link_never_makes_a_call_faster)
{
    for (int a = 0; a < N_ALL; a++) {
        double prev = 0;
        for (double beta = 12.5e9; beta >= 1e8; beta /= 10) {
            gcmpi_cost_env e = cluster(64, 8, beta, 0.02, 0.01);
            double t = gcmpi_cost_predict(&e, all[a], GCMPI_ALGO_ALLGATHER, 64e6);
            if (isinf(t)) break;
            cr_assert_geq(t, prev, "algo %d at %g B/s", all[a], beta);
            prev = t;
        }
    }
}

Test(cost_model, shared_memory_passes_through_and_a_slow_link_compresses)
{
    gcmpi_cost_env shm = cluster(8, 8, 10e9, 0.25, 0); /* one node */
    cr_assert_eq(gcmpi_cost_pick(&shm, all, N_ALL, GCMPI_ALGO_RSAG, 64e6, NULL), GCMPI_ALGO_PASS);
    gcmpi_cost_env slow = cluster(8, 1, 1.25e8, 0.25, 0); /* 1 Gbit/s between 8 nodes */
    gcmpi_algo got = gcmpi_cost_pick(&slow, all, N_ALL, GCMPI_ALGO_RSAG, 64e6, NULL);
    cr_assert(got == GCMPI_ALGO_RSAG || got == GCMPI_ALGO_ALLGATHER, "picked %d", got);
}

Test(cost_model, hier_wins_with_fast_nodes_and_a_slow_link_between)
{
    gcmpi_cost_env e = cluster(8, 4, 1.25e8, 0.02, 0); /* 2 nodes x 4, 1 Gbit/s */
    double t_hier = gcmpi_cost_predict(&e, GCMPI_ALGO_HIER, GCMPI_ALGO_ALLGATHER, 64e6);
    double t_flat = gcmpi_cost_predict(&e, GCMPI_ALGO_ALLGATHER, GCMPI_ALGO_ALLGATHER, 64e6);
    cr_assert_lt(t_hier, t_flat);
    cr_assert_eq(gcmpi_cost_pick(&e, all, N_ALL, GCMPI_ALGO_ALLGATHER, 64e6, NULL), GCMPI_ALGO_HIER);
    /* One node, or one rank per node: hier is the flat algorithm, never picked. */
    gcmpi_cost_env one = cluster(8, 8, 1.25e8, 0.02, 0);
    cr_assert(isinf(gcmpi_cost_predict(&one, GCMPI_ALGO_HIER, GCMPI_ALGO_ALLGATHER, 64e6)));
}

Test(cost_model, sparse_recursive_doubling_beats_the_allgather_at_scale)
{
    gcmpi_cost_env small = cluster(4, 1, 1.25e9, 0.02, 0.01);
    gcmpi_cost_env big = cluster(1024, 1, 1.25e9, 0.02, 0.01);
    const double b = 400e6;
    cr_assert_lt(gcmpi_cost_predict(&big, GCMPI_ALGO_SPARSE_RD, 0, b),
                 gcmpi_cost_predict(&big, GCMPI_ALGO_ALLGATHER, 0, b));
    cr_assert_lt(gcmpi_cost_predict(&small, GCMPI_ALGO_ALLGATHER, 0, b),
                 1.5 * gcmpi_cost_predict(&small, GCMPI_ALGO_SPARSE_RD, 0, b));
    /* dense codecs have no sparse union */
    gcmpi_cost_env dense = cluster(64, 1, 1.25e9, 0.25, 0);
    cr_assert(isinf(gcmpi_cost_predict(&dense, GCMPI_ALGO_SPARSE_RD, 0, b)));
}

Test(cost_model, sparse_rd_takes_its_measured_passes_instead_of_scan_rate_ones)
{
    /* 4 ranks, density 0.01: a sparse union throughout (0.04 at the end). */
    gcmpi_cost_env e = cluster(4, 1, 1.25e9, 0.02, 0.01);
    e.scan = gcmpi_lin_rate(8e9);
    const double b = 64e6;
    const double guessed = gcmpi_cost_predict(&e, GCMPI_ALGO_SPARSE_RD, 0, b);
    e.sets = gcmpi_lin_rate(4e9);
    const double measured = gcmpi_cost_predict(&e, GCMPI_ALGO_SPARSE_RD, 0, b);
    /* Guessed: decode + four passes at the scan's rate + the result's
     * 5 GB/s placement; measured: the passes' own line, then the union's
     * entries beyond this rank's own set scattered (3 ns each). */
    const double n = b / 4, d = 0.01, final = 1 - pow(1 - d, 4);
    const double guessed_own = b / 5e9 + 4 * b / 8e9 + 2e-10 * b;
    const double measured_own = b / 4e9 + 3e-9 * (final - d) * n;
    cr_assert_float_eq(measured - guessed, measured_own - guessed_own, 1e-9);
    /* Bigger, dearer passes cost more. */
    e.sets = gcmpi_lin_rate(2e9);
    cr_assert_float_eq(gcmpi_cost_predict(&e, GCMPI_ALGO_SPARSE_RD, 0, b) - measured, b / 4e9,
                       1e-9);
}

Test(cost_model, native_needs_a_native_path)
{
    gcmpi_cost_env e = cluster(8, 1, 1.25e9, 0.25, 0);
    cr_assert(isinf(gcmpi_cost_predict(&e, GCMPI_ALGO_NATIVE, 0, 1e6)));
    e.native_ratio = 0.25;
    cr_assert(isfinite(gcmpi_cost_predict(&e, GCMPI_ALGO_NATIVE, 0, 1e6)));
}

Test(cost_model, the_pick_is_the_smallest_prediction)
{
    gcmpi_cost_env e = cluster(16, 4, 1.25e9, 0.05, 0.01);
    e.native_ratio = 0.25;
    for (double bytes = 1e3; bytes < 1e9; bytes *= 3) {
        double best;
        gcmpi_algo got = gcmpi_cost_pick(&e, all, N_ALL, GCMPI_ALGO_RSAG, bytes, &best);
        cr_assert_eq(best, gcmpi_cost_predict(&e, got, GCMPI_ALGO_RSAG, bytes));
        for (int a = 0; a < N_ALL; a++)
            cr_assert_leq(best, gcmpi_cost_predict(&e, all[a], GCMPI_ALGO_RSAG, bytes));
    }
}

Test(cost_model, a_fit_never_goes_negative)
{
    gcmpi_lin l = gcmpi_lin_fit(1000, 5e-3, 2000, 4e-3); /* noise: slower when smaller */
    cr_assert_eq(l.b, 0);
    cr_assert_geq(l.a, 0);
    l = gcmpi_lin_fit(1000, 1e-6, 1e6, 1e-3);
    cr_assert_float_eq(l.b, (1e-3 - 1e-6) / (1e6 - 1000), 1e-15);
}

Test(cost_model, a_line_through_five_points_has_room_to_floor_past_the_last)
{
    /* The allreduce's five calibration points (16 KiB, 64 KiB, 1 MiB and
     * two larger ones): a 64 KiB call that costs little more than 16 KiB
     * (a token bucket's burst) is read off its own point, not the chord
     * to 1 MiB, and floor_mean still has a knee to spare. */
    const double MiB = 1 << 20;
    const double x[] = {16e3, 64e3, MiB, 4 * MiB, 32 * MiB};
    const double t[] = {30e-6, 40e-6, 1e-3, 5e-3, 30e-3};
    const gcmpi_lin l = gcmpi_lin_through(x, t, 5);
    for (int i = 0; i < 5; i++)
        cr_assert_float_eq(gcmpi_lin_at(l, x[i]), t[i], 1e-12, "point %d", i);
    const double x4[] = {16e3, MiB, 4 * MiB, 32 * MiB}, t4[] = {30e-6, 1e-3, 5e-3, 30e-3};
    cr_assert_gt(gcmpi_lin_at(gcmpi_lin_through(x4, t4, 4), 64e3), 1.5 * 40e-6);
    const gcmpi_lin f = gcmpi_lin_floor_mean(l, 32 * MiB);
    cr_assert_eq(f.knee[GCMPI_LIN_KNEES - 1], 32 * MiB);
}

Test(cost_model, a_line_through_points_passes_each_and_goes_on_with_the_last_slope)
{
    /* Times of an allreduce that bends past the cache (1 ms/MiB to 16 MiB,
     * then 2 ms/MiB): the line hits all four points and extrapolates the
     * last slope, where one straight line would miss 64 MiB by a third. */
    const double MiB = 1 << 20;
    const double x[] = {16e3, MiB, 16 * MiB, 32 * MiB};
    const double t[] = {50e-6, 1e-3, 16e-3, 48e-3};
    const gcmpi_lin l = gcmpi_lin_through(x, t, 4);
    for (int i = 0; i < 4; i++)
        cr_assert_float_eq(gcmpi_lin_at(l, x[i]), t[i], 1e-9, "point %d", i);
    cr_assert_float_eq(gcmpi_lin_at(l, 64 * MiB), 48e-3 + 32 * 2e-3, 1e-9);
    cr_assert_float_eq(gcmpi_lin_slope(l), 2e-3 / MiB, 1e-15);
    /* Between points it is the chord: 8 MiB on the 1-16 MiB segment. */
    cr_assert_float_eq(gcmpi_lin_at(l, 8 * MiB), 1e-3 + 7 * (15e-3 / 15), 1e-9);
    /* A point not measured (0) ends the line: the third segment's slope
     * goes on; a slower smaller point never makes a slope negative. */
    const double t_missing[] = {50e-6, 1e-3, 16e-3, 0};
    const gcmpi_lin m = gcmpi_lin_through(x, t_missing, 4);
    cr_assert_eq(m.knee[1], 0);
    cr_assert_float_eq(gcmpi_lin_at(m, 64 * MiB), 16e-3 + 48 * 1e-3, 1e-9);
    const double t_noisy[] = {50e-6, 1e-3, 16e-3, 10e-3};
    const gcmpi_lin n = gcmpi_lin_through(x, t_noisy, 4);
    cr_assert_geq(gcmpi_lin_at(n, 64 * MiB), gcmpi_lin_at(n, 32 * MiB));
    cr_assert_float_eq(gcmpi_lin_at(n, 64 * MiB), 16e-3, 1e-9);
}

Test(cost_model, past_the_last_point_a_byte_costs_at_least_the_last_points_mean)
{
    /* Open MPI between two nodes at 1 Gbit/s: 1 MiB by recursive doubling
     * (34 ms), 4 MiB by a ring (59 ms, 14.6 ms/MiB); the chord between
     * them (8.3 ms/MiB) would put 64 MiB at 560 ms, the ring takes ~940. */
    const double MiB = 1 << 20;
    const double x[] = {16e3, MiB, 4 * MiB}, t[] = {1e-3, 34e-3, 59e-3};
    const gcmpi_lin chord = gcmpi_lin_through(x, t, 3);
    cr_assert_lt(gcmpi_lin_at(chord, 64 * MiB), 0.6);
    const gcmpi_lin l = gcmpi_lin_floor_mean(chord, 4 * MiB);
    for (int i = 0; i < 3; i++)
        cr_assert_float_eq(gcmpi_lin_at(l, x[i]), t[i], 1e-9, "point %d", i);
    const double mean = (59e-3 - l.a) / (4 * MiB);
    cr_assert_float_eq(gcmpi_lin_slope(l), mean, 1e-15);
    cr_assert_float_eq(gcmpi_lin_at(l, 64 * MiB), 59e-3 + 60 * MiB * mean, 1e-9);
    cr_assert_gt(gcmpi_lin_at(l, 64 * MiB), 0.9);
    /* A steeper last segment is kept; a floor at a point that is not the
     * last changes nothing. */
    const double t_bend[] = {1e-3, 34e-3, 200e-3};
    const gcmpi_lin bend = gcmpi_lin_through(x, t_bend, 3);
    const gcmpi_lin floored = gcmpi_lin_floor_mean(bend, 4 * MiB);
    cr_assert_eq(gcmpi_lin_slope(floored), gcmpi_lin_slope(bend));
    const gcmpi_lin early = gcmpi_lin_floor_mean(chord, MiB);
    cr_assert_eq(gcmpi_lin_at(early, 64 * MiB), gcmpi_lin_at(chord, 64 * MiB));
}

Test(cost_model, a_flat_allreduce_over_nodes_costs_at_least_its_ring_across_the_link)
{
    /* The emulated 2 x 4 cluster at 1 Gbit/s: the two leaders' allreduce
     * moves a vector's bytes across the link at 8.3 ns a byte (their
     * alltoall half of them); the 8 ranks' ring sends 7/4 of that through
     * each node's link (64 MiB: ~0.98 s; measured 1.0-1.1 s), where a line
     * through small points said 0.8. */
    const double MiB = 1 << 20;
    gcmpi_prims leaders = {.allreduce = {.a = 1e-4, .b = 8.3e-9},
                           .alltoall = {.a = 1e-4, .b = 4.2e-9}};
    const double floor_b = gcmpi_ring_crossing_floor(&leaders, 8, 2);
    cr_assert_float_eq(floor_b, 8.3e-9 * 1.75, 1e-15);
    /* A slow run of one primitive does not raise it: the cheaper wins. */
    leaders.allreduce.b = 12.5e-9;
    cr_assert_float_eq(gcmpi_ring_crossing_floor(&leaders, 8, 2), 8.4e-9 * 1.75, 1e-15);
    leaders.alltoall.b = 0.0; /* not measured */
    cr_assert_float_eq(gcmpi_ring_crossing_floor(&leaders, 8, 2), 12.5e-9 * 1.75, 1e-15);
    leaders.allreduce.b = 8.3e-9;
    gcmpi_lin flat = {.a = 2e-3, .b = 12e-9};
    const double before = gcmpi_lin_at(flat, 64 * MiB);
    flat.floor_b = floor_b;
    cr_assert_float_eq(gcmpi_lin_at(flat, 64 * MiB), floor_b * 64 * MiB, 1e-9);
    cr_assert_gt(gcmpi_lin_at(flat, 64 * MiB), before);
    /* Small calls keep their own line (latency, not the link, decides). */
    cr_assert_float_eq(gcmpi_lin_at(flat, 16e3), 2e-3 + 12e-9 * 16e3, 1e-12);
    /* One node, a node a rank, or nothing measured between: no floor. */
    cr_assert_eq(gcmpi_ring_crossing_floor(&leaders, 8, 1), 0.0);
    cr_assert_eq(gcmpi_ring_crossing_floor(&leaders, 8, 8), 0.0);
    cr_assert_eq(gcmpi_ring_crossing_floor(&(gcmpi_prims){0}, 8, 2), 0.0);
}

Test(cost_model, a_compressed_call_pays_its_scan_and_passthrough_does_not)
{
    gcmpi_cost_env e = cluster(8, 1, 1.25e9, 0.02, 0);
    const double pass = gcmpi_cost_predict(&e, GCMPI_ALGO_PASS, 0, 64e6);
    const double ag = gcmpi_cost_predict(&e, GCMPI_ALGO_ALLGATHER, 0, 64e6);
    const double rsag = gcmpi_cost_predict(&e, GCMPI_ALGO_RSAG, 0, 64e6);
    e.scan = gcmpi_lin_rate(10e9);
    cr_assert_eq(gcmpi_cost_predict(&e, GCMPI_ALGO_PASS, 0, 64e6), pass);
    cr_assert_float_eq(gcmpi_cost_predict(&e, GCMPI_ALGO_ALLGATHER, 0, 64e6), ag + 64e6 / 10e9,
                       1e-12);
    /* rsag also scans the reduced chunk it re-encodes (1/8 of the vector) */
    cr_assert_float_eq(gcmpi_cost_predict(&e, GCMPI_ALGO_RSAG, 0, 64e6),
                       rsag + 64e6 / 10e9 + 8e6 / 10e9, 1e-12);
}

Test(cost_model, hier_spreads_the_codec_work_over_a_node_when_nodes_are_even)
{
    gcmpi_cost_env e = cluster(8, 4, 1.25e8, 0.02, 0);
    const double leader = gcmpi_cost_predict(&e, GCMPI_ALGO_HIER, GCMPI_ALGO_ALLGATHER, 64e6);
    e.hier_scatter = 1;
    e.node_size = 4;
    e.node_allreduce = gcmpi_prims_alpha_beta(4, 1, 1e-6, 10e9).allreduce;
    const double scatter = gcmpi_cost_predict(&e, GCMPI_ALGO_HIER, GCMPI_ALGO_ALLGATHER, 64e6);
    cr_assert_lt(scatter, leader);
    /* The codec work shrinks by q, the traffic between nodes does not. */
    cr_assert_gt(scatter, gcmpi_lin_at(e.between.allgather, 0.02 * 64e6));
}

/* 2 nodes of 4 at 1 Gbit/s, hier's reduce-scatter style, an int8-sized
 * payload (a quarter of the input). */
static gcmpi_cost_env two_nodes_of_four_int8(void)
{
    gcmpi_cost_env e = cluster(8, 4, 1.25e8, 0.25, 0);
    e.hier_scatter = 1;
    e.node_size = 4;
    e.node_allreduce = gcmpi_prims_alpha_beta(4, 1, 1e-6, 10e9).allreduce;
    return e;
}

/* The columns' allgather between nodes of bytes' payload: the sizes, then
 * a quarter of the vector per node. */
static double column_allgather(const gcmpi_cost_env *e, double bytes)
{
    return gcmpi_lin_at(e->between.allgather, 8) + gcmpi_lin_at(e->between.allgather, 0.25 * bytes);
}

/* hier's pipeline (an allgather between nodes through the window): the
 * reduce-scatter and the codec work of a segment overlap the link's
 * traffic of the one before, so the call takes the window's gather, the
 * slower of the two streams and a segment's worth of the faster. */
Test(cost_model, hier_pipeline_overlaps_the_node_sum_with_the_link)
{
    gcmpi_cost_env e = two_nodes_of_four_int8();
    const double bytes = 64e6;
    const double serial = gcmpi_cost_predict(&e, GCMPI_ALGO_HIER, GCMPI_ALGO_ALLGATHER, bytes);
    e.segment_floats = 256 << 10;
    const double piped = gcmpi_cost_predict(&e, GCMPI_ALGO_HIER, GCMPI_ALGO_ALLGATHER, bytes);
    const int segs = gcmpi_hier_segment_count((size_t)(bytes / 4), 4, e.segment_floats);
    cr_assert_eq(segs, 8);
    const double node = gcmpi_lin_at(e.node_allreduce, bytes);
    const double scatter = gcmpi_window_scatter_share(4) * node;
    /* the compute is what the unpipelined call adds to both */
    const double comm = column_allgather(&e, bytes);
    const double compute = serial - node - comm;
    const double slow = fmax(scatter + compute, comm), fast = fmin(scatter + compute, comm);
    cr_assert_float_eq(piped, node - scatter + slow + fast / segs, 1e-9 * serial);
    cr_assert_lt(piped, serial);
    /* rsag between nodes is not pipelined */
    const double rsag_serial = gcmpi_cost_predict(&e, GCMPI_ALGO_HIER, GCMPI_ALGO_RSAG, bytes);
    e.segment_floats = 0;
    cr_assert_float_eq(gcmpi_cost_predict(&e, GCMPI_ALGO_HIER, GCMPI_ALGO_RSAG, bytes), rsag_serial,
                       1e-12);
}

/* The columns' share of the link (auto's calibration: q columns at once
 * against the leaders' line for the same bytes) scales hier's traffic
 * between nodes, and nothing else: 0 and 1 are the leaders' lines. */
Test(cost_model, hier_traffic_between_nodes_scales_by_the_columns_share)
{
    gcmpi_cost_env e = two_nodes_of_four_int8();
    const double bytes = 64e6;
    const double comm = column_allgather(&e, bytes);
    const double as_lines = gcmpi_cost_predict(&e, GCMPI_ALGO_HIER, GCMPI_ALGO_ALLGATHER, bytes);
    e.column_share = 1.0;
    cr_assert_float_eq(gcmpi_cost_predict(&e, GCMPI_ALGO_HIER, GCMPI_ALGO_ALLGATHER, bytes),
                       as_lines, 1e-12);
    e.column_share = 1.5;
    cr_assert_float_eq(gcmpi_cost_predict(&e, GCMPI_ALGO_HIER, GCMPI_ALGO_ALLGATHER, bytes),
                       as_lines + 0.5 * comm, 1e-9 * as_lines);
    /* pipelined: the traffic (the slower stream here) grows by as much */
    e.segment_floats = 256 << 10;
    e.column_share = 1.0;
    const double piped = gcmpi_cost_predict(&e, GCMPI_ALGO_HIER, GCMPI_ALGO_ALLGATHER, bytes);
    e.column_share = 1.5;
    cr_assert_float_eq(gcmpi_cost_predict(&e, GCMPI_ALGO_HIER, GCMPI_ALGO_ALLGATHER, bytes),
                       piped + 0.5 * comm, 1e-9 * piped);
    /* the flat algorithms and the leader style do not use it */
    const double flat = gcmpi_cost_predict(&e, GCMPI_ALGO_ALLGATHER, GCMPI_ALGO_ALLGATHER, bytes);
    e.hier_scatter = 0;
    const double leader = gcmpi_cost_predict(&e, GCMPI_ALGO_HIER, GCMPI_ALGO_ALLGATHER, bytes);
    e.column_share = 0;
    cr_assert_float_eq(gcmpi_cost_predict(&e, GCMPI_ALGO_ALLGATHER, GCMPI_ALGO_ALLGATHER, bytes),
                       flat, 1e-12);
    cr_assert_float_eq(gcmpi_cost_predict(&e, GCMPI_ALGO_HIER, GCMPI_ALGO_ALLGATHER, bytes),
                       leader, 1e-12);
}

Test(cost_model, hier_segments_are_at_most_eight_and_never_empty)
{
    cr_assert_eq(gcmpi_hier_segment_count(1 << 24, 4, 0), 1);          /* no window */
    cr_assert_eq(gcmpi_hier_segment_count(1 << 24, 4, 1 << 18), 8);    /* 4 Mi floats a chunk */
    cr_assert_eq(gcmpi_hier_segment_count(1 << 21, 4, 1 << 18), 2);    /* 512 Ki a chunk */
    cr_assert_eq(gcmpi_hier_segment_count((1 << 20) - 1, 4, 1 << 18), 1);
    cr_assert_eq(gcmpi_hier_segment_count(10, 4, 1), 2);               /* chunks of 3, 3, 2, 2 */
    cr_assert_eq(gcmpi_hier_segment_count(3, 4, 1), 1);                /* an empty chunk */
}
