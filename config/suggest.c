/* suggest.c — "did you mean GCMPI_RATIO?" for misspelt variable names. */
#include "config_impl.h"

#include <stdint.h>
#include <string.h>

static char upper(char c) { return (c >= 'a' && c <= 'z') ? (char)(c - 'a' + 'A') : c; }

static size_t min3(size_t a, size_t b, size_t c)
{
    size_t m = a < b ? a : b;
    return m < c ? m : c;
}

/* Names longer than this are not typos of any known name (the longest has
 * 21 characters): their distance is reported as SIZE_MAX. */
#define NAME_MAX_SUGGEST 64

size_t cfg_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > NAME_MAX_SUGGEST || lb > NAME_MAX_SUGGEST) return SIZE_MAX;
    /* Three rows of the dynamic programme: i-2, i-1, i. */
    size_t rows[3][NAME_MAX_SUGGEST + 1];
    size_t *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
    for (size_t j = 0; j <= lb; j++) prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = upper(a[i - 1]) != upper(b[j - 1]);
            cur[j] = min3(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
            if (i > 1 && j > 1 && upper(a[i - 1]) == upper(b[j - 2]) &&
                upper(a[i - 2]) == upper(b[j - 1]) && prev2[j - 2] + 1 < cur[j])
                cur[j] = prev2[j - 2] + 1;
        }
        size_t *t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    return prev[lb];
}

const char *cfg_suggest(const char *name)
{
    static const char prefix[] = "GCMPI_";
    const char *best = NULL;
    size_t best_d = SIZE_MAX;
    for (size_t i = 0; gcmpi_config_names[i]; i++) {
        const char *known = gcmpi_config_names[i];
        size_t d = cfg_edit_distance(name, known);
        /* Allow about one edit per two characters of the part after the
         * prefix, at most three: GCMPI_EFF -> GCMPI_EF, but GCMPI_XY is not
         * a typo of GCMPI_EF. */
        size_t tail = strlen(known) - (sizeof prefix - 1);
        size_t limit = (tail + 1) / 2;
        if (limit > 3) limit = 3;
        if (d <= limit && d < best_d) {
            best = known;
            best_d = d;
        }
    }
    return best;
}
