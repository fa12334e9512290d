/* adapt_test_util.h — what the adaptive layer's unit tests share: a codec
 * by name and a default configuration of one method. Criterion must be
 * included first. */
#ifndef ADAPT_TEST_UTIL_H
#define ADAPT_TEST_UTIL_H

#include "gc_adapt.h"

#define FIX_ONE 4294967296.0 /* 2^32, the agreement vector's unit */

static inline const gc_codec *codec(const char *name)
{
    const gc_codec *c = gc_codec_by_name(name);
    cr_assert_not_null(c, "codec %s", name);
    return c;
}

static inline gc_adapt_config config(gc_adapt_method m)
{
    gc_adapt_config cfg;
    gc_adapt_config_default(&cfg);
    cfg.method = m;
    return cfg;
}

#endif /* ADAPT_TEST_UTIL_H */
