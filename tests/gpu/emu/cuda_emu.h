/* cuda_emu.h — just enough of CUDA, on the host, to run the kernels of gpu/
 * (every .cu) and runtime calls without a GPU (build-emu-lib.sh makes
 * libgcmpi_gpu_emu.so of them; tests/gpu/meson.build).
 *
 * It checks the parts a machine without a GPU can check: body layouts,
 * bucket / chunk / plane-byte index mapping, the lane-tree summation order,
 * host orchestration and error paths. It does NOT check CUDA itself: float
 * intrinsics are the host's SSE operations (so the x86 NaN emulation is
 * trivially right here), "device memory" is malloc, every launch is
 * synchronous. Kernels that use __syncthreads or shuffles run their CUDA
 * threads as fibers switched at each barrier (emu_run_block_fibers); the
 * others run their threads one after another. There is no grid-wide synchronisation
 * (cooperative launch): the kernels of gpu/ do not use it, a step that
 * needs the whole grid is a kernel launch of its own. */
#ifndef CUDA_EMU_H
#define CUDA_EMU_H

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <setjmp.h>
#include <time.h>
#include <ucontext.h>

#define __global__
#define __device__
#define __host__
#define __shared__ static

struct emu_dim3 { unsigned x = 1, y = 1, z = 1; };
inline emu_dim3 threadIdx, blockIdx;
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
/* By address alone: to gcc a const pointer to a fresh malloc handed to a
 * function reads as a read of uninitialised memory. */
inline bool emu_is_device(uintptr_t u)
{
    auto it = emu_allocs().upper_bound(u);
    if (it == emu_allocs().begin()) return false;
    --it;
    return u < it->first + it->second;
}
/* CUDA_EMU_COPY_GBPS=R (GB/s, R > 0): a copy between host and "device"
 * memory also waits as long as R GB/s would take, a bus much slower than
 * memcpy, so tests can see who pays for host<->device copies (auto's
 * trial timing the staging of a passthrough call). */
inline void emu_bus_wait(uintptr_t d, uintptr_t s, size_t n)
{
    static const double rate = [] {
        const char *v = std::getenv("CUDA_EMU_COPY_GBPS");
        return v ? std::atof(v) * 1e9 : 0.0;
    }();
    if (!(rate > 0) || emu_is_device(d) == emu_is_device(s)) return;
    const double seconds = (double)n / rate;
    struct timespec t = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    while (nanosleep(&t, &t) != 0) {}
}
inline cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind, cudaStream_t)
{
    emu_bus_wait((uintptr_t)d, (uintptr_t)s, n);
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
inline double __dsqrt_rn(double d) { return __builtin_sqrt(d); }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline long long __double_as_longlong(double d) { long long u; std::memcpy(&u, &d, 8); return u; }
inline double __longlong_as_double(long long u) { double d; std::memcpy(&d, &u, 8); return d; }
inline unsigned atomicOr(unsigned *p, unsigned v) { unsigned o = *p; *p = o | v; return o; }
inline unsigned atomicAdd(unsigned *p, unsigned v) { unsigned o = *p; *p = o + v; return o; }
inline unsigned long long atomicOr(unsigned long long *p, unsigned long long v) { unsigned long long o = *p; *p = o | v; return o; }
inline unsigned atomicMax(unsigned *p, unsigned v) { unsigned o = *p; *p = o > v ? o : v; return o; }
inline unsigned long long atomicMin(unsigned long long *p, unsigned long long v) { unsigned long long o = *p; *p = o < v ? o : v; return o; }
inline unsigned long long atomicCAS(unsigned long long *p, unsigned long long cmp, unsigned long long v)
{
    unsigned long long o = *p;
    if (o == cmp) *p = v;
    return o;
}
/* Blocks run one after another here, so memory is always ordered. */
inline void __threadfence() {}
inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
inline int __float2int_rn(float x) { return (int)__builtin_nearbyintf(x); }
inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b)
{
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}

/* Kernels with block barriers run their CUDA threads as fibers on one host
 * thread: __syncthreads switches back to the scheduler, which runs every
 * thread of the block up to its next barrier in turn, so a barrier costs a
 * context switch in user space, not a futex wait. A fiber is made once
 * (ucontext, entered at once up to its first yield) and kept for every
 * later block and launch; switches are _setjmp/_longjmp, which leave the
 * signal mask alone: swapcontext's two sigprocmask calls a switch, and
 * stacks freed and zeroed again whenever a launch's block was smaller
 * than the last, took most of a topk device test's 34 s. */
struct emu_fiber {
    jmp_buf at; /* where it stopped */
    std::unique_ptr<char[]> stack;
};
struct emu_fibers {
    jmp_buf main;
    std::vector<emu_fiber> fiber;
    std::vector<char> done;
    const std::function<void()> *body = nullptr;
    unsigned cur = 0;
};
inline emu_fibers emu_fib;
inline float emu_shfl[1024];

/* Back to the scheduler; on return the scheduler has resumed this fiber. */
__attribute__((noinline)) inline void emu_fiber_yield()
{
    if (!_setjmp(emu_fib.fiber[emu_fib.cur].at)) _longjmp(emu_fib.main, 1);
}
inline void __syncthreads() { emu_fiber_yield(); }
inline float __shfl_down_sync(unsigned, float v, unsigned d)
{
    unsigned t = threadIdx.x, lane = t % 32;
    emu_shfl[t] = v;
    __syncthreads();
    float r = (lane + d < 32 && t + d < blockDim.x) ? emu_shfl[t + d] : v;
    __syncthreads();
    return r;
}

/* A fiber waits to be resumed, then runs the body of that block. */
inline void emu_fiber_entry()
{
    for (;;) {
        emu_fiber_yield();
        (*emu_fib.body)();
        emu_fib.done[emu_fib.cur] = 1;
    }
}

/* Runs the new fiber c up to its first yield. */
__attribute__((noinline)) inline void emu_fiber_start(ucontext_t *c)
{
    if (!_setjmp(emu_fib.main)) setcontext(c);
}

inline void emu_fibers_grow(unsigned block)
{
    emu_fibers &e = emu_fib;
    const size_t stack_bytes = 256 * 1024;
    for (size_t t = e.fiber.size(); t < block; t++) {
        e.fiber.emplace_back();
        e.fiber.back().stack.reset(new char[stack_bytes]);
        ucontext_t c;
        getcontext(&c);
        c.uc_stack.ss_sp = e.fiber.back().stack.get();
        c.uc_stack.ss_size = stack_bytes;
        c.uc_link = nullptr; /* never returns */
        makecontext(&c, emu_fiber_entry, 0);
        e.cur = (unsigned)t;
        emu_fiber_start(&c);
    }
}

/* Runs fiber t up to its next barrier or the end of its body. */
__attribute__((noinline)) inline void emu_fiber_resume(unsigned t)
{
    if (!_setjmp(emu_fib.main)) _longjmp(emu_fib.fiber[t].at, 1);
}

inline void emu_run_block_fibers(unsigned block, const std::function<void()> &f)
{
    emu_fibers &e = emu_fib;
    emu_fibers_grow(block);
    e.done.assign(block, 0);
    e.body = &f;
    for (unsigned live = block; live > 0;) {
        live = 0;
        for (unsigned t = 0; t < block; t++) {
            if (e.done[t]) continue;
            e.cur = t;
            threadIdx.x = t;
            emu_fiber_resume(t);
            live += !e.done[t];
        }
    }
}

template <class F>
inline void emu_launch(const char *name, unsigned grid, unsigned block, F f)
{
    EMU_OPEN;
    gridDim.x = grid;
    blockDim.x = block;
    /* Kernels with block barriers or shuffles are named k_..._sync. */
    const size_t len = std::strlen(name);
    const bool coop = len > 5 && !std::strcmp(name + len - 5, "_sync");
    const std::function<void()> body = f;
    for (unsigned b = 0; b < grid; b++) {
        blockIdx.x = b;
        if (coop) {
            emu_run_block_fibers(block, body);
            continue;
        }
        for (unsigned t = 0; t < block; t++) {
            threadIdx.x = t;
            f();
        }
    }
}
/* Page-locked host memory (gpu_staging.cu): plain host memory here, which
 * emulated kernels address as it is (mapped, as on a GPU with UVA). */
enum { cudaHostAllocDefault = 0, cudaHostAllocMapped = 2 };
inline cudaError_t cudaHostGetDevicePointer(void **d, void *h, unsigned)
{
    *d = h;
    return cudaSuccess;
}
inline cudaError_t cudaHostAlloc(void **p, size_t n, unsigned)
{
    *p = std::malloc(n ? n : 1);
    return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
inline cudaError_t cudaFreeHost(void *p) { std::free(p); return cudaSuccess; }

#define EMU_LAUNCH(k, g, b, s, st, ...) \
    ((void)(s), (void)(st), emu_launch(#k, (g), (b), [&]() { k(__VA_ARGS__); }))

#endif
