/* timeline.c — fixed-size per-communicator call history, merged pairwise
 * as it fills (timeline.h), and the process list it retires to. */
#include "timeline.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const gcmpi_tl_field_names[GCMPI_TL_FIELDS] = {
    "ratio", "rank", "bits", "lambda", "entropy", "variance",
    "eg_bits", "fl_bits", "sent_bits", "comm_ms",
};

static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static gcmpi_timeline *list_head, *list_tail;

gcmpi_timeline *gcmpi_timeline_create(const char *comm, const char *codec)
{
    gcmpi_timeline *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    snprintf(t->comm, sizeof t->comm, "%s", comm);
    snprintf(t->codec, sizeof t->codec, "%s", codec);
    t->stride = 1;
    return t;
}

static void point_add(gcmpi_tl_point *p, const double v[GCMPI_TL_FIELDS])
{
    p->calls++;
    for (int f = 0; f < GCMPI_TL_FIELDS; f++)
        if (!isnan(v[f])) {
            p->sum[f] += v[f];
            p->n[f]++;
        }
}

/* Halves the points in use: point i becomes points 2i and 2i+1. */
static void merge_pairs(gcmpi_timeline *t)
{
    size_t out = 0;
    for (size_t i = 0; i < t->len; i += 2, out++) {
        gcmpi_tl_point p = t->points[i];
        if (i + 1 < t->len) {
            const gcmpi_tl_point *q = &t->points[i + 1];
            p.calls += q->calls;
            for (int f = 0; f < GCMPI_TL_FIELDS; f++) {
                p.sum[f] += q->sum[f];
                p.n[f] += q->n[f];
            }
        }
        t->points[out] = p;
    }
    memset(&t->points[out], 0, (t->len - out) * sizeof t->points[0]);
    t->len = out;
    t->stride *= 2;
}

void gcmpi_timeline_add(gcmpi_timeline *t, uint64_t call, const double v[GCMPI_TL_FIELDS])
{
    if (t->len == 0) memcpy(t->first, v, sizeof t->first);
    memcpy(t->last, v, sizeof t->last);
    if (t->len > 0 && t->points[t->len - 1].calls < t->stride) {
        point_add(&t->points[t->len - 1], v);
        return;
    }
    if (t->len == GCMPI_TL_POINTS) merge_pairs(t);
    /* After a merge the last point holds a full (doubled) stride. */
    gcmpi_tl_point *p = &t->points[t->len++];
    memset(p, 0, sizeof *p);
    p->first_call = call;
    point_add(p, v);
}

double gcmpi_tl_point_mean(const gcmpi_tl_point *p, gcmpi_tl_field f)
{
    return p->n[f] ? p->sum[f] / p->n[f] : NAN;
}

void gcmpi_timeline_retire(gcmpi_timeline *t)
{
    if (!t) return;
    if (t->len == 0) {
        free(t);
        return;
    }
    pthread_mutex_lock(&list_lock);
    t->next = NULL;
    if (list_tail) list_tail->next = t; else list_head = t;
    list_tail = t;
    pthread_mutex_unlock(&list_lock);
}

const gcmpi_timeline *gcmpi_timeline_list(void)
{
    return list_head;
}

void gcmpi_timeline_clear(void)
{
    pthread_mutex_lock(&list_lock);
    gcmpi_timeline *t = list_head;
    list_head = list_tail = NULL;
    pthread_mutex_unlock(&list_lock);
    while (t) {
        gcmpi_timeline *next = t->next;
        free(t);
        t = next;
    }
}
