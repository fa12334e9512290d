/* parse.c — strict, locale-independent parsers for GCMPI_* values. The
 * library runs inside applications that may have called setlocale, so no
 * strtod on text with a decimal point, no strcasecmp, no isdigit. */
#include "config_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_digit(char c) { return c >= '0' && c <= '9'; }

static char lower(char c) { return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c; }

int cfg_ieq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (lower(*a) != lower(*b)) return 0;
    return *a == *b;
}

int cfg_keyword(const char *s, const char *const *words)
{
    for (int i = 0; words[i]; i++)
        if (cfg_ieq(s, words[i])) return i;
    return -1;
}

cfg_status cfg_parse_bool(const char *s, int *out)
{
    static const char *const words[] = {"0", "false", "no", "off", "1", "true", "yes", "on", NULL};
    int i = cfg_keyword(s, words);
    if (i < 0) return CFG_SYNTAX;
    *out = i >= 4;
    return CFG_OK;
}

/* Decimal digits into *out; CFG_RANGE past UINT64_MAX. */
static cfg_status parse_digits(const char *s, const char **end, uint64_t *out)
{
    uint64_t v = 0;
    int overflow = 0;
    const char *p = s;
    for (; is_digit(*p); p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10) overflow = 1;
        else v = v * 10 + d;
    }
    if (p == s) return CFG_SYNTAX;
    *end = p;
    *out = v;
    return overflow ? CFG_RANGE : CFG_OK;
}

cfg_status cfg_parse_int(const char *s, long long lo, long long hi, long long *out)
{
    int neg = *s == '-';
    if (*s == '-' || *s == '+') s++;
    const char *end;
    uint64_t mag;
    cfg_status st = parse_digits(s, &end, &mag);
    if (st == CFG_SYNTAX || *end) return CFG_SYNTAX;
    if (st == CFG_RANGE) return CFG_RANGE;
    /* Magnitudes up to 2^63 are representable (2^63 only when negative). */
    if (mag > (uint64_t)INT64_MAX + (neg ? 1u : 0u)) return CFG_RANGE;
    long long v = neg ? (long long)(0 - mag) : (long long)mag;
    if (v < lo || v > hi) return CFG_RANGE;
    *out = v;
    return CFG_OK;
}

static int hex_value(char c)
{
    if (is_digit(c)) return c - '0';
    c = lower(c);
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

cfg_status cfg_parse_u64(const char *s, uint64_t *out)
{
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        const char *p = s + 2;
        uint64_t v = 0;
        int overflow = 0;
        for (; hex_value(*p) >= 0; p++) {
            if (v >> 60) overflow = 1;
            v = (v << 4) | (uint64_t)hex_value(*p);
        }
        if (p == s + 2 || *p) return CFG_SYNTAX;
        if (overflow) return CFG_RANGE;
        *out = v;
        return CFG_OK;
    }
    const char *end;
    uint64_t v;
    cfg_status st = parse_digits(s, &end, &v);
    if (st == CFG_SYNTAX || *end) return CFG_SYNTAX;
    if (st == CFG_RANGE) return CFG_RANGE;
    *out = v;
    return CFG_OK;
}

cfg_status cfg_parse_size(const char *s, uint64_t *out)
{
    const char *end;
    uint64_t v;
    cfg_status st = parse_digits(s, &end, &v);
    if (st == CFG_SYNTAX) return CFG_SYNTAX;
    unsigned shift = 0;
    switch (*end) {
    case '\0': break;
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: return CFG_SYNTAX;
    }
    if (*end) return CFG_SYNTAX;
    if (st == CFG_RANGE || (shift && v > (UINT64_MAX >> shift))) return CFG_RANGE;
    *out = v << shift;
    return CFG_OK;
}

/* Longest number text accepted; beyond it digits carry no information a
 * double can hold, and such a value is certainly a mistake. */
#define NUMBER_MAX 128

cfg_status cfg_parse_double(const char *s, double *out)
{
    /* Check the grammar and rewrite "12.5e-3" as "125e-4": without a decimal
     * point strtod's result no longer depends on LC_NUMERIC, and it is still
     * correctly rounded. */
    char buf[NUMBER_MAX + 32];
    size_t n = 0;
    const char *p = s;
    if (*p == '-' || *p == '+') buf[n++] = *p++;
    size_t int_digits = 0, frac_digits = 0;
    for (; is_digit(*p); p++, int_digits++)
        if (n < NUMBER_MAX) buf[n++] = *p;
    if (*p == '.') {
        p++;
        for (; is_digit(*p); p++, frac_digits++)
            if (n < NUMBER_MAX) buf[n++] = *p;
    }
    if (int_digits + frac_digits == 0 || int_digits + frac_digits + 1 > NUMBER_MAX)
        return CFG_SYNTAX;
    long long exp10 = 0;
    if (*p == 'e' || *p == 'E') {
        p++;
        int neg = *p == '-';
        if (*p == '-' || *p == '+') p++;
        if (!is_digit(*p)) return CFG_SYNTAX;
        for (; is_digit(*p); p++)
            if (exp10 < 100000) exp10 = exp10 * 10 + (*p - '0');
        if (neg) exp10 = -exp10;
    }
    if (*p) return CFG_SYNTAX;
    exp10 -= (long long)frac_digits;
    snprintf(buf + n, sizeof buf - n, "e%lld", exp10);
    char *end;
    double v = strtod(buf, &end);
    if (*end) return CFG_SYNTAX;
    if (v - v != 0) return CFG_RANGE; /* overflowed to infinity */
    *out = v + 0.0; /* -0 becomes +0: equal settings hash equally */
    return CFG_OK;
}

void cfg_format_double(double v, char *buf, size_t len)
{
    char text[64];
    for (int prec = 1; prec <= 17; prec++) {
        char raw[64];
        snprintf(raw, sizeof raw, "%.*g", prec, v);
        /* Whatever the locale made of the decimal point becomes '.'. */
        size_t n = 0;
        int in_point = 0;
        for (const char *q = raw; *q && n + 1 < sizeof text; q++) {
            int plain = is_digit(*q) || *q == '-' || *q == '+' || *q == 'e';
            if (plain) text[n++] = *q;
            else if (!in_point) text[n++] = '.';
            in_point = !plain;
        }
        text[n] = '\0';
        double back;
        if (cfg_parse_double(text, &back) == CFG_OK && back == v) break;
    }
    snprintf(buf, len, "%s", text);
}
