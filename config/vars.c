/* vars.c — the tables of known variables, made from GCMPI_CONFIG_VARS. */
#include "config_impl.h"

const char *const gcmpi_config_names[] = {
#define CFG_NAME(id, name, type, def, range, meaning) name,
    GCMPI_CONFIG_VARS(CFG_NAME)
#undef CFG_NAME
    NULL,
};

const gcmpi_config_doc gcmpi_config_docs[] = {
#define CFG_DOC(id, name, type, def, range, meaning) {name, type, def, range, meaning},
    GCMPI_CONFIG_VARS(CFG_DOC)
#undef CFG_DOC
    {NULL, NULL, NULL, NULL, NULL},
};

const char *const cfg_adapt_words[] = {"none", "gct", "edgc", "variance", NULL};
_Static_assert(GC_ADAPT_NONE == 0 && GC_ADAPT_GCT == 1 && GC_ADAPT_EDGC == 2 && GC_ADAPT_VARIANCE == 3,
               "cfg_adapt_words is indexed by gc_adapt_method");

const char *const cfg_gct_forms[] = {"eq9", "alg2", NULL};
