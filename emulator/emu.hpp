// CUDA on the CPU, for `make test EMULATE=1`: the part of CUDA the lab and a
// student's kernels use, run by host threads of our own.
//
// Every source file of an emulated build is compiled by the host compiler
// with this header included first (the Makefile's -include), after
// emulator/rewrite.py has turned each launch `k<<<grid, block>>>(args)` into
// a call of emu::launch. Kernels and device functions are then ordinary
// host functions; emu.cpp runs a launch block after block, each CUDA thread
// a fiber (ucontext), and switches fibers at every barrier and warp
// operation. The kernel files are compiled with -fsanitize=thread, which
// makes the compiler call __tsan_read4(address) and the like before every
// load and store: emu.cpp answers those calls itself (no ThreadSanitizer
// runtime is linked) and checks each access of a running kernel: inside a
// device allocation, shared memory written before it is read, no two threads
// touching the same shared byte between two barriers with one writing.
//
// What it cannot show: warp timing, memory ordering between blocks, speed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

#define LAB_EMULATED 1

// ---------------------------------------------------------------- qualifiers
// Kernels stay real functions (never inlined into their launch), as on a GPU:
// a fault's report names one by its symbol, template arguments and all.
#define __global__ __attribute__((__noinline__))
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __forceinline__ __attribute__((always_inline))

#define __restrict__ __restrict
#define __launch_bounds__(...)
// rewrite.py turns each `__shared__ T name[N];` into a reference to the
// emulator's shared memory (emu::sharedVariableRef); what it cannot read
// stays an unchecked static variable.
#define __shared__ static

// ---------------------------------------------------------------- types
struct uint3 {
    unsigned x, y, z;
};
struct dim3 {
    unsigned x = 1, y = 1, z = 1;
    constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return {x, y, z}; }
};

enum cudaError_t {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInitializationError = 3,
    cudaErrorLaunchFailure = 4,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidDevicePointer = 17,
    cudaErrorInvalidMemcpyDirection = 21,
    cudaErrorInsufficientDriver = 35,
    cudaErrorNoDevice = 100,
    cudaErrorIllegalAddress = 700,
    cudaErrorLaunchOutOfResources = 701,
    cudaErrorNotSupported = 801,
    cudaErrorUnknown = 999,
};
using cudaError = cudaError_t;

enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4,
};

struct CUstream_st;
struct CUevent_st;
struct CUmemPoolHandle_st;
using cudaStream_t = CUstream_st*;
using cudaEvent_t = CUevent_st*;
using cudaMemPool_t = CUmemPoolHandle_st*;

enum cudaMemPoolAttr { cudaMemPoolAttrReleaseThreshold = 4 };

enum { cudaHostAllocDefault = 0, cudaHostAllocPortable = 1, cudaHostAllocMapped = 2, cudaHostRegisterDefault = 0,
       cudaHostRegisterMapped = 2, cudaMemAttachGlobal = 1 };

enum cudaLaunchAttributeID { cudaLaunchAttributeProgrammaticStreamSerialization = 5 };
struct cudaLaunchAttributeValue {
    unsigned programmaticStreamSerializationAllowed = 0;
};
struct cudaLaunchAttribute {
    cudaLaunchAttributeID id{};
    cudaLaunchAttributeValue val{};
};
struct cudaLaunchConfig_t {
    dim3 gridDim, blockDim;
    std::size_t dynamicSmemBytes = 0;
    cudaStream_t stream = nullptr;
    cudaLaunchAttribute* attrs = nullptr;
    unsigned numAttrs = 0;
};

struct cudaDeviceProp {
    char name[256];
    std::size_t totalGlobalMem;
    std::size_t sharedMemPerBlock;
    std::size_t sharedMemPerBlockOptin;
    std::size_t sharedMemPerMultiprocessor;
    int regsPerBlock;
    int warpSize;
    int maxThreadsPerBlock;
    int maxThreadsDim[3];
    int maxGridSize[3];
    int clockRate;
    int major;
    int minor;
    int multiProcessorCount;
    int maxThreadsPerMultiProcessor;
    int maxBlocksPerMultiProcessor;
    int l2CacheSize;
    int memoryClockRate;
    int memoryBusWidth;
    int integrated;
    int canMapHostMemory;
    int concurrentKernels;
    int computeMode;
    int pciBusID;
    int pciDeviceID;
};

// ---------------------------------------------------------------- runtime API
cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaDeviceReset();
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
const char* cudaGetErrorString(cudaError_t err);
const char* cudaGetErrorName(cudaError_t err);
cudaError_t cudaMemGetInfo(std::size_t* free, std::size_t* total);

cudaError_t cudaMalloc(void** ptr, std::size_t bytes);
cudaError_t cudaFree(void* ptr);
cudaError_t cudaMallocAsync(void** ptr, std::size_t bytes, cudaStream_t stream);
cudaError_t cudaFreeAsync(void* ptr, cudaStream_t stream);
cudaError_t cudaMallocManaged(void** ptr, std::size_t bytes, unsigned flags = cudaMemAttachGlobal);
cudaError_t cudaMallocHost(void** ptr, std::size_t bytes);
cudaError_t cudaHostAlloc(void** ptr, std::size_t bytes, unsigned flags);
cudaError_t cudaFreeHost(void* ptr);
cudaError_t cudaHostRegister(void* ptr, std::size_t bytes, unsigned flags);
cudaError_t cudaHostUnregister(void* ptr);
cudaError_t cudaHostGetDevicePointer(void** device, void* host, unsigned flags);
cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream = nullptr);
cudaError_t cudaMemset(void* dst, int value, std::size_t bytes);
cudaError_t cudaMemsetAsync(void* dst, int value, std::size_t bytes, cudaStream_t stream = nullptr);
cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int device);
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value);

cudaError_t cudaStreamCreate(cudaStream_t* stream);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = nullptr);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);

// ---------------------------------------------------------------- the emulator
namespace emu {

// A launch's configuration, as written between <<< and >>>.
struct Config {
    dim3 grid, block;
    std::size_t shared = 0;
    cudaStream_t stream = nullptr;
    Config(dim3 g, dim3 b, std::size_t s = 0, cudaStream_t st = nullptr) : grid(g), block(b), shared(s), stream(st) {}
};

// Runs a launch (emu.cpp): every thread gets its own byte copy of
// `closure` (a kernel's parameters are trivially copyable) in memory of its
// own and calls body(copy). `name`: the kernel as written at the launch.
using Body = void (*)(void* closure);
void run(const char* name, const Config& config, Body body, const void* closure, std::size_t bytes);

// k<<<config>>>(args) after rewrite.py: the arguments are evaluated once and
// converted to copies as a kernel's parameters are; every thread calls the
// kernel with its own copy.
template <class Call, class... Args>
void launch(const char* name, const Config& config, Call call, Args&&... args) {
    struct Closure {
        Call call;
        std::tuple<std::decay_t<Args>...> params;
    } closure{call, std::tuple<std::decay_t<Args>...>(std::forward<Args>(args)...)};
    run(name, config, [](void* c) { std::apply(static_cast<Closure*>(c)->call, static_cast<Closure*>(c)->params); },
        &closure, sizeof(Closure));
}

// The kernel's own name, from the executable's symbol table (for launches
// through cudaLaunchKernelEx, which pass a function pointer).
const char* kernelName(const void* function);

// The launch's dynamic shared memory (extern __shared__, after rewrite.py).
void* dynamicShared();

// A __shared__ variable's place (after rewrite.py): made on first use, one
// per variable and template instantiation (`slot` is a static of its own).
void* sharedVariable(std::size_t bytes, std::size_t alignment, const char* name);
template <class T>
T& sharedVariableRef(void*& slot, const char* name) {
    if (!slot) slot = sharedVariable(sizeof(T), alignof(T), name);
    return *static_cast<T*>(slot);
}

// Barriers and warp operations: each waits for the threads it names.
void syncthreads();
int syncthreadsCount(int predicate);
int syncthreadsAnd(int predicate);
int syncthreadsOr(int predicate);
void syncwarp(unsigned mask);
unsigned ballot(unsigned mask, int predicate);
unsigned activemask();
unsigned long long shuffle(unsigned mask, unsigned long long value, int kind, int lane, int width);

// An access the compiler does not instrument (atomics): bounds only.
void checkAtomic(const void* address, std::size_t bytes);

// The log the graders' trace reads (tests/trace_emulated.cpp).
void recordLaunches(bool on);
const char* launchName(std::size_t i);
long long launchBlocks(std::size_t i);
int launchThreads(std::size_t i);
std::size_t launchCount();
std::size_t hostCopyCount();
const char* hostCopy(std::size_t i);
std::size_t hostMemoryCallCount();
const char* hostMemoryCall(std::size_t i);
const char* faultMessage();  // the last fault, "" if none (or cleared)
std::size_t faultCount();    // the faults so far

// A fresh start after a fault: the errors and the fault message cleared, the
// device usable again (its allocations stay; memory freed after the fault is
// back). On a GPU, a fault spoils the rest of the process; the graders call
// this at the start of each test case, so that one fault fails one test case
// (as in grading, where each runs in a process of its own).
void clearFault();

// The test case running now, named after each fault's report while this
// lives (the graders give their context: the seed and the sizes).
class CaseContext {
public:
    explicit CaseContext(const char* text);
    ~CaseContext();
    CaseContext(const CaseContext&) = delete;
    CaseContext& operator=(const CaseContext&) = delete;
};

// The order threads run between barriers (EMU_ORDER) and its seed.
const char* describe();

}  // namespace emu

// ---------------------------------------------------------------- built-ins
// Set by the emulator whenever it switches to another thread or block.
extern uint3 threadIdx;
extern uint3 blockIdx;
extern dim3 blockDim;
extern dim3 gridDim;
constexpr int warpSize = 32;

inline void __syncthreads() { emu::syncthreads(); }
inline int __syncthreads_count(int p) { return emu::syncthreadsCount(p); }
inline int __syncthreads_and(int p) { return emu::syncthreadsAnd(p); }
inline int __syncthreads_or(int p) { return emu::syncthreadsOr(p); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { emu::syncwarp(mask); }
inline unsigned __ballot_sync(unsigned mask, int p) { return emu::ballot(mask, p); }
inline int __any_sync(unsigned mask, int p) { return emu::ballot(mask, p) != 0; }
inline int __all_sync(unsigned mask, int p) { return emu::ballot(mask, p) == (mask & emu::activemask()); }
inline unsigned __activemask() { return emu::activemask(); }
inline void __threadfence() {}
inline void __threadfence_block() {}
inline void __nanosleep(unsigned) {}
long long clock64();  // nanoseconds of the host's steady clock

namespace emu {
enum { kShflIdx, kShflUp, kShflDown, kShflXor };
template <class T>
T shuffleAs(unsigned mask, T value, int kind, int lane, int width) {
    static_assert(sizeof(T) <= 8, "warp shuffles move values of at most 8 bytes");
    unsigned long long bits = 0;
    __builtin_memcpy(&bits, &value, sizeof(T));
    bits = shuffle(mask, bits, kind, lane, width);
    __builtin_memcpy(&value, &bits, sizeof(T));
    return value;
}
}  // namespace emu
template <class T>
T __shfl_sync(unsigned mask, T v, int lane, int width = 32) { return emu::shuffleAs(mask, v, emu::kShflIdx, lane, width); }
template <class T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
    return emu::shuffleAs(mask, v, emu::kShflUp, static_cast<int>(delta), width);
}
template <class T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
    return emu::shuffleAs(mask, v, emu::kShflDown, static_cast<int>(delta), width);
}
template <class T>
T __shfl_xor_sync(unsigned mask, T v, int laneMask, int width = 32) {
    return emu::shuffleAs(mask, v, emu::kShflXor, laneMask, width);
}

// Atomics: a fiber is never interrupted, so a plain read-modify-write is
// atomic; they stay out of the race check (as on a GPU) but not of the
// bounds check.
#define EMU_ATOMIC(name, expr)                                                  \
    template <class T, class U>                                                 \
    __attribute__((no_sanitize_thread)) T name(T* p, U v) {                     \
        emu::checkAtomic(p, sizeof(T));                                         \
        const T old = *p;                                                       \
        *p = (expr);                                                            \
        return old;                                                             \
    }
EMU_ATOMIC(atomicAdd, static_cast<T>(old + v))
EMU_ATOMIC(atomicSub, static_cast<T>(old - v))
EMU_ATOMIC(atomicMin, static_cast<T>(v < old ? v : old))
EMU_ATOMIC(atomicMax, static_cast<T>(old < v ? v : old))
EMU_ATOMIC(atomicAnd, static_cast<T>(old & v))
EMU_ATOMIC(atomicOr, static_cast<T>(old | v))
EMU_ATOMIC(atomicXor, static_cast<T>(old ^ v))
EMU_ATOMIC(atomicExch, static_cast<T>(v))
#undef EMU_ATOMIC
template <class T, class U, class V>
__attribute__((no_sanitize_thread)) T atomicCAS(T* p, U compare, V v) {
    emu::checkAtomic(p, sizeof(T));
    const T old = *p;
    if (old == static_cast<T>(compare)) *p = static_cast<T>(v);
    return old;
}

inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x)); }
inline unsigned __brev(unsigned x) {
    unsigned r = 0;
    for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
    return r;
}
template <class T>
T __ldg(const T* p) { return *p; }

// CUDA's device min and max, for any two arithmetic types.
template <class A, class B, class = std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B>>>
std::common_type_t<A, B> min(A a, B b) { return b < a ? b : a; }
template <class A, class B, class = std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B>>>
std::common_type_t<A, B> max(A a, B b) { return a < b ? b : a; }

// Programmatic dependent launch: kernels run one after another here anyway.
inline void cudaGridDependencySynchronize() {}
inline void cudaTriggerProgrammaticLaunchCompletion() {}

template <class... Params, class... Args>
cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t* config, void (*kernel)(Params...), Args&&... args) {
    emu::launch(emu::kernelName(reinterpret_cast<const void*>(kernel)),
                emu::Config(config->gridDim, config->blockDim, config->dynamicSmemBytes, config->stream),
                [kernel](Params... p) { kernel(p...); }, static_cast<Params>(std::forward<Args>(args))...);
    return cudaPeekAtLastError();
}
