/* stats.c — adding up what compressed calls measured, and the table of
 * finished communicators. */
#include "stats.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static gcmpi_stats_row *table;
static size_t table_len, table_cap;
static atomic_uint_fast64_t other_calls;
static atomic_uint_fast64_t nonblocking_calls, nonblocking_bytes;

void gcmpi_stats_add_call(gcmpi_stats *s, const gcmpi_call_stats *c, int failed)
{
    if (failed) {
        s->calls_failed++;
        return;
    }
    s->calls_compressed++;
    s->calls_nonfinite += c->nonfinite_in != 0;
    s->calls_node_payloads += c->node_payloads != 0;
    s->bytes_offered += c->bytes_offered;
    s->bytes_sent += c->bytes_sent;
    s->encode_s += c->encode_s;
    s->decode_s += c->decode_s;
    s->comm_s += c->comm_s;
    s->eg_code_bits += c->eg_code_bits;
    s->eg_fl_bits += c->eg_fl_bits;
    s->eg_elements += c->eg_elements;
}

void gcmpi_stats_add_passed(gcmpi_stats *s, gcmpi_skip why)
{
    s->calls_passed++;
    if ((unsigned)why < GCMPI_SKIP_KINDS) s->passed_by[why]++;
}

void gcmpi_stats_add_verify(gcmpi_stats *s, double rel_err)
{
    s->verify_calls++;
    s->verify_err_sum += rel_err;
    if (rel_err > s->verify_err_max) s->verify_err_max = rel_err;
}

void gcmpi_stats_merge(gcmpi_stats *into, const gcmpi_stats *from)
{
    into->calls_compressed += from->calls_compressed;
    into->calls_passed += from->calls_passed;
    for (int k = 0; k < GCMPI_SKIP_KINDS; k++) into->passed_by[k] += from->passed_by[k];
    into->calls_failed += from->calls_failed;
    into->calls_nonfinite += from->calls_nonfinite;
    into->calls_node_payloads += from->calls_node_payloads;
    into->bytes_offered += from->bytes_offered;
    into->bytes_sent += from->bytes_sent;
    into->encode_s += from->encode_s;
    into->decode_s += from->decode_s;
    into->comm_s += from->comm_s;
    into->ef.created += from->ef.created;
    into->ef.reused += from->ef.reused;
    into->ef.evicted += from->ef.evicted;
    into->ef.missed += from->ef.missed;
    into->verify_calls += from->verify_calls;
    into->verify_err_sum += from->verify_err_sum;
    if (from->verify_err_max > into->verify_err_max) into->verify_err_max = from->verify_err_max;
    into->eg_code_bits += from->eg_code_bits;
    into->eg_fl_bits += from->eg_fl_bits;
    into->eg_elements += from->eg_elements;
}

int gcmpi_stats_empty(const gcmpi_stats *s)
{
    return s->calls_compressed == 0 && s->calls_passed == 0 && s->calls_failed == 0;
}

int gcmpi_stats_retire(const char *comm, int comm_size, gcmpi_kind kind, const char *codec,
                       const gcmpi_stats *s)
{
    if (gcmpi_stats_empty(s)) return 0;
    int rc = 0;
    pthread_mutex_lock(&table_lock);
    gcmpi_stats_row *row = NULL;
    for (size_t i = 0; i < table_len && !row; i++) {
        gcmpi_stats_row *r = &table[i];
        if (r->comm_size == comm_size && r->kind == (int32_t)kind &&
            strncmp(r->comm, comm, sizeof r->comm - 1) == 0 &&
            strncmp(r->codec, codec, sizeof r->codec - 1) == 0)
            row = r;
    }
    if (!row) {
        if (table_len == table_cap) {
            size_t cap = table_cap ? table_cap * 2 : 8;
            gcmpi_stats_row *t = realloc(table, cap * sizeof *t);
            if (!t) {
                rc = -1;
                goto out;
            }
            table = t;
            table_cap = cap;
        }
        row = &table[table_len++];
        memset(row, 0, sizeof *row);
        snprintf(row->comm, sizeof row->comm, "%s", comm);
        snprintf(row->codec, sizeof row->codec, "%s", codec);
        row->comm_size = comm_size;
        row->kind = (int32_t)kind;
        row->ranks = 1;
    }
    gcmpi_stats_merge(&row->s, s);
out:
    pthread_mutex_unlock(&table_lock);
    return rc;
}

const gcmpi_stats_row *gcmpi_stats_table(size_t *n_rows)
{
    *n_rows = table_len;
    return table;
}

void gcmpi_stats_clear(void)
{
    pthread_mutex_lock(&table_lock);
    free(table);
    table = NULL;
    table_len = table_cap = 0;
    pthread_mutex_unlock(&table_lock);
    atomic_store_explicit(&other_calls, 0, memory_order_relaxed);
    atomic_store_explicit(&nonblocking_calls, 0, memory_order_relaxed);
    atomic_store_explicit(&nonblocking_bytes, 0, memory_order_relaxed);
}

void gcmpi_stats_count_other(void)
{
    atomic_fetch_add_explicit(&other_calls, 1, memory_order_relaxed);
}

uint64_t gcmpi_stats_other(void)
{
    return atomic_load_explicit(&other_calls, memory_order_relaxed);
}

void gcmpi_stats_count_nonblocking(uint64_t bytes)
{
    atomic_fetch_add_explicit(&nonblocking_calls, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&nonblocking_bytes, bytes, memory_order_relaxed);
}

void gcmpi_stats_nonblocking(uint64_t *calls, uint64_t *bytes)
{
    *calls = atomic_load_explicit(&nonblocking_calls, memory_order_relaxed);
    *bytes = atomic_load_explicit(&nonblocking_bytes, memory_order_relaxed);
}

const char *gcmpi_kind_name(gcmpi_kind kind)
{
    return kind == GCMPI_KIND_ALLGATHER ? "allgather" : "allreduce";
}
