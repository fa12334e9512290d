/* source.c — collect the raw GCMPI_* settings from the environment and the
 * GCMPI_CONFIG file; report unknown names. Values are judged in config.c. */
#include "config_impl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

extern char **environ;

#define PREFIX "GCMPI_"
#define PREFIX_LEN (sizeof PREFIX - 1)
#define WARN_SLOTS ((int)(sizeof ((gcmpi_config_result *)0)->warnings / \
                          sizeof ((gcmpi_config_result *)0)->warnings[0]))
/* A configuration file is a screenful of lines; anything much larger is
 * the wrong file. */
#define FILE_MAX_BYTES (1u << 20)

int cfg_error(gcmpi_config_result *res, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->error, sizeof res->error, fmt, ap);
    va_end(ap);
    res->ok = 0;
    return 0;
}

void cfg_warn(gcmpi_config_result *res, const char *fmt, ...)
{
    if (res->n_warnings >= WARN_SLOTS) {
        snprintf(res->warnings[WARN_SLOTS - 1], sizeof res->warnings[0],
                 "libgcmpi: more than %d warnings; the rest are not shown", WARN_SLOTS - 1);
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->warnings[res->n_warnings++], sizeof res->warnings[0], fmt, ap);
    va_end(ap);
}

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }

/* [s, s+len) without blanks at either end. */
static void trim(const char **s, size_t *len)
{
    while (*len && is_blank(**s)) (*s)++, (*len)--;
    while (*len && is_blank((*s)[*len - 1])) (*len)--;
}

static int lookup(const char *name, size_t len)
{
    for (int i = 0; i < CFG_VAR_COUNT; i++)
        if (strlen(gcmpi_config_names[i]) == len && memcmp(gcmpi_config_names[i], name, len) == 0)
            return i;
    return -1;
}

static int store(cfg_setting *set, const char *value, size_t len, const char *file, unsigned line,
                 gcmpi_config_result *res)
{
    char *copy = malloc(len + 1);
    if (!copy) return cfg_error(res, "libgcmpi: out of memory while reading the configuration");
    memcpy(copy, value, len);
    copy[len] = '\0';
    free(set->value);
    set->value = copy;
    set->file = file;
    set->line = line;
    return 1;
}

/* "libgcmpi: [FILE:LINE: ]unknown variable NAME=VALUE ignored[; did you mean X?]" */
static void warn_unknown(gcmpi_config_result *res, const char *name, size_t name_len,
                         const char *value, size_t value_len, const char *file, unsigned line)
{
    char where[GCMPI_PATH_LEN + 32] = "";
    if (file) snprintf(where, sizeof where, "%s:%u: ", file, line);
    char nm[128];
    snprintf(nm, sizeof nm, "%.*s", (int)(name_len < sizeof nm - 1 ? name_len : sizeof nm - 1), name);
    const char *hint = cfg_suggest(nm);
    int vl = (int)(value_len < CFG_SHOW_MAX ? value_len : CFG_SHOW_MAX);
    cfg_warn(res, "libgcmpi: %sunknown variable %s=%.*s%s ignored%s%s%s", where, nm, vl, value,
             value_len > CFG_SHOW_MAX ? "..." : "", hint ? "; did you mean " : "", hint ? hint : "",
             hint ? "?" : "");
}

static int read_environment(cfg_setting *set, gcmpi_config_result *res, char *const *envp)
{
    char *const *env = envp ? envp : environ;
    for (size_t i = 0; env && env[i]; i++) {
        const char *e = env[i];
        const char *eq = strchr(e, '=');
        if (strncmp(e, PREFIX, PREFIX_LEN) != 0 || !eq) continue;
        size_t name_len = (size_t)(eq - e);
        const char *value = eq + 1;
        size_t value_len = strlen(value);
        trim(&value, &value_len);
        int v = lookup(e, name_len);
        if (v < 0) warn_unknown(res, e, name_len, value, value_len, NULL, 0);
        /* The first of duplicate entries wins, as with getenv. */
        else if (!set[v].value && !store(&set[v], value, value_len, NULL, 0, res)) return 0;
    }
    return 1;
}

static void describe_errno(int err, char *buf, size_t len)
{
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
    /* GNU strerror_r returns its text, which may or may not be in tmp. */
    char tmp[256];
    snprintf(buf, len, "%s", strerror_r(err, tmp, sizeof tmp));
#else
    if (strerror_r(err, buf, len) != 0) snprintf(buf, len, "error %d", err);
#endif
}

/* The whole file, NUL-terminated, in *text (*size bytes before the NUL). */
static int slurp(const char *path, char **text, size_t *size, gcmpi_config_result *res)
{
    char why[256];
    FILE *f = fopen(path, "re");
    if (!f) {
        describe_errno(errno, why, sizeof why);
        return cfg_error(res, "libgcmpi: GCMPI_CONFIG=" CFG_SHOW_FMT " cannot be read: %s",
                         CFG_SHOW(path), why);
    }
    char *buf = malloc(FILE_MAX_BYTES + 2);
    if (!buf) {
        fclose(f);
        return cfg_error(res, "libgcmpi: out of memory while reading the configuration");
    }
    size_t n = fread(buf, 1, FILE_MAX_BYTES + 1, f);
    int err = ferror(f) ? errno : 0;
    fclose(f);
    if (err) {
        free(buf);
        describe_errno(err, why, sizeof why);
        return cfg_error(res, "libgcmpi: GCMPI_CONFIG=" CFG_SHOW_FMT " cannot be read: %s",
                         CFG_SHOW(path), why);
    }
    if (n > FILE_MAX_BYTES) {
        free(buf);
        return cfg_error(res, "libgcmpi: GCMPI_CONFIG=" CFG_SHOW_FMT " is larger than 1 MiB; "
                              "expected a short file of GCMPI_NAME=VALUE lines", CFG_SHOW(path));
    }
    buf[n] = '\0';
    *text = buf;
    *size = n;
    return 1;
}

/* One "KEY=VALUE" line (comments and blank lines already skipped). */
static int read_line(cfg_setting *set, const char *path, unsigned ln, const char *line,
                     size_t len, gcmpi_config_result *res)
{
    const char *eq = memchr(line, '=', len);
    const char *key = line;
    size_t key_len = eq ? (size_t)(eq - line) : 0;
    trim(&key, &key_len);
    if (!eq || key_len == 0)
        return cfg_error(res, "libgcmpi: %s:%u: expected GCMPI_NAME=VALUE, found '%.*s%s'", path, ln,
                         (int)(len < CFG_SHOW_MAX ? len : CFG_SHOW_MAX), line,
                         len > CFG_SHOW_MAX ? "..." : "");
    if (key_len < PREFIX_LEN || memcmp(key, PREFIX, PREFIX_LEN) != 0)
        return cfg_error(res, "libgcmpi: %s:%u: %.*s is not a GCMPI_ variable; expected "
                              "GCMPI_NAME=VALUE lines", path, ln,
                         (int)(key_len < CFG_SHOW_MAX ? key_len : CFG_SHOW_MAX), key);
    const char *value = eq + 1;
    size_t value_len = len - (size_t)(value - line);
    trim(&value, &value_len);
    /* Shell-style env files quote values: GCMPI_COMM="a b". */
    if (value_len >= 2 && (value[0] == '"' || value[0] == '\'') && value[value_len - 1] == value[0])
        value++, value_len -= 2;
    int v = lookup(key, key_len);
    if (v < 0) {
        warn_unknown(res, key, key_len, value, value_len, path, ln);
        return 1;
    }
    if (v == CFG_CONFIG)
        return cfg_error(res, "libgcmpi: %s:%u: GCMPI_CONFIG cannot be set inside the configuration "
                              "file; expected it in the environment", path, ln);
    if (set[v].value)
        cfg_warn(res, "libgcmpi: %s:%u: %s is set again (first at line %u); this line wins", path, ln,
                 gcmpi_config_names[v], set[v].line);
    return store(&set[v], value, value_len, path, ln, res);
}

static int read_file(cfg_setting *set, const char *path, gcmpi_config_result *res)
{
    char *text = NULL;
    size_t size = 0;
    if (!slurp(path, &text, &size, res)) return 0;
    int ok = 1;
    unsigned ln = 0;
    for (size_t at = 0; ok && at < size;) {
        const char *line = text + at;
        const char *nl = memchr(line, '\n', size - at);
        size_t len = nl ? (size_t)(nl - line) : size - at;
        at += len + 1;
        ln++;
        if (memchr(line, '\0', len)) {
            ok = cfg_error(res, "libgcmpi: %s:%u: contains a NUL byte; expected a text file of "
                                "GCMPI_NAME=VALUE lines", path, ln);
            break;
        }
        const char *t = line;
        size_t tl = len;
        trim(&t, &tl);
        if (tl == 0 || t[0] == '#') continue;
        ok = read_line(set, path, ln, t, tl, res);
    }
    free(text);
    return ok;
}

int cfg_sources_read(cfg_sources *src, gcmpi_config_result *res, char *const *envp)
{
    memset(src, 0, sizeof *src);
    if (!read_environment(src->set, res, envp)) return 0;
    const cfg_setting *conf = &src->set[CFG_CONFIG];
    if (!conf->value) return 1;
    if (!conf->value[0])
        return cfg_error(res, "libgcmpi: GCMPI_CONFIG= is empty; expected the path of a file of "
                              "GCMPI_NAME=VALUE lines");
    if (strlen(conf->value) >= sizeof src->path)
        return cfg_error(res, "libgcmpi: GCMPI_CONFIG=" CFG_SHOW_FMT " is too long; expected a path "
                              "shorter than %zu bytes", CFG_SHOW(conf->value), sizeof src->path);
    memcpy(src->path, conf->value, strlen(conf->value) + 1);

    cfg_setting file[CFG_VAR_COUNT];
    memset(file, 0, sizeof file);
    int ok = read_file(file, src->path, res);
    /* The environment wins over the file. */
    for (int v = 0; v < CFG_VAR_COUNT; v++) {
        if (ok && !src->set[v].value) src->set[v] = file[v];
        else free(file[v].value);
    }
    return ok;
}

void cfg_sources_free(cfg_sources *src)
{
    for (int v = 0; v < CFG_VAR_COUNT; v++) {
        free(src->set[v].value);
        src->set[v].value = NULL;
    }
}
