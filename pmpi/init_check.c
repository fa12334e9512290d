/* init_check.c — the statistics path and the cross-rank comparison of the
 * settings at MPI_Init (init_check.h). */
#include "init_check.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- GCMPI_STATS path -------------------------------------------------- */

int gcmpi_stats_path_check(const gcmpi_config *cfg, char *msg, size_t len)
{
    const char *path = cfg->stats_json;
    if (!path[0]) return 0;
    const char *shown_pre = cfg->stats_stderr ? "stderr," : "";
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(msg, len,
                 "libgcmpi: GCMPI_STATS=%s%s cannot be written: %s is a directory; "
                 "expected a file path such as %s/stats.json",
                 shown_pre, path, path, path);
        return -1;
    }
    /* The report is written to this temporary name and renamed (report.c):
     * creating it is the test that the directory takes new files. */
    char tmp[GCMPI_PATH_LEN + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        int err = errno;
        char dir[GCMPI_PATH_LEN];
        const char *slash = strrchr(path, '/');
        if (!slash) snprintf(dir, sizeof dir, ".");
        else if (slash == path) snprintf(dir, sizeof dir, "/");
        else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
        snprintf(msg, len,
                 "libgcmpi: GCMPI_STATS=%s%s cannot be written: %s %s (%s); expected a "
                 "path in an existing, writable directory",
                 shown_pre, path,
                 stat(dir, &st) != 0 ? "there is no directory" : "cannot create a file in", dir,
                 strerror(err));
        return -1;
    }
    fclose(f);
    remove(tmp);
    return 0;
}

/* ---- settings that differ between ranks --------------------------------- */

/* The value of "name=value" in a describe text, up to the end of its line;
 * NULL when the text has no such line. */
static const char *value_in(const char *text, const char *name, size_t name_len, size_t *value_len)
{
    for (const char *line = text; *line;) {
        const char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        if (n > name_len && strncmp(line, name, name_len) == 0 && line[name_len] == '=') {
            *value_len = n - name_len - 1;
            return line + name_len + 1;
        }
        if (!nl) break;
        line = nl + 1;
    }
    return NULL;
}

static int same_value(const char *a, size_t an, const char *b, size_t bn)
{
    if (!a || !b) return a == b;
    return an == bn && memcmp(a, b, an) == 0;
}

/* "rank 3" or "ranks 0,2-5,7" for the ranks whose group[] is g. */
static void put_ranks(FILE *out, const int *group, int nranks, int g)
{
    int count = 0;
    for (int r = 0; r < nranks; r++) count += group[r] == g;
    fprintf(out, count == 1 ? "rank " : "ranks ");
    int first = 1, shown = 0;
    for (int r = 0; r < nranks; r++) {
        if (group[r] != g || (r > 0 && group[r - 1] == g)) continue;
        int end = r;
        while (end + 1 < nranks && group[end + 1] == g) end++;
        if (shown >= 8) {
            fprintf(out, ",...");
            return;
        }
        if (end == r) fprintf(out, "%s%d", first ? "" : ",", r);
        else fprintf(out, "%s%d-%d", first ? "" : ",", r, end);
        first = 0;
        shown++;
    }
}

enum { MAX_GROUPS_SHOWN = 4 };

/* One line for the variable: each distinct value and the ranks that hold
 * it, in the order of the lowest rank. Returns 1 if the ranks differ. */
static int explain_variable(const char *name, size_t name_len, char **texts, int nranks,
                            int *group)
{
    const char **value = malloc((size_t)nranks * sizeof *value);
    size_t *vlen = malloc((size_t)nranks * sizeof *vlen);
    if (!value || !vlen) {
        free(value);
        free(vlen);
        return 0;
    }
    int groups = 0;
    for (int r = 0; r < nranks; r++) {
        value[r] = value_in(texts[r], name, name_len, &vlen[r]);
        group[r] = -1;
        for (int q = 0; q < r && group[r] < 0; q++)
            if (same_value(value[q], vlen[q], value[r], vlen[r])) group[r] = group[q];
        if (group[r] < 0) group[r] = groups++;
    }
    if (groups > 1) {
        fprintf(stderr, "libgcmpi:  ");
        for (int g = 0; g < groups && g < MAX_GROUPS_SHOWN; g++) {
            int r = 0;
            while (group[r] != g) r++;
            if (value[r]) fprintf(stderr, "%s %.*s=%.*s on ", g ? ";" : "", (int)name_len, name,
                                  (int)vlen[r], value[r]);
            else fprintf(stderr, "%s %.*s unknown on ", g ? ";" : "", (int)name_len, name);
            put_ranks(stderr, group, nranks, g);
        }
        if (groups > MAX_GROUPS_SHOWN)
            fprintf(stderr, "; %d other values", groups - MAX_GROUPS_SHOWN);
        fputc('\n', stderr);
    }
    free(value);
    free(vlen);
    return groups > 1;
}

/* Rank 0: every shared (not per-rank) variable of its own settings. */
static void explain(char **texts, int nranks)
{
    fprintf(stderr, "libgcmpi: the GCMPI_* settings differ between ranks; all must be the same:\n");
    int *group = malloc((size_t)nranks * sizeof *group);
    int differ = 0;
    for (const char *line = texts[0]; group && *line;) {
        const char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        const char *eq = memchr(line, '=', n);
        if (eq) {
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)(eq - line), line);
            if (!gcmpi_config_is_per_rank(name))
                differ += explain_variable(line, (size_t)(eq - line), texts, nranks, group);
        }
        if (!nl) break;
        line = nl + 1;
    }
    if (!differ)
        fprintf(stderr, "libgcmpi:   every setting reads the same, so the ranks run different "
                        "libgcmpi builds; preload the same libgcmpi.so on every rank\n");
    free(group);
}

void gcmpi_explain_mismatch(const gcmpi_config *cfg, MPI_Comm comm)
{
    int rank = 0, nranks = 1;
    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &nranks);
    char mine[8192];
    size_t need = gcmpi_config_describe(cfg, mine, sizeof mine);
    int my_len = (int)(need < sizeof mine ? need : sizeof mine - 1) + 1; /* with the '\0' */

    int *lens = NULL, *displs = NULL;
    char *all = NULL;
    int ok = 1;
    if (rank == 0) {
        lens = calloc((size_t)nranks, sizeof *lens);
        displs = calloc((size_t)nranks, sizeof *displs);
        ok = lens && displs;
    }
    PMPI_Gather(&my_len, 1, MPI_INT, lens, 1, MPI_INT, 0, comm);
    if (rank == 0 && ok) {
        size_t total = 0;
        for (int r = 0; r < nranks; r++) {
            displs[r] = (int)total;
            total += (size_t)lens[r];
        }
        all = malloc(total);
        ok = all != NULL;
    }
    PMPI_Bcast(&ok, 1, MPI_INT, 0, comm);
    if (ok) {
        PMPI_Gatherv(mine, my_len, MPI_CHAR, all, lens, displs, MPI_CHAR, 0, comm);
        if (rank == 0) {
            char **texts = malloc((size_t)nranks * sizeof *texts);
            if (texts) {
                for (int r = 0; r < nranks; r++) texts[r] = all + displs[r];
                explain(texts, nranks);
            }
            free(texts);
        }
    } else if (rank == 0) {
        fprintf(stderr, "libgcmpi: the GCMPI_* settings differ between ranks (out of memory "
                        "to say which); every rank must use the same\n");
    }
    free(all);
    free(displs);
    free(lens);
}
