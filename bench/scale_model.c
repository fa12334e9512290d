/* scale_model.c — gcmpi-scale-model: what each allreduce algorithm would
 * take per call on a cluster, predicted by the library's cost model
 * (pmpi/cost_model.h) from link and codec figures, for p = 2 .. 1024 ranks
 * and 1 .. 8 ranks per node. No MPI: it runs anywhere.
 *
 *   gcmpi-scale-model [--gbits 1,10,100] [--bytes 100M,1G] [--q 1,2,4,8]
 *       [--p-max 1024] [--alpha-inter S] [--alpha-intra S] [--gbytes-intra G]
 *       [--encode-gbs G] [--decode-gbs G] [--sets-gbs G] [--payload-ratio R]
 *       [--density D] [--bound-ratio R] [--native-ratio R] [--segment B]
 *       [--column-share S]
 *       [--figures FILE]
 *
 * The primitives are the alpha-beta forms of cost_model.h: between nodes
 * latency --alpha-inter and the given rate; inside a node --alpha-intra
 * and --gbytes-intra. With one rank per node every rank is its own node;
 * with q > 1 the flat algorithms cross the slow link (placed node by node,
 * a ring crosses it once per node; an alltoall pushes q ranks' traffic
 * through a node's link).
 *
 * Codec figures: encode and decode rates (GB/s of input), sparse_rd's own
 * passes over the vector (GB/s of input; 0: counted as passes at 5 GB/s),
 * payload bytes per input byte, kept fraction (sparse codecs; 0 for dense ones), the
 * payload's bound per input byte (gc_bound: whether hier's node gathers the
 * payloads, cost_model.h's gcmpi_hier_kept_fits) and the native path's bytes
 * per input byte (0: none). hier as the library runs
 * it: pipelined in segments of --segment bytes (GCMPI_HIER_SEGMENT's
 * default, 1 MiB; 0: unpipelined), its q columns moving bytes between
 * nodes --column-share times as slowly as the leaders' lines (auto's
 * calibration measures it; 1: the link's rate). --figures reads them, one
 * "name value" pair per line, from a file (e.g. made from a measurement
 * run); options after it override.
 *
 * Output: CSV on stdout, one row per (gbits, bytes, q, p, algo) with the
 * predicted seconds, and a row with algo "best" naming the fastest. */
#include "cost_model.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LIST 16

typedef struct options {
    double gbits[MAX_LIST];
    int n_gbits;
    double bytes[MAX_LIST];
    int n_bytes;
    int q[MAX_LIST];
    int n_q;
    int p_max;
    double alpha_inter, alpha_intra, gbytes_intra;
    double encode_gbs, decode_gbs, sets_gbs, payload_ratio, bound_ratio, density, native_ratio;
    double segment, column_share;
} options;

static double parse_bytes(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (*end == 'K' || *end == 'k') v *= 1e3, end++;
    else if (*end == 'M') v *= 1e6, end++;
    else if (*end == 'G') v *= 1e9, end++;
    return *end || !(v > 0) ? -1 : v;
}

static int parse_list(const char *s, double *out, int *n, int bytes)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", s);
    *n = 0;
    for (char *t = strtok(buf, ","); t && *n < MAX_LIST; t = strtok(NULL, ",")) {
        double v = bytes ? parse_bytes(t) : strtod(t, NULL);
        if (!(v > 0)) return 0;
        out[(*n)++] = v;
    }
    return *n > 0;
}

static int set_figure(options *o, const char *name, double v)
{
    static const struct { const char *name; size_t off; } fig[] = {
        {"alpha-inter", offsetof(options, alpha_inter)},
        {"alpha-intra", offsetof(options, alpha_intra)},
        {"gbytes-intra", offsetof(options, gbytes_intra)},
        {"encode-gbs", offsetof(options, encode_gbs)},
        {"decode-gbs", offsetof(options, decode_gbs)},
        {"sets-gbs", offsetof(options, sets_gbs)},
        {"payload-ratio", offsetof(options, payload_ratio)},
        {"density", offsetof(options, density)},
        {"bound-ratio", offsetof(options, bound_ratio)},
        {"native-ratio", offsetof(options, native_ratio)},
        {"segment", offsetof(options, segment)},
        {"column-share", offsetof(options, column_share)},
    };
    for (size_t i = 0; i < sizeof fig / sizeof fig[0]; i++)
        if (strcmp(name, fig[i].name) == 0) {
            if (!(v >= 0)) return 0;
            *(double *)((char *)o + fig[i].off) = v;
            return 1;
        }
    return 0;
}

static int read_figures(options *o, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "gcmpi-scale-model: cannot read %s\n", path);
        return 0;
    }
    char name[64];
    double v;
    int ok = 1;
    while (ok && fscanf(f, "%63s %lf", name, &v) == 2)
        if (!set_figure(o, name, v)) {
            fprintf(stderr, "gcmpi-scale-model: %s: unknown figure or bad value '%s'\n", path, name);
            ok = 0;
        }
    fclose(f);
    return ok;
}

static void usage(void)
{
    puts("usage: gcmpi-scale-model [--gbits LIST] [--bytes LIST] [--q LIST] [--p-max P]\n"
         "    [--alpha-inter S] [--alpha-intra S] [--gbytes-intra G] [--encode-gbs G]\n"
         "    [--decode-gbs G] [--sets-gbs G] [--payload-ratio R] [--density D]\n"
         "    [--bound-ratio R] [--native-ratio R] [--segment B] [--column-share S]\n"
         "    [--figures FILE]\n"
         "defaults: 1,10,100 Gbit/s; 100M,1G bytes; q 1,2,4,8; p up to 1024; 10 us between\n"
         "nodes, 1 us and 10 GB/s inside; topk 0.01 as gcmpi-codec-bench measured it\n"
         "here: payload 0.013, density 0.01, bound 0.041, encode 1 GB/s, decode 13 GB/s,\n"
         "no native path;\n"
         "sparse_rd's own passes not measured (0: four passes and the result's at 5 GB/s);\n"
         "hier pipelined in segments of 1048576 bytes (GCMPI_HIER_SEGMENT; 0: not), its\n"
         "columns moving bytes between nodes as fast as the leaders (column share 1)");
}

static int parse(options *o, int argc, char **argv)
{
    *o = (options){.p_max = 1024, .alpha_inter = 10e-6, .alpha_intra = 1e-6,
                   .gbytes_intra = 10, .encode_gbs = 1, .decode_gbs = 13,
                   .payload_ratio = 0.013, .bound_ratio = 0.041, .density = 0.01, .native_ratio = 0,
                   .segment = 1 << 20, .column_share = 1};
    parse_list("1,10,100", o->gbits, &o->n_gbits, 0);
    parse_list("100M,1G", o->bytes, &o->n_bytes, 1);
    o->n_q = 4;
    for (int i = 0; i < 4; i++) o->q[i] = 1 << i;
    for (int i = 1; i < argc; i += 2) { /* every option takes a value */
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0) {
            usage();
            exit(0);
        }
        if (!v || strncmp(a, "--", 2) != 0) {
            fprintf(stderr, "gcmpi-scale-model: %s needs a value (--help)\n", a);
            return 0;
        }
        int ok = 1;
        if (strcmp(a, "--gbits") == 0) ok = parse_list(v, o->gbits, &o->n_gbits, 0);
        else if (strcmp(a, "--bytes") == 0) ok = parse_list(v, o->bytes, &o->n_bytes, 1);
        else if (strcmp(a, "--q") == 0) {
            double q[MAX_LIST];
            ok = parse_list(v, q, &o->n_q, 0);
            for (int k = 0; k < o->n_q && ok; k++) ok = (o->q[k] = (int)q[k]) >= 1 && o->q[k] <= 1024;
        } else if (strcmp(a, "--p-max") == 0) ok = (o->p_max = atoi(v)) >= 2;
        else if (strcmp(a, "--figures") == 0) ok = read_figures(o, v);
        else ok = set_figure(o, a + 2, strtod(v, NULL));
        if (!ok) {
            fprintf(stderr, "gcmpi-scale-model: bad %s '%s' (--help)\n", a, v);
            return 0;
        }
    }
    return 1;
}

int main(int argc, char **argv)
{
    options o;
    if (!parse(&o, argc, argv)) return 2;
    static const gcmpi_algo algos[] = {GCMPI_ALGO_PASS, GCMPI_ALGO_ALLGATHER, GCMPI_ALGO_RSAG,
                                       GCMPI_ALGO_NATIVE, GCMPI_ALGO_HIER, GCMPI_ALGO_SPARSE_RD};
    const int n_algos = (int)(sizeof algos / sizeof algos[0]);
    printf("gbits,bytes,q,p,nodes,algo,seconds\n");
    for (int g = 0; g < o.n_gbits; g++)
        for (int b = 0; b < o.n_bytes; b++)
            for (int k = 0; k < o.n_q; k++) {
                const int q = o.q[k];
                const double beta = o.gbits[g] * 1e9 / 8;
                for (int p = q > 1 ? 2 * q : 2; p <= o.p_max; p *= 2) {
                    const int nodes = (p + q - 1) / q;
                    gcmpi_cost_env e = {
                        .p = p,
                        .n_nodes = nodes,
                        .flat = gcmpi_prims_alpha_beta(p, q, o.alpha_inter, beta),
                        .between = gcmpi_prims_alpha_beta(nodes, 1, o.alpha_inter, beta),
                        .reduce_bcast = gcmpi_reduce_bcast_alpha_beta(q, o.alpha_intra,
                                                                      o.gbytes_intra * 1e9),
                        .node_allreduce = gcmpi_prims_alpha_beta(q, 1, o.alpha_intra,
                                                                 o.gbytes_intra * 1e9).allreduce,
                        .node_size = q,
                        .hier_scatter = 1,
                        .segment_floats = (size_t)(o.segment / sizeof(float)),
                        .column_share = o.column_share,
                        .encode = gcmpi_lin_rate(o.encode_gbs * 1e9),
                        .decode = gcmpi_lin_rate(o.decode_gbs * 1e9),
                        .sets = gcmpi_lin_rate(o.sets_gbs * 1e9),
                        .payload_ratio = o.payload_ratio,
                        .native_ratio = o.native_ratio,
                        .density = o.density,
                        /* hier's node gather by payloads */
                        .kept_bound_ratio = o.density > 0 ? o.bound_ratio : 0.0,
                        .kept_part_bytes = GCMPI_NODE_SHM_SHARE_MAX_BYTES,
                    };
                    /* hier runs the library's fixed rule between nodes
                     * (pmpi/coll_choose.c): sparse codecs allgather up to 8
                     * nodes, dense ones up to 2, rsag above. */
                    const int sparse = o.density > 0;
                    const gcmpi_algo inner = nodes <= (sparse ? 8 : 2) ? GCMPI_ALGO_ALLGATHER
                                                                       : GCMPI_ALGO_RSAG;
                    double best_t = INFINITY;
                    gcmpi_algo best = GCMPI_ALGO_PASS;
                    for (int a = 0; a < n_algos; a++) {
                        const double t = gcmpi_cost_predict(&e, algos[a], inner, o.bytes[b]);
                        if (!isfinite(t)) continue;
                        printf("%g,%.0f,%d,%d,%d,%s,%.6g\n", o.gbits[g], o.bytes[b], q, p, nodes,
                               gcmpi_algo_name(algos[a]), t);
                        if (t < best_t) best_t = t, best = algos[a];
                    }
                    printf("%g,%.0f,%d,%d,%d,best:%s,%.6g\n", o.gbits[g], o.bytes[b], q, p, nodes,
                           gcmpi_algo_name(best), best_t);
                }
            }
    return 0;
}
