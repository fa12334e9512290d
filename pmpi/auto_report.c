/* auto_report.c — the process list of auto's choices (auto_report.h). */
#include "auto_report.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "report.h" /* gcmpi_json_string */
#include "stats.h"  /* GCMPI_LABEL_LEN */

typedef struct retired {
    char comm[GCMPI_LABEL_LEN];
    int p, n_nodes;
    gcmpi_cost_env env;
    double calibration_s;
    gcmpi_auto_source source;
    double check_cached_s, check_fresh_s;
    int cache_saved;
    char cache_file[GCMPI_AUTO_CACHE_FILE_LEN];
    int has_model;    /* 0: MPI_Allgather rows alone (no calibration) */
    int n, n_gather;
    int gather_saved; /* MPI_Allgather's rows: as cache_saved, their file's */
    char gather_file[GCMPI_AUTO_CACHE_FILE_LEN];
    gcmpi_auto_choice choices[GCMPI_AUTO_MAX_CHOICES];
    gcmpi_auto_choice gather[GCMPI_AUTO_MAX_CHOICES]; /* MPI_Allgather's */
    struct retired *next;
} retired;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static retired *head, **tail = &head;

void gcmpi_auto_report_retire(const char *comm, const gcmpi_coll_cache *cache)
{
    const gcmpi_auto_model *m = cache->model;
    const gcmpi_gather_choices *g = cache->gather;
    const int n = m ? m->n_choices : 0, n_gather = g ? g->n : 0;
    if (n == 0 && n_gather == 0) return;
    retired *r = calloc(1, sizeof *r);
    if (!r) return; /* out of memory: the report lacks these choices */
    snprintf(r->comm, sizeof r->comm, "%s", comm);
    if (n) {
        r->has_model = 1;
        r->p = m->env.p;
        r->n_nodes = m->env.n_nodes;
        r->env = m->env;
        r->calibration_s = m->calibration_s;
        r->source = m->source;
        r->check_cached_s = m->check_cached_s;
        r->check_fresh_s = m->check_fresh_s;
        r->cache_saved = m->cache_saved;
        memcpy(r->cache_file, m->cache_file, sizeof r->cache_file);
        r->n = n;
        memcpy(r->choices, m->choices, (size_t)n * sizeof *m->choices);
    } else {
        r->p = g->p;
        r->n_nodes = g->n_nodes;
    }
    r->n_gather = n_gather;
    if (n_gather) {
        memcpy(r->gather, g->rows, (size_t)n_gather * sizeof *g->rows);
        r->gather_saved = g->cache_saved;
        memcpy(r->gather_file, g->cache_file, sizeof r->gather_file);
    }
    pthread_mutex_lock(&lock);
    *tail = r;
    tail = &r->next;
    pthread_mutex_unlock(&lock);
}

/* Candidates whose trial ran to its end in this job (none for a size
 * settled from the cache or by the model alone). */
static int tried(const gcmpi_auto_choice *c)
{
    return c->settled && !c->from_cache && c->n_trial > 1 ? c->n_trial : 0;
}

static double mean_ms(const gcmpi_auto_choice *c)
{
    return c->calls ? 1e3 * c->measured_s / (double)c->calls : 0.0;
}

/* Where a model came from: the JSON's word and the stderr report's. */
static const struct {
    const char *name, *words;
} SOURCES[] = {
    [GCMPI_AUTO_MEASURED] = {"measured", "measured"},
    [GCMPI_AUTO_CACHED] = {"cached", "cached"},
    [GCMPI_AUTO_REMEASURED] = {"remeasured",
                               "measured again, the cached figures failing their check"},
};

/* An MPI_Allgather way's name in the report's words. */
static const char *gather_way(gcmpi_algo a)
{
    return a == GCMPI_ALGO_HIER ? "node by node" : a == GCMPI_ALGO_PASS ? "passthrough" : "flat";
}

/* The end of a row's line: its trial's medians, " (median calls: a 1 ms,
 * ...)", the candidates named by name. */
static void print_trial(FILE *f, const gcmpi_auto_choice *c, const char *(*name)(gcmpi_algo))
{
    for (int t = 0; t < tried(c); t++)
        fprintf(f, "%s %s %.3f ms%s", t ? "," : " (median calls:", name(c->trial[t]),
                1e3 * c->trial_median_s[t], c->trial_dropped[t] ? " (left out after 2)" : "");
    fputs(tried(c) ? ")\n" : "\n", f);
}

void gcmpi_auto_report_print(FILE *f)
{
    for (const retired *r = head; r; r = r->next) {
        for (int i = 0; i < r->n_gather; i++) {
            const gcmpi_auto_choice *c = &r->gather[i];
            fprintf(f,
                    "libgcmpi: auto %s (%d ranks, %d nodes): MPI_Allgather of %zu floats a rank "
                    "-> %s, measured %.3f ms over %llu calls%s",
                    r->comm, r->p, r->n_nodes, c->count, gather_way(c->algo), mean_ms(c),
                    (unsigned long long)c->calls, c->device ? ", on device buffers" : "");
            /* A cached way: its check call, and whether it held. */
            if (c->checked_s > 0)
                fprintf(f, "%s (its check: %.3f ms cached, %.3f ms now)",
                        c->from_cache ? ", settled from the cache"
                                      : ", the cache's way missed its check",
                        1e3 * c->cached_s, 1e3 * c->checked_s);
            const char *how = !r->gather_file[0]   ? NULL
                              : c->from_cache       ? ", from"
                              : r->gather_saved > 0 ? ", saved to"
                              : r->gather_saved < 0 ? ", could not be saved to"
                                                    : NULL;
            if (how) fprintf(f, "%s %s", how, r->gather_file);
            print_trial(f, c, gather_way);
        }
        if (!r->has_model) continue;
        fprintf(f, "libgcmpi: auto's calibration on %s (%d ranks, %d nodes): %.3f s, %s", r->comm,
                r->p, r->n_nodes, r->calibration_s, SOURCES[r->source].words);
        if (r->source != GCMPI_AUTO_MEASURED)
            fprintf(f, " (its check: %.3f ms cached, %.3f ms now)", 1e3 * r->check_cached_s,
                    1e3 * r->check_fresh_s);
        if (r->cache_file[0])
            fprintf(f, "%s %s", r->source == GCMPI_AUTO_CACHED ? ", from" :
                                r->cache_saved > 0             ? ", saved to" :
                                                                 ", could not be saved to",
                    r->cache_file);
        fputc('\n', f);
        for (int i = 0; i < r->n; i++) {
            const gcmpi_auto_choice *c = &r->choices[i];
            fprintf(f, "libgcmpi: auto %s (%d ranks, %d nodes): %zu floats", r->comm, r->p,
                    r->n_nodes, c->count);
            if (c->band_calls)
                fprintf(f, " (with %llu calls of %zu-%zu)", (unsigned long long)c->band_calls,
                        c->band_min, c->band_max);
            fprintf(f,
                    " -> %s (model: %s, predicted %.3f ms), measured %.3f ms over %llu calls; "
                    "%d trials",
                    gcmpi_algo_name(c->algo), gcmpi_algo_name(c->model), 1e3 * c->predicted_s,
                    mean_ms(c), (unsigned long long)c->calls, 1 + c->retrials);
            if (c->drift_retrials)
                fprintf(f, " (%d after the settled calls fell behind their trial)",
                        c->drift_retrials);
            fprintf(f, "%s%s", c->from_cache ? ", the last settled from the cache" : "",
                    c->device ? ", on device buffers" : "");
            print_trial(f, c, gcmpi_algo_name);
        }
    }
}

void gcmpi_auto_report_json(FILE *f)
{
    int first = 1;
    for (const retired *r = head; r; r = r->next)
        for (int i = 0; i < r->n + r->n_gather; i++) {
            const int gather = i >= r->n;
            const gcmpi_auto_choice *c = gather ? &r->gather[i - r->n] : &r->choices[i];
            fprintf(f,
                    "%s\n    {\"comm\": \"%s\", \"collective\": \"%s\", \"ranks\": %d, "
                    "\"nodes\": %d, \"count\": %zu, \"algo\": \"%s\", \"model\": \"%s\", "
                    "\"predicted_s\": %.6g, \"measured_s\": %.6g, \"calls\": %llu, "
                    "\"trials\": %d, \"drift_trials\": %d, \"from_cache\": %s, "
                    "\"device\": %s, \"band\": {\"calls\": %llu, \"min\": %zu, \"max\": %zu}, "
                    "\"trial\": [",
                    first ? "" : ",", r->comm, gather ? "allgather" : "allreduce", r->p,
                    r->n_nodes, c->count,
                    gcmpi_algo_name(c->algo), gcmpi_algo_name(c->model), c->predicted_s,
                    c->calls ? c->measured_s / (double)c->calls : 0.0,
                    (unsigned long long)c->calls, 1 + c->retrials, c->drift_retrials,
                    c->from_cache ? "true" : "false", c->device ? "true" : "false",
                    (unsigned long long)c->band_calls, c->band_calls ? c->band_min : c->count,
                    c->band_calls ? c->band_max : c->count);
            for (int t = 0; t < tried(c); t++)
                fprintf(f, "%s{\"algo\": \"%s\", \"median_s\": %.6g, \"calls\": %d}",
                        t ? ", " : "", gcmpi_algo_name(c->trial[t]), c->trial_median_s[t],
                        c->trial_calls[t]);
            fputs("]}", f);
            first = 0;
        }
    if (!first) fprintf(f, "\n  ");
}

/* Link figures read back off a fitted line of the alpha-beta forms
 * (cost_model.c): allgather over m ranks a = log2(m) alpha, b = (m-1)/beta;
 * allreduce over q ranks a = 2 log2(q) alpha, b = 2 (q-1) / (q beta). */
static void link_of_allgather(gcmpi_lin l, int m, double *alpha, double *beta)
{
    const double lg = m > 1 ? ceil(log2((double)m)) : 1.0;
    const double b = gcmpi_lin_slope(l); /* large messages' */
    *alpha = l.a / lg;
    *beta = b > 0 && m > 1 ? (m - 1) / b : 0.0;
}

static void link_of_allreduce(gcmpi_lin l, int q, double *alpha, double *beta)
{
    const double lg = q > 1 ? ceil(log2((double)q)) : 1.0;
    const double b = gcmpi_lin_slope(l);
    *alpha = l.a / (2 * lg);
    *beta = b > 0 && q > 1 ? 2.0 * (q - 1) / (q * b) : 0.0;
}

void gcmpi_auto_report_models_json(FILE *f)
{
    int first = 1;
    for (const retired *r = head; r; r = r->next) {
        if (!r->has_model) continue;
        const gcmpi_cost_env *e = &r->env;
        double ai, bi, aq = 0, bq = 0;
        if (e->n_nodes > 1) link_of_allgather(e->between.allgather, e->n_nodes, &ai, &bi);
        else link_of_allgather(e->flat.allgather, e->p, &ai, &bi);
        if (e->node_size > 1) link_of_allreduce(e->node_allreduce, e->node_size, &aq, &bq);
        fprintf(f,
                "%s\n    {\"comm\": \"%s\", \"ranks\": %d, \"nodes\": %d, \"node_size\": %d, "
                "\"alpha-inter\": %.6g, \"gbits\": %.6g, \"alpha-intra\": %.6g, "
                "\"gbytes-intra\": %.6g, \"encode-gbs\": %.6g, \"decode-gbs\": %.6g, "
                "\"sets-gbs\": %.6g, "
                "\"payload-ratio\": %.6g, \"density\": %.6g, \"native-ratio\": %.6g, "
                "\"column-share\": %.6g, "
                "\"calibration_s\": %.6g, \"calibration\": \"%s\", \"cache_file\": ",
                first ? "" : ",", r->comm, e->p, e->n_nodes, e->node_size, ai, 8e-9 * bi, aq,
                1e-9 * bq, 1e-9 * gcmpi_lin_rate_of(e->encode),
                1e-9 * gcmpi_lin_rate_of(e->decode), 1e-9 * gcmpi_lin_rate_of(e->sets),
                e->payload_ratio,
                e->density, e->native_ratio, e->column_share > 0 ? e->column_share : 1.0,
                r->calibration_s, SOURCES[r->source].name);
        if (r->cache_file[0]) gcmpi_json_string(f, r->cache_file);
        else fputs("null", f);
        fprintf(f, ", \"cache_saved\": %s}", r->cache_saved > 0 ? "true" : "false");
        first = 0;
    }
    if (!first) fprintf(f, "\n  ");
}

void gcmpi_auto_report_clear(void)
{
    pthread_mutex_lock(&lock);
    while (head) {
        retired *r = head;
        head = r->next;
        free(r);
    }
    tail = &head;
    pthread_mutex_unlock(&lock);
}
