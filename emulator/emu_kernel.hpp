// What kernels and launches compile to (emu_device.cpp, emu_warp.cpp,
// emu_memcheck.cpp): a launch after rewrite.py, shared memory, the built-in
// variables, barriers, warp functions, atomics and intrinsics. Part of
// emu.hpp, which includes it.
#pragma once

#include "emu_runtime.hpp"

#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

// ---------------------------------------------------------------- launches
namespace emu {

// A launch's configuration, as written between <<< and >>>.
struct Config {
    dim3 grid, block;
    std::size_t shared = 0;
    cudaStream_t stream = nullptr;
    Config(dim3 g, dim3 b, std::size_t s = 0, cudaStream_t st = nullptr) : grid(g), block(b), shared(s), stream(st) {}
};

// Runs a launch (emu_device.cpp): every thread gets its own byte copy of
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
