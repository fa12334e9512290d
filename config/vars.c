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
