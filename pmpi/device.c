/* device.c — finding CUDA in the process, loading libgcmpi_gpu.so, asking
 * where buffers live, and the pools the device path reuses (device.h).
 *
 * CUDA is "in the process" once libcuda.so.1 (the driver, which every CUDA
 * runtime loads) or the GPU library itself is loaded. That is looked for
 * again only when the dynamic loader reports that an object was added
 * since the last look (dl_iterate_phdr's dlpi_adds), so a host-only job
 * pays one loader query per intercepted call and never loads anything. */
#include "device.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const gcmpi_config *dev_cfg;
static _Atomic int gpu_state;         /* 0 not loaded, 1 loaded, -1 failed */
static char gpu_error[2 * GCMPI_PATH_LEN + 256]; /* why loading failed */
static char gpu_path[GCMPI_PATH_LEN + 32];
static void *gpu_handle;
static gcmpi_gpu_table gpu;
static gcmpi_gpu_ctx *gpu_ctx;
static int ctx_tried;
static _Atomic unsigned long long seen_adds;
static int aware = -2;                /* -2: not asked yet                */
static gcmpi_device_stats dev_stats;
static uint64_t ef_device_bytes;

/* Recursive: the error-feedback store allocates device memory while the
 * device path holds the lock. */
static pthread_mutex_t dev_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

void gcmpi_device_lock(void) { pthread_mutex_lock(&dev_lock); }
void gcmpi_device_unlock(void) { pthread_mutex_unlock(&dev_lock); }
gcmpi_device_stats *gcmpi_device_stats_mut(void) { return &dev_stats; }

static struct { void *p; size_t cap; } host_pool[GCMPI_DEV_HOST_SLOTS], dev_pool[GCMPI_DEV_BUF_SLOTS];

void gcmpi_device_setup(const gcmpi_config *cfg)
{
    dev_cfg = cfg;
    aware = -2;
    memset(&dev_stats, 0, sizeof dev_stats);
}

/* ---- is CUDA in the process? -------------------------------------------- */

static int first_object_adds(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    *(unsigned long long *)data = info->dlpi_adds;
    return 1; /* the counter is the same in every entry: stop at the first */
}

static int already_loaded(const char *path)
{
    void *h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    if (h) dlclose(h);
    return h != NULL;
}

/* The GPU library's path: GCMPI_GPU_LIB, else beside libgcmpi.so (an
 * installed tree), else ../gpu/ from it (the build tree). */
static void choose_path(void)
{
    if (dev_cfg && dev_cfg->gpu_lib[0]) {
        snprintf(gpu_path, sizeof gpu_path, "%s", dev_cfg->gpu_lib);
        return;
    }
    Dl_info info;
    snprintf(gpu_path, sizeof gpu_path, "libgcmpi_gpu.so");
    if (!dladdr((void *)&gcmpi_device_setup, &info) || !info.dli_fname) return;
    char dir[GCMPI_PATH_LEN];
    snprintf(dir, sizeof dir, "%s", info.dli_fname);
    char *slash = strrchr(dir, '/');
    if (!slash) return;
    *slash = '\0';
    snprintf(gpu_path, sizeof gpu_path, "%s/libgcmpi_gpu.so", dir);
    if (access(gpu_path, R_OK) == 0) return;
    snprintf(gpu_path, sizeof gpu_path, "%s/../gpu/libgcmpi_gpu.so", dir);
}

/* Objects loaded since the last look? Lock-free: this is the whole cost
 * of the device check for a host-only job. */
static int loader_changed(void)
{
    unsigned long long adds = 0;
    dl_iterate_phdr(first_object_adds, &adds);
    return adds != seen_adds;
}

/* Under the lock. */
static int cuda_appeared(void)
{
    unsigned long long adds = 0;
    dl_iterate_phdr(first_object_adds, &adds);
    if (adds == seen_adds) return 0;
    seen_adds = adds;
    if (!gpu_path[0]) choose_path();
    return already_loaded("libcuda.so.1") || already_loaded(gpu_path);
}

#define RESOLVE(field, name)                                                     \
    do {                                                                         \
        *(void **)(&gpu.field) = dlsym(gpu_handle, name);                        \
        if (!gpu.field) {                                                        \
            snprintf(gpu_error, sizeof gpu_error, "%s lacks %s (an older build?)", \
                     gpu_path, name);                                            \
            return -1;                                                           \
        }                                                                        \
    } while (0)

static int load_gpu(void)
{
    gpu_handle = dlopen(gpu_path, RTLD_NOW | RTLD_LOCAL);
    if (!gpu_handle) {
        const char *why = dlerror();
        snprintf(gpu_error, sizeof gpu_error, "cannot load %s: %s", gpu_path, why ? why : "?");
        return -1;
    }
    RESOLVE(is_device_pointer, "gcmpi_gpu_is_device_pointer");
    RESOLVE(supports, "gcmpi_gpu_supports");
    RESOLVE(create, "gcmpi_gpu_create");
    RESOLVE(destroy, "gcmpi_gpu_destroy");
    RESOLVE(alloc, "gcmpi_gpu_alloc");
    RESOLVE(dealloc, "gcmpi_gpu_dealloc");
    RESOLVE(copy, "gcmpi_gpu_copy");
    RESOLVE(encode, "gcmpi_gpu_encode");
    RESOLVE(decode_add, "gcmpi_gpu_decode_add");
    RESOLVE(host_alloc, "gcmpi_gpu_host_alloc");
    RESOLVE(host_free, "gcmpi_gpu_host_free");
    RESOLVE(zero, "gcmpi_gpu_zero");
    RESOLVE(all_finite, "gcmpi_gpu_all_finite");
    RESOLVE(momentum_accumulate, "gcmpi_gpu_momentum_accumulate");
    RESOLVE(momentum_unfold, "gcmpi_gpu_momentum_unfold");
    RESOLVE(native_int8_max, "gcmpi_gpu_native_int8_max");
    RESOLVE(native_int8_quantise, "gcmpi_gpu_native_int8_quantise");
    RESOLVE(native_int8_dequantise, "gcmpi_gpu_native_int8_dequantise");
    RESOLVE(randk_indices, "gcmpi_gpu_randk_indices");
    RESOLVE(native_randk_values, "gcmpi_gpu_native_randk_values");
    RESOLVE(native_randk_marks, "gcmpi_gpu_native_randk_marks");
    RESOLVE(native_randk_out, "gcmpi_gpu_native_randk_out");
    RESOLVE(native_powersgd_p, "gcmpi_gpu_native_powersgd_p");
    RESOLVE(native_powersgd_q, "gcmpi_gpu_native_powersgd_q");
    RESOLVE(native_powersgd_out, "gcmpi_gpu_native_powersgd_out");
    RESOLVE(encode_momentum_supports, "gcmpi_gpu_encode_momentum_supports");
    RESOLVE(encode_momentum, "gcmpi_gpu_encode_momentum");
    RESOLVE(sparse_rd_set, "gcmpi_gpu_sparse_rd_set");
    RESOLVE(sparse_rd_out, "gcmpi_gpu_sparse_rd_out");
    RESOLVE(set_width_policy, "gcmpi_gpu_set_width_policy");
    RESOLVE(adapt_sample, "gcmpi_gpu_adapt_sample");
    RESOLVE(adapt_gct_shape, "gcmpi_gpu_adapt_gct_shape");
    RESOLVE(adapt_remember, "gcmpi_gpu_adapt_remember");
    RESOLVE(adapt_var_moves, "gcmpi_gpu_adapt_var_moves");
    return 0;
}

/* The driver's own answer, for the case the GPU library did not load:
 * cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2, p)
 * gives CU_MEMORYTYPE_DEVICE = 2 for device memory. */
static int driver_says_device(const void *p)
{
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!h) return 0;
    int (*get)(void *, int, unsigned long long) = NULL;
    *(void **)(&get) = dlsym(h, "cuPointerGetAttribute");
    unsigned type = 0;
    int dev = get && get(&type, 2, (unsigned long long)(uintptr_t)p) == 0 && type == 2;
    dlclose(h);
    return dev;
}

static int is_user_pointer(const void *p)
{
    return p && p != MPI_IN_PLACE;
}

int gcmpi_device_any(const void *a, const void *b)
{
    if (gpu_state == 0 && !loader_changed()) return 0;
    gcmpi_device_lock();
    if (gpu_state == 0 && cuda_appeared()) {
        gpu_state = load_gpu() == 0 ? 1 : -1;
        if (gpu_state < 0 && gpu_handle) {
            dlclose(gpu_handle);
            gpu_handle = NULL;
        }
    }
    int dev = 0;
    if (gpu_state > 0) {
        dev = (is_user_pointer(a) && gpu.is_device_pointer(a)) ||
              (is_user_pointer(b) && gpu.is_device_pointer(b));
    } else if (gpu_state < 0 &&
               ((is_user_pointer(a) && driver_says_device(a)) ||
                (is_user_pointer(b) && driver_says_device(b)))) {
        fprintf(stderr,
                "libgcmpi: a CUDA device buffer was passed to MPI, but the GPU library "
                "could not be used (%s); build libgcmpi with CUDA or set GCMPI_GPU_LIB to "
                "libgcmpi_gpu.so. Stopping the job\n",
                gpu_error);
        PMPI_Abort(MPI_COMM_WORLD, 1);
    }
    gcmpi_device_unlock();
    return dev;
}

const gcmpi_gpu_table *gcmpi_device_gpu(void)
{
    return gpu_state > 0 ? &gpu : NULL;
}

gcmpi_gpu_ctx *gcmpi_device_ctx(void)
{
    if (gpu_state <= 0) return NULL;
    if (!gpu_ctx && !ctx_tried) {
        ctx_tried = 1;
        gpu_ctx = gpu.create();
        if (!gpu_ctx)
            fprintf(stderr, "libgcmpi: %s found no usable CUDA device; calls on device "
                            "buffers fail\n", gpu_path);
    }
    return gpu_ctx;
}

int gcmpi_device_cuda_aware(void)
{
    if (aware != -2) return aware;
    if (dev_cfg && dev_cfg->cuda_aware >= 0) {
        aware = dev_cfg->cuda_aware;
    } else {
        /* Open MPI and MVAPICH have it (mpi-ext.h); MPICH has not: the
         * symbol is looked up, so the build needs no header for it. */
        int (*query)(void) = NULL;
        *(void **)(&query) = dlsym(RTLD_DEFAULT, "MPIX_Query_cuda_support");
        aware = query ? query() != 0 : 0;
    }
    return aware;
}

/* ---- pools -------------------------------------------------------------- */

static size_t grown(size_t cap, size_t bytes)
{
    size_t want = cap * 2 > bytes ? cap * 2 : bytes;
    return (want + 4095) & ~(size_t)4095;
}

void *gcmpi_device_host_buffer(unsigned slot, size_t bytes)
{
    if (gpu_state <= 0 || slot >= GCMPI_DEV_HOST_SLOTS) return NULL;
    if (host_pool[slot].cap >= bytes && host_pool[slot].p) return host_pool[slot].p;
    size_t want = grown(host_pool[slot].cap, bytes);
    gpu.host_free(host_pool[slot].p);
    dev_stats.pool_grows++;
    host_pool[slot].p = gpu.host_alloc(want);
    host_pool[slot].cap = host_pool[slot].p ? want : 0;
    return host_pool[slot].p;
}

void *gcmpi_device_buffer(unsigned slot, size_t bytes)
{
    gcmpi_gpu_ctx *ctx = gcmpi_device_ctx();
    if (!ctx || slot >= GCMPI_DEV_BUF_SLOTS) return NULL;
    if (dev_pool[slot].cap >= bytes && dev_pool[slot].p) return dev_pool[slot].p;
    size_t want = grown(dev_pool[slot].cap, bytes);
    if (dev_pool[slot].p) gpu.dealloc(ctx, dev_pool[slot].p);
    dev_stats.pool_grows++;
    dev_pool[slot].p = gpu.alloc(ctx, want);
    dev_pool[slot].cap = dev_pool[slot].p ? want : 0;
    return dev_pool[slot].p;
}

void *gcmpi_device_alloc_zeroed(size_t bytes)
{
    gcmpi_device_lock();
    gcmpi_gpu_ctx *ctx = gcmpi_device_ctx();
    void *p = ctx ? gpu.alloc(ctx, bytes) : NULL;
    if (p && gc_is_error(gpu.zero(ctx, p, bytes))) {
        gpu.dealloc(ctx, p);
        p = NULL;
    }
    if (p) {
        dev_stats.residual_allocs++;
        ef_device_bytes += bytes;
        if (ef_device_bytes > dev_stats.residual_bytes_peak)
            dev_stats.residual_bytes_peak = ef_device_bytes;
    }
    gcmpi_device_unlock();
    return p;
}

void gcmpi_device_free(void *p, size_t bytes)
{
    if (!p) return;
    gcmpi_device_lock();
    if (gpu_ctx) gpu.dealloc(gpu_ctx, p);
    ef_device_bytes -= bytes;
    gcmpi_device_unlock();
}

int gcmpi_device_copy(void *dst, const void *src, size_t bytes, int count_staged)
{
    gcmpi_gpu_ctx *ctx = gcmpi_device_ctx();
    if (!ctx) return MPI_ERR_OTHER;
    double t0 = PMPI_Wtime();
    size_t r = gpu.copy(ctx, dst, src, bytes);
    dev_stats.device_s += PMPI_Wtime() - t0;
    if (count_staged) dev_stats.staged_bytes += bytes;
    return gc_is_error(r) ? MPI_ERR_OTHER : MPI_SUCCESS;
}

void gcmpi_device_teardown(void)
{
    gcmpi_device_lock();
    for (unsigned i = 0; i < GCMPI_DEV_HOST_SLOTS; i++) {
        if (host_pool[i].p) gpu.host_free(host_pool[i].p);
        host_pool[i].p = NULL;
        host_pool[i].cap = 0;
    }
    for (unsigned i = 0; i < GCMPI_DEV_BUF_SLOTS; i++) {
        if (dev_pool[i].p && gpu_ctx) gpu.dealloc(gpu_ctx, dev_pool[i].p);
        dev_pool[i].p = NULL;
        dev_pool[i].cap = 0;
    }
    /* The context stays: residuals of communicators the program never
     * freed go with PMPI_Finalize's delete callbacks, after this. The
     * library stays loaded for the same reason. */
    gcmpi_device_unlock();
}

void gcmpi_device_stats_reduce(gcmpi_device_stats *sum, MPI_Comm comm)
{
    uint64_t mine[8] = {dev_stats.calls, dev_stats.compressed, dev_stats.compressed_host,
                        dev_stats.staged, dev_stats.staged_bytes, dev_stats.passed,
                        dev_stats.residual_allocs, dev_stats.pool_grows};
    uint64_t all[8] = {0};
    double t[2] = {dev_stats.device_s, (double)dev_stats.residual_bytes_peak}, tall[2] = {0, 0};
    PMPI_Reduce(mine, all, 8, MPI_UINT64_T, MPI_SUM, 0, comm);
    PMPI_Reduce(t, tall, 2, MPI_DOUBLE, MPI_SUM, 0, comm);
    memset(sum, 0, sizeof *sum);
    sum->calls = all[0];
    sum->compressed = all[1];
    sum->compressed_host = all[2];
    sum->staged = all[3];
    sum->staged_bytes = all[4];
    sum->passed = all[5];
    sum->residual_allocs = all[6];
    sum->pool_grows = all[7];
    sum->device_s = tall[0];
    sum->residual_bytes_peak = (uint64_t)tall[1];
}
