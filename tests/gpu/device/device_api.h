/* device_api.h — the device memory of the test programs: the GPU library
 * named by GCMPI_GPU_LIB (libgcmpi_gpu.so on a GPU, libgcmpi_gpu_emu.so in
 * CI, whose device memory is PROT_NONE outside emulated kernels and
 * copies), loaded with dlopen as an application loads CUDA; the programs
 * only touch device memory through its copies. */
#ifndef DEVICE_API_H
#define DEVICE_API_H

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct gpu_api {
    void *(*create)(void);
    void (*destroy)(void *ctx);
    void *(*alloc)(void *ctx, size_t bytes);
    void (*dealloc)(void *ctx, void *p);
    size_t (*copy)(void *ctx, void *dst, const void *src, size_t bytes);
} gpu_api;

/* Fills api from the GPU library; 0 on success, else prints why (before
 * MPI_Init: nothing to abort yet). */
static inline int gpu_api_load(gpu_api *api, const char *program)
{
    const char *lib = getenv("GCMPI_GPU_LIB");
    void *h = dlopen(lib && *lib ? lib : "libgcmpi_gpu.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "%s: cannot load the GPU library: %s\n", program, dlerror());
        return -1;
    }
    *(void **)&api->create = dlsym(h, "gcmpi_gpu_create");
    *(void **)&api->destroy = dlsym(h, "gcmpi_gpu_destroy");
    *(void **)&api->alloc = dlsym(h, "gcmpi_gpu_alloc");
    *(void **)&api->dealloc = dlsym(h, "gcmpi_gpu_dealloc");
    *(void **)&api->copy = dlsym(h, "gcmpi_gpu_copy");
    if (!api->create || !api->destroy || !api->alloc || !api->dealloc || !api->copy) {
        fprintf(stderr, "%s: the GPU library lacks gcmpi_gpu_create/alloc/copy\n", program);
        return -1;
    }
    return 0;
}

#endif
