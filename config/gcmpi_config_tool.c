/* gcmpi_config_tool.c — gcmpi-config: the GCMPI_* variable table and the
 * library's own validation, for scripts (gcmpirun) and for users checking
 * a configuration before they launch a job. No MPI. */
#include "gcmpi_config.h"

#include <stdio.h>
#include <string.h>

#ifndef GCMPI_VERSION
#define GCMPI_VERSION GC_VERSION_STRING
#endif

static const char usage[] =
    "usage: gcmpi-config --list | --table | --check [--all] | --version | --help\n"
    "  --list     the name of every GCMPI_* variable, one per line\n"
    "  --table    name, type, default, allowed values, meaning; tab-separated\n"
    "  --check    read the GCMPI_* environment (and the GCMPI_CONFIG file) exactly as\n"
    "             MPI_Init does; on a bad value print the message and exit 1; else\n"
    "             print the settings that matter (changed from the default, or read\n"
    "             by the chosen codec), one NAME=value per line; warnings (unknown\n"
    "             names) go to stderr\n"
    "  --all      with --check: every setting, defaults included\n"
    "Exit status: 0 valid, 1 invalid configuration, 2 bad usage.\n";

int main(int argc, char **argv)
{
    const char *mode = NULL;
    int all = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--all") == 0) all = 1;
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage, stdout);
            return 0;
        } else if (!mode && (strcmp(argv[i], "--list") == 0 || strcmp(argv[i], "--table") == 0 ||
                             strcmp(argv[i], "--check") == 0 || strcmp(argv[i], "--version") == 0))
            mode = argv[i];
        else {
            fprintf(stderr, "gcmpi-config: unexpected argument '%s'\n%s", argv[i], usage);
            return 2;
        }
    }
    if (!mode) {
        fputs(usage, stderr);
        return 2;
    }
    if (strcmp(mode, "--version") == 0) {
        printf("gcmpi-config (libgcmpi) %s\n", GCMPI_VERSION);
        return 0;
    }
    if (strcmp(mode, "--list") == 0) {
        for (const char *const *n = gcmpi_config_names; *n; n++) puts(*n);
        return 0;
    }
    if (strcmp(mode, "--table") == 0) {
        for (const gcmpi_config_doc *d = gcmpi_config_docs; d->name; d++)
            printf("%s\t%s\t%s\t%s\t%s\n", d->name, d->type, d->default_value, d->range,
                   d->meaning);
        return 0;
    }
    static gcmpi_config cfg;
    static gcmpi_config_result res;
    gcmpi_config_load(&cfg, &res, NULL);
    for (int i = 0; i < res.n_warnings && i < 8; i++) fprintf(stderr, "%s\n", res.warnings[i]);
    if (!res.ok) {
        fprintf(stderr, "%s\n", res.error);
        return 1;
    }
    static char text[16384];
    if (all) gcmpi_config_describe(&cfg, text, sizeof text);
    else gcmpi_config_describe_brief(&cfg, text, sizeof text);
    fputs(text, stdout);
    return 0;
}
