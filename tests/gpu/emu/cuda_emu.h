/* cuda_emu.h — just enough of CUDA, on the host, to run gpu/gcmpi_gpu.cu's
 * kernels and runtime calls without a GPU (tests/gpu/emu/run-emulated.sh).
 *
 * It checks the parts a machine without a GPU can check: body layouts,
 * bucket / chunk / plane-byte index mapping, the lane-tree summation order,
 * host orchestration and error paths. It does NOT check CUDA itself: float
 * intrinsics are the host's SSE operations (so the x86 NaN emulation is
 * trivially right here), "device memory" is malloc, every launch is
 * synchronous. Kernels that use __syncthreads or shuffles run one host
 * thread per CUDA thread with a block barrier; the others run their
 * threads one after another. */
#ifndef CUDA_EMU_H
#define CUDA_EMU_H

#include <atomic>
#include <barrier>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __shared__ static

struct emu_dim3 { unsigned x = 1, y = 1, z = 1; };
inline thread_local emu_dim3 threadIdx, blockIdx;
inline emu_dim3 blockDim, gridDim;

typedef int cudaError_t;
enum { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2 };
typedef void *cudaStream_t;
typedef void *cudaMemPool_t;
enum cudaMemcpyKind { cudaMemcpyHostToHost, cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost,
                      cudaMemcpyDeviceToDevice, cudaMemcpyDefault };
enum cudaMemoryType { cudaMemoryTypeUnregistered, cudaMemoryTypeHost, cudaMemoryTypeDevice,
                      cudaMemoryTypeManaged };
struct cudaPointerAttributes { cudaMemoryType type; };
enum { cudaMemAllocationTypePinned = 1, cudaMemLocationTypeDevice = 1,
       cudaMemPoolAttrReleaseThreshold = 4 };
struct cudaMemPoolProps { int allocType; struct { int type; int id; } location; };

/* "device" allocations: base -> size */
inline std::map<uintptr_t, size_t> &emu_allocs() { static std::map<uintptr_t, size_t> m; return m; }

/* CUDA_EMU_PROTECT (libgcmpi_gpu_emu.so, build-emu-lib.sh): "device"
 * memory is mapped PROT_NONE except while an emulated kernel, copy or
 * memset runs, so any host access to it (by the shim, say) crashes, as it
 * would on a real GPU. EMU_OPEN opens every allocation for one scope. */
#ifdef CUDA_EMU_PROTECT
#include <sys/mman.h>
inline size_t emu_pages(size_t n) { return ((n ? n : 1) + 4095) & ~(size_t)4095; }
inline int emu_open_depth;
inline void emu_protect_all(int prot)
{
    for (auto &a : emu_allocs()) mprotect((void *)a.first, emu_pages(a.second), prot);
}
struct emu_open_scope {
    emu_open_scope() { if (emu_open_depth++ == 0) emu_protect_all(PROT_READ | PROT_WRITE); }
    ~emu_open_scope() { if (--emu_open_depth == 0) emu_protect_all(PROT_NONE); }
};
#define EMU_OPEN emu_open_scope emu_open_scope_guard
#else
#define EMU_OPEN
#endif

inline cudaError_t cudaGetDeviceCount(int *c) { *c = 1; return cudaSuccess; }
inline cudaError_t cudaGetDevice(int *d) { *d = 0; return cudaSuccess; }
inline cudaError_t cudaGetLastError() { return cudaSuccess; }
inline cudaError_t cudaStreamCreate(cudaStream_t *s) { *s = (void *)1; return cudaSuccess; }
inline cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaMemPoolCreate(cudaMemPool_t *p, const cudaMemPoolProps *) { *p = (void *)1; return cudaSuccess; }
inline cudaError_t cudaMemPoolDestroy(cudaMemPool_t) { return cudaSuccess; }
inline cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t, int, void *) { return cudaSuccess; }
inline cudaError_t cudaMallocFromPoolAsync(void **p, size_t n, cudaMemPool_t, cudaStream_t)
{
    /* Poison, so a kernel that leaves a byte unwritten shows up. */
#ifdef CUDA_EMU_PROTECT
    *p = mmap(nullptr, emu_pages(n), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (*p == MAP_FAILED) { *p = nullptr; return cudaErrorMemoryAllocation; }
    std::memset(*p, 0xA5, n);
    emu_allocs()[(uintptr_t)*p] = n;
    if (emu_open_depth == 0) mprotect(*p, emu_pages(n), PROT_NONE);
#else
    *p = std::malloc(n);
    if (!*p) return cudaErrorMemoryAllocation;
    std::memset(*p, 0xA5, n);
    emu_allocs()[(uintptr_t)*p] = n;
#endif
    return cudaSuccess;
}
template <class T>
inline cudaError_t cudaMallocAsync(T **p, size_t n, cudaMemPool_t pool, cudaStream_t s)
{
    return cudaMallocFromPoolAsync((void **)p, n, pool, s);
}
inline cudaError_t cudaFreeAsync(void *p, cudaStream_t)
{
    auto it = emu_allocs().find((uintptr_t)p);
    if (it == emu_allocs().end()) return cudaErrorInvalidValue;
#ifdef CUDA_EMU_PROTECT
    munmap(p, emu_pages(it->second));
#else
    std::free(p);
#endif
    emu_allocs().erase(it);
    return cudaSuccess;
}
inline cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *a, const void *p)
{
    uintptr_t u = (uintptr_t)p;
    auto it = emu_allocs().upper_bound(u);
    a->type = cudaMemoryTypeUnregistered;
    if (it != emu_allocs().begin()) {
        --it;
        if (u < it->first + it->second) a->type = cudaMemoryTypeDevice;
    }
    return cudaSuccess;
}
inline cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind, cudaStream_t)
{
    EMU_OPEN;
    std::memmove(d, s, n);
    return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void *d, int v, size_t n, cudaStream_t)
{
    EMU_OPEN;
    std::memset(d, v, n);
    return cudaSuccess;
}

inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline float __double2float_rn(double d) { return (float)d; }
inline unsigned atomicOr(unsigned *p, unsigned v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }

inline std::barrier<> *emu_bar;
inline float emu_shfl[1024];
inline void __syncthreads() { emu_bar->arrive_and_wait(); }
inline float __shfl_down_sync(unsigned, float v, unsigned d)
{
    unsigned t = threadIdx.x, lane = t % 32;
    emu_shfl[t] = v;
    emu_bar->arrive_and_wait();
    float r = (lane + d < 32 && t + d < blockDim.x) ? emu_shfl[t + d] : v;
    emu_bar->arrive_and_wait();
    return r;
}

template <class F>
inline void emu_launch(const char *name, unsigned grid, unsigned block, F f)
{
    EMU_OPEN;
    gridDim.x = grid;
    blockDim.x = block;
    const bool coop = !std::strcmp(name, "k_int8_scales") || !std::strcmp(name, "k_sign_chunks");
    for (unsigned b = 0; b < grid; b++) {
        if (!coop) {
            blockIdx.x = b;
            for (unsigned t = 0; t < block; t++) {
                threadIdx.x = t;
                f();
            }
            continue;
        }
        std::barrier<> bar((std::ptrdiff_t)block);
        emu_bar = &bar;
        std::vector<std::thread> th;
        for (unsigned t = 0; t < block; t++)
            th.emplace_back([&, t] {
                blockIdx.x = b;
                threadIdx.x = t;
                f();
            });
        for (auto &x : th) x.join();
    }
}
/* Page-locked host memory (gpu_staging.cu): plain host memory here. */
enum { cudaHostAllocDefault = 0 };
inline cudaError_t cudaHostAlloc(void **p, size_t n, unsigned)
{
    *p = std::malloc(n ? n : 1);
    return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
inline cudaError_t cudaFreeHost(void *p) { std::free(p); return cudaSuccess; }

#define EMU_LAUNCH(k, g, b, s, st, ...) emu_launch(#k, (g), (b), [&]() { k(__VA_ARGS__); })

#endif
