/* auto_cache.c — GCMPI_AUTO_CACHE (auto_cache.h).
 *
 * The file is text, one figure a line in C's hexadecimal floating point
 * (exact both ways), so a user can read what auto measured:
 *
 *   # libgcmpi: GCMPI_ALGO=auto calibration; delete to measure again
 *   key libgcmpi=0.1.0 calibration=1 figures=56 mpi=Open MPI v4.1.4 ...
 *   seconds 0.94
 *   figures 43
 *   0x1.0c6f7a0b5ed8dp-12
 *   ...
 *   settled 1
 *   535818 0x1.47ae147ae147bp-7 passthrough 0x1.0624dd2f1a9fcp-10
 *   crc32c 1a2b3c4d
 *
 * settled lines are trials' outcomes: a call size, the kept fraction it
 * was tried at, the algorithm, its median trial call (seconds, 0 when not
 * known). The CRC32C covers every byte before its line. */
#include "auto_cache.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gcmpi_codec.h"

#ifndef GCMPI_VERSION
#define GCMPI_VERSION GC_VERSION_STRING
#endif

#define MAX_FILE_BYTES ((size_t)64 << 10)
#define FIGURE_LINE 40 /* "-0x1.fffffffffffffp-1022\n" and room */

static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
    const unsigned char *b = data;
    for (size_t i = 0; i < len; i++) h = (h ^ b[i]) * 0x100000001B3ull;
    return h;
}
#define FNV_START 0xCBF29CE484222325ull

int gcmpi_auto_cache_agrees(double cached, double fresh)
{
    if (!(cached > 0) || !(fresh > 0)) return 0;
    const double r = fresh > cached ? fresh / cached : cached / fresh;
    return r <= GCMPI_AUTO_CACHE_TOLERANCE;
}

/* ---- the file ------------------------------------------------------------ */

int gcmpi_auto_cache_write_file(const char *path, const char *key, const gcmpi_auto_cached *in,
                                double calibration_s)
{
    const int n = GCMPI_AUTO_FIGURES;
    const size_t cap = 256 + strlen(key) + (size_t)n * FIGURE_LINE +
                       (size_t)in->n_settled * (3 * FIGURE_LINE + 16);
    char *text = malloc(cap);
    if (!text) return -1;
    int len = snprintf(text, cap,
                       "# libgcmpi: GCMPI_ALGO=auto calibration; delete to measure again\n"
                       "key %s\nseconds %.6g\nfigures %d\n",
                       key, calibration_s, n);
    for (int i = 0; i < n && len > 0 && (size_t)len < cap; i++)
        len += snprintf(text + len, cap - (size_t)len, "%a\n", in->figures[i]);
    if (len > 0 && (size_t)len < cap)
        len += snprintf(text + len, cap - (size_t)len, "settled %d\n", in->n_settled);
    for (int i = 0; i < in->n_settled && len > 0 && (size_t)len < cap; i++)
        len += snprintf(text + len, cap - (size_t)len, "%zu %a %s %a\n", in->settled[i].count,
                        in->settled[i].ratio, gcmpi_algo_name(in->settled[i].algo),
                        in->settled[i].median_s);
    if (len > 0 && (size_t)len < cap)
        len += snprintf(text + len, cap - (size_t)len, "crc32c %08x\n",
                        (unsigned)gc_crc32c(0, text, (size_t)len));
    if (len <= 0 || (size_t)len >= cap) {
        free(text);
        errno = EOVERFLOW;
        return -1;
    }
    /* A temporary name of this process, renamed over the file: a reader
     * sees the old file or the new one, never half of one. */
    char tmp[GCMPI_AUTO_CACHE_FILE_LEN + 32];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    int rc = f ? 0 : -1;
    if (f) {
        if (fwrite(text, 1, (size_t)len, f) != (size_t)len) rc = -1;
        if (fclose(f) != 0) rc = -1;
        if (rc == 0 && rename(tmp, path) != 0) rc = -1;
        if (rc != 0) {
            const int e = errno;
            unlink(tmp);
            errno = e;
        }
    }
    free(text);
    return rc;
}

/* The next line of text at *at (without its newline); NULL at the end. */
static char *next_line(char **at)
{
    char *s = *at;
    if (!s || !*s) return NULL;
    char *nl = strchr(s, '\n');
    if (!nl) return NULL; /* every line of a whole file ends with one */
    *nl = '\0';
    *at = nl + 1;
    return s;
}

static int parse_number(const char *s, char **end, double *v)
{
    errno = 0;
    *v = strtod(s, end);
    return *end != s && !errno && isfinite(*v) && *v >= 0;
}

/* An algorithm's name at s, up to the next blank; *end after it. */
static int parse_algo_word(char *s, char **end, gcmpi_algo *out)
{
    char *blank = strchr(s, ' ');
    const size_t len = blank ? (size_t)(blank - s) : strlen(s);
    for (int a = 0; a < GCMPI_ALGO_COUNT; a++) {
        const char *name = gcmpi_algo_name((gcmpi_algo)a);
        if (strlen(name) == len && strncmp(s, name, len) == 0) {
            *out = (gcmpi_algo)a;
            *end = s + len;
            return 1;
        }
    }
    return 0;
}

static int parse_file(char *text, const char *key, gcmpi_auto_cached *out)
{
    char *at = text, *line, *end;
    if (!(line = next_line(&at)) || line[0] != '#') return -1;
    if (!(line = next_line(&at)) || strncmp(line, "key ", 4) != 0 || strcmp(line + 4, key) != 0)
        return -1;
    if (!(line = next_line(&at)) || strncmp(line, "seconds ", 8) != 0) return -1;
    if (!(line = next_line(&at)) || strncmp(line, "figures ", 8) != 0 ||
        strtol(line + 8, &end, 10) != GCMPI_AUTO_FIGURES || *end)
        return -1;
    for (int i = 0; i < GCMPI_AUTO_FIGURES; i++)
        if (!(line = next_line(&at)) || !parse_number(line, &end, &out->figures[i]) || *end)
            return -1;
    long k;
    if (!(line = next_line(&at)) || strncmp(line, "settled ", 8) != 0 ||
        (k = strtol(line + 8, &end, 10)) < 0 || k > GCMPI_AUTO_MAX_CHOICES || *end)
        return -1;
    out->n_settled = (int)k;
    for (int i = 0; i < out->n_settled; i++) {
        gcmpi_auto_settled *r = &out->settled[i];
        double count;
        if (!(line = next_line(&at)) || !parse_number(line, &end, &count) || *end != ' ' ||
            count != (double)(size_t)count || !parse_number(end + 1, &end, &r->ratio) ||
            *end != ' ' || !parse_algo_word(end + 1, &end, &r->algo) ||
            r->algo == GCMPI_ALGO_AUTO || r->algo == GCMPI_ALGO_RULE || *end != ' ' ||
            !parse_number(end + 1, &end, &r->median_s) || *end)
            return -1;
        r->count = (size_t)count;
    }
    return next_line(&at) ? -1 : 0; /* nothing between them and the CRC */
}

int gcmpi_auto_cache_read_file(const char *path, const char *key, gcmpi_auto_cached *out)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char *text = malloc(MAX_FILE_BYTES + 1);
    size_t len = text ? fread(text, 1, MAX_FILE_BYTES + 1, f) : 0;
    fclose(f);
    if (!text || len == 0 || len > MAX_FILE_BYTES) {
        free(text);
        return -1;
    }
    text[len] = '\0';
    /* The last line is the CRC of all before it. */
    int rc = -1;
    char *crc_line = len >= 2 ? text + len - 2 : text;
    while (crc_line > text && crc_line[-1] != '\n') crc_line--;
    unsigned crc = 0;
    char tail[2];
    if (text[len - 1] == '\n' && crc_line > text &&
        sscanf(crc_line, "crc32c %8x%1[\n]", &crc, tail) == 2 &&
        crc == (unsigned)gc_crc32c(0, text, (size_t)(crc_line - text))) {
        *crc_line = '\0';
        gcmpi_auto_cached *got = malloc(sizeof *got);
        if (got && parse_file(text, key, got) == 0) {
            *out = *got;
            rc = 0;
        }
        free(got);
    }
    free(text);
    return rc;
}

/* ---- where, and under which key ------------------------------------------ */

/* GCMPI_AUTO_CACHE's directory: "auto" is the XDG cache directory's
 * libgcmpi/ (none without XDG_CACHE_HOME or HOME); 0 when off. */
static int cache_dir(const gcmpi_config *cfg, char *dir, size_t len)
{
    const char *v = cfg->auto_cache;
    if (!*v || strcmp(v, "off") == 0) return 0;
    int n;
    if (strcmp(v, "auto") == 0) {
        const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        if (xdg && *xdg == '/') n = snprintf(dir, len, "%s/libgcmpi", xdg);
        else if (home && *home) n = snprintf(dir, len, "%s/.cache/libgcmpi", home);
        else return 0;
    } else {
        n = snprintf(dir, len, "%s", v);
    }
    return n > 0 && (size_t)n < len;
}

/* mkdir -p: each missing component, private to the user (0700) as the
 * XDG cache directory is. */
static int make_dirs(const char *dir)
{
    char p[GCMPI_AUTO_CACHE_FILE_LEN];
    snprintf(p, sizeof p, "%s", dir);
    for (char *s = p + 1;; s++) {
        const int last = *s == '\0';
        if (*s == '/' || last) {
            *s = '\0';
            if (mkdir(p, 0700) != 0 && errno != EEXIST) return -1;
            if (last) break;
            *s = '/';
        }
    }
    return 0;
}

int gcmpi_auto_cache_save(const gcmpi_auto_cache *c, const gcmpi_auto_cached *in,
                          double calibration_s)
{
    if (!c->on) return 0;
    if (make_dirs(c->dir) != 0) return -1;
    return gcmpi_auto_cache_write_file(c->path, c->key, in, calibration_s);
}

/* The MPI library's first line up to its first comma, blanks and '='
 * kept out of the key's words. */
static void mpi_words(char *out, size_t len)
{
    char full[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;
    full[0] = '\0';
    PMPI_Get_library_version(full, &n);
    size_t k = 0;
    for (const char *s = full; *s && *s != '\n' && *s != ',' && k + 1 < len; s++)
        out[k++] = (*s == ' ' || *s == '\t' || *s == '=') ? '_' : *s;
    out[k] = '\0';
}

/* splitmix64's finaliser: a rank's host hash mixed with its rank, so the
 * XOR over ranks depends on which rank is on which host. */
static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

int gcmpi_auto_cache_lookup(const gcmpi_config *cfg, MPI_Comm comm, const gcmpi_nodes *nodes,
                            const char *collective, gcmpi_auto_cache *c,
                            gcmpi_auto_cached *out, int *found)
{
    int rank, p;
    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &p);
    memset(c, 0, sizeof *c);
    *found = 0;
    /* Every rank's host, in rank order: a job placed otherwise, or on
     * other hosts, has another key. */
    char host[MPI_MAX_PROCESSOR_NAME];
    int host_len = 0;
    if (PMPI_Get_processor_name(host, &host_len) != MPI_SUCCESS) host_len = 0;
    const uint64_t mine = mix(fnv1a(FNV_START, host, (size_t)host_len) +
                              0x9E3779B97F4A7C15ull * (uint64_t)(rank + 1));
    uint64_t hosts = 0;
    int rc = PMPI_Reduce(&mine, &hosts, 1, MPI_UINT64_T, MPI_BXOR, 0, comm);
    /* rank 0's found flag, then the file's contents (its bytes: every
     * rank runs the same build) */
    struct {
        int found;
        gcmpi_auto_cached cached;
    } msg;
    memset(&msg, 0, sizeof msg);
    if (rc == MPI_SUCCESS && rank == 0 && cache_dir(cfg, c->dir, sizeof c->dir)) {
        char mpi[128];
        mpi_words(mpi, sizeof mpi);
        const int k = snprintf(
            c->key, sizeof c->key,
            "libgcmpi=%s calibration=%d collective=%s figures=%d mpi=%s ranks=%d nodes=%d "
            "node_size=%d-%d shm=%d config=%016llx hosts=%016llx",
            GCMPI_VERSION, GCMPI_AUTO_CALIBRATION_VERSION, collective, GCMPI_AUTO_FIGURES, mpi, p,
            nodes->n_nodes, nodes->min_node_size, nodes->max_node_size, nodes->shm_possible,
            (unsigned long long)gcmpi_config_hash(cfg), (unsigned long long)hosts);
        const int m = snprintf(c->path, sizeof c->path, "%s/auto-%016llx.txt", c->dir,
                               (unsigned long long)fnv1a(FNV_START, c->key, strlen(c->key)));
        c->on = k > 0 && (size_t)k < sizeof c->key && m > 0 && (size_t)m < sizeof c->path;
        if (c->on && gcmpi_auto_cache_read_file(c->path, c->key, &msg.cached) == 0) msg.found = 1;
    }
    if (rc == MPI_SUCCESS) rc = PMPI_Bcast(&msg, (int)sizeof msg, MPI_BYTE, 0, comm);
    if (rc == MPI_SUCCESS && msg.found) {
        *out = msg.cached;
        *found = 1;
    }
    return rc;
}
