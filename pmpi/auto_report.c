/* auto_report.c — the process list of auto's choices (auto_report.h). */
#include "auto_report.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h" /* GCMPI_LABEL_LEN */

typedef struct retired {
    char comm[GCMPI_LABEL_LEN];
    int p, n_nodes;
    int n;
    gcmpi_auto_choice choices[GCMPI_AUTO_MAX_CHOICES];
    struct retired *next;
} retired;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static retired *head, **tail = &head;

void gcmpi_auto_report_retire(const char *comm, const gcmpi_auto_model *m)
{
    if (!m || m->n_choices == 0) return;
    retired *r = calloc(1, sizeof *r);
    if (!r) return; /* out of memory: the report lacks these choices */
    snprintf(r->comm, sizeof r->comm, "%s", comm);
    r->p = m->env.p;
    r->n_nodes = m->env.n_nodes;
    r->n = m->n_choices;
    memcpy(r->choices, m->choices, (size_t)m->n_choices * sizeof *m->choices);
    pthread_mutex_lock(&lock);
    *tail = r;
    tail = &r->next;
    pthread_mutex_unlock(&lock);
}

static double mean_ms(const gcmpi_auto_choice *c)
{
    return c->calls ? 1e3 * c->measured_s / (double)c->calls : 0.0;
}

void gcmpi_auto_report_print(FILE *f)
{
    for (const retired *r = head; r; r = r->next)
        for (int i = 0; i < r->n; i++) {
            const gcmpi_auto_choice *c = &r->choices[i];
            fprintf(f,
                    "libgcmpi: auto %s (%d ranks, %d nodes): %zu floats -> %s, predicted "
                    "%.3f ms, measured %.3f ms over %llu calls\n",
                    r->comm, r->p, r->n_nodes, c->count, gcmpi_algo_name(c->algo),
                    1e3 * c->predicted_s, mean_ms(c), (unsigned long long)c->calls);
        }
}

void gcmpi_auto_report_json(FILE *f)
{
    int first = 1;
    for (const retired *r = head; r; r = r->next)
        for (int i = 0; i < r->n; i++) {
            const gcmpi_auto_choice *c = &r->choices[i];
            fprintf(f,
                    "%s\n    {\"comm\": \"%s\", \"collective\": \"allreduce\", \"ranks\": %d, "
                    "\"nodes\": %d, \"count\": %zu, \"algo\": \"%s\", \"predicted_s\": %.6g, "
                    "\"measured_s\": %.6g, \"calls\": %llu}",
                    first ? "" : ",", r->comm, r->p, r->n_nodes, c->count,
                    gcmpi_algo_name(c->algo), c->predicted_s,
                    c->calls ? c->measured_s / (double)c->calls : 0.0,
                    (unsigned long long)c->calls);
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
