// The access checks of a running kernel: the compiler calls __tsan_read4
// and the like (-fsanitize=thread) before each load and store of the kernel
// files, and this answers them: every access inside a device allocation (or
// the thread's own stack, or the program's data), and in shared memory no
// two threads of the block touching a byte between two barriers with one
// of them writing.
#include "emu_internal.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>

extern "C" {
extern char __executable_start[];
extern char _end[];
}

namespace emu {

const Allocation* lastHit = nullptr;

// A return address in the program's code as 32 bits (codeAddress, below, turns it back).
std::uint32_t codeOffset(const void* returnAddress) {
    return static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(returnAddress) -
                                      reinterpret_cast<std::uintptr_t>(__executable_start));
}

namespace {

// ---------------------------------------------------------------- shared memory
// One shadow entry per shared byte: who last wrote and read it, when, and
// from where (codeOffset).
struct Shadow {
    std::uint32_t generation;  // the block it was last touched in
    std::uint32_t writeInterval, readInterval;
    std::uint32_t writeWarpSync, readWarpSync;
    std::uint32_t writeCode, readCode;
    std::uint16_t writer, reader;
    std::int16_t readWarp;  // the warp of every reader in this interval, -1 for several warps
    std::uint8_t written, manyReaders;
};
Shadow* shadow = nullptr;

// The return address a codeOffset stands for.
std::uintptr_t codeAddress(std::uint32_t offset) {
    return offset ? reinterpret_cast<std::uintptr_t>(__executable_start) + offset : 0;
}

Shadow& shadowOf(const char* p) {
    if (!shadow) {
        const std::size_t n = kArenaBytes;
        void* m = mmap(nullptr, n * sizeof(Shadow), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
        if (m == MAP_FAILED) {
            std::fprintf(stderr, "emulator: cannot map the shared-memory shadow\n");
            std::exit(1);
        }
        shadow = static_cast<Shadow*>(m);
    }
    return shadow[p - arena];
}

std::string sharedName(const char* p) {
    if (p < arena + kDynamicSharedLimit) return "dynamic shared memory, byte " + std::to_string(p - arena);
    const SharedVariable* v = sharedVariableAt(p);
    if (!v) return "shared memory at " + hex(p);
    return "shared variable '" + v->name + "', byte " + std::to_string(p - v->start);
}

bool orderedInWarp(const Launch& l, int earlier, std::uint32_t warpSyncThen, int now) {
    return earlier / 32 == now / 32 && l.warpSyncs[now / 32] != warpSyncThen;
}

// A GPU refuses a kernel with more than 48 KB of static shared memory (nvcc
// at compile time): here the first block adds up the variables it touches.
void countStaticShared(Launch& l, const char* p) {
    const SharedVariable* v = sharedVariableAt(p);
    if (!v || std::find(l.sharedVariables.begin(), l.sharedVariables.end(), v) != l.sharedVariables.end()) return;
    l.sharedVariables.push_back(v);
    l.staticShared += v->bytes;
    if (l.staticShared > kStaticSharedLimit)
        faultHere(Fault::SharedSize, std::to_string(l.staticShared) +
                                         " bytes of static shared memory, more than a block's 48 KB (" +
                                         std::to_string(kStaticSharedLimit) + "), used");
}

// A write to a byte another thread wrote in the same interval, waiting for
// its store to be done: the byte as the first writer left it, and who wrote.
struct PendingWrite {
    const char* byte;
    unsigned char before;
    std::uint16_t first, second;
    std::uint32_t firstCode, secondCode;
};
std::vector<PendingWrite> pending;

// An access to shared memory outside every shared variable and past the
// launch's dynamic shared memory, in words ("" when inside): the variable
// it ran past, the element and the bound in units of the access's size.
std::string sharedOverflow(const Launch& l, const char* p, std::size_t bytes, bool write) {
    const std::string access = std::string(write ? "write" : "read") + " of " + std::to_string(bytes) + " bytes";
    if (p < arena + kDynamicSharedLimit) {
        if (static_cast<std::size_t>(p - arena) + bytes <= l.dynamicShared) return "";
        return access + " at byte " + std::to_string(p - arena) + " of dynamic shared memory, past the launch's " +
               std::to_string(l.dynamicShared) + " bytes";
    }
    const SharedVariable* v = sharedVariableAt(p);
    if (v && p + bytes <= v->start + v->bytes) return "";
    const SharedVariable* before = v ? v : sharedVariableBefore(p);
    if (!before) return access + " at " + hex(p) + ", outside every shared variable";
    const std::size_t at = static_cast<std::size_t>(p - before->start);
    return access + " at element " + std::to_string(at / bytes) + " of shared variable '" + before->name + "' (" +
           std::to_string(before->bytes / bytes) + " elements of " + std::to_string(bytes) + " bytes), past its end";
}

// A read of shared memory no thread of the block has written is no error:
// a GPU reads whatever is there (a kernel may read a slot it then leaves
// unused); here that is the poison each block starts with (startBlock), never
// zero.
void checkShared(const char* p, std::size_t bytes, bool write, const void* from) {
    Launch& l = *active;
    const int t = l.current;
    const std::uint32_t ws = l.warpSyncs[t / 32];
    const std::uint32_t code = codeOffset(from);
    for (std::size_t i = 0; i < bytes; ++i) {
        Shadow& s = shadowOf(p + i);
        if (s.generation != blockGeneration) {
            s = Shadow{};
            s.generation = blockGeneration;
            if (l.firstBlock) countStaticShared(l, p + i);
        }
        if (!write) {
            if (s.writeInterval == interval && s.writer != t && !orderedInWarp(l, s.writer, s.writeWarpSync, t))
                faultHere(Fault::Race, "shared-memory race on " + sharedName(p + i) + ": written by " +
                                           where(l, s.writer) + placeOf(codeAddress(s.writeCode)) +
                                           " and read, with no barrier between,");
            if (s.readInterval != interval) {
                s.readInterval = interval;
                s.reader = static_cast<std::uint16_t>(t);
                s.manyReaders = 0;
                s.readWarp = static_cast<std::int16_t>(t / 32);
                s.readWarpSync = ws;
                s.readCode = code;
            } else {
                if (s.reader != t) s.manyReaders = 1;
                if (s.readWarp != t / 32) s.readWarp = -1;
                s.readWarpSync = std::max(s.readWarpSync, ws);
            }
        } else {
            // Another thread's write in this interval: a race only if this one
            // changes the value (racecheck's verdict too), which settleWrites
            // sees once the store is done.
            if (s.written && s.writeInterval == interval && s.writer != t &&
                !orderedInWarp(l, s.writer, s.writeWarpSync, t))
                pending.push_back({p + i, static_cast<unsigned char>(p[i]), s.writer, static_cast<std::uint16_t>(t),
                                   s.writeCode, code});
            if (s.readInterval == interval && (s.manyReaders || s.reader != t) &&
                !(s.readWarp == t / 32 && l.warpSyncs[t / 32] > s.readWarpSync))
                faultHere(Fault::Race, "shared-memory race on " + sharedName(p + i) + ": read by " +
                          (s.manyReaders ? "several threads (the last" + placeOf(codeAddress(s.readCode)) + ")"
                                         : where(l, s.reader) + placeOf(codeAddress(s.readCode))) +
                          " and written, with no barrier between,");
            s.written = 1;
            s.writeInterval = interval;
            s.writer = static_cast<std::uint16_t>(t);
            s.writeWarpSync = ws;
            s.writeCode = code;
        }
    }
}

// ---------------------------------------------------------------- device memory
const Allocation* allocationNear(std::uintptr_t a) {
    auto it = allocations.upper_bound(a);
    const Allocation* before = it == allocations.begin() ? nullptr : &std::prev(it)->second;
    const Allocation* after = it == allocations.end() ? nullptr : &it->second;
    if (before && a < reinterpret_cast<std::uintptr_t>(before->start) + before->bytes + 4096) return before;
    if (after && reinterpret_cast<std::uintptr_t>(after->start) - a < 4096) return after;
    return nullptr;
}

// `from`: the return address of the instrumentation's call, in the kernel's
// code. The profile (EMU_PROFILE) counts what passes, but an atomic's access.
void access(const void* address, std::size_t bytes, bool write, const void* from, bool atomic = false) {
    if (!inKernel) return;
    Unchecked unchecked;
    const char* p = static_cast<const char*>(address);
    if (!settleWrites()) dropFiber();  // a race, reported
    if (inArena(p)) {
        if (std::string overflow = sharedOverflow(*active, p, bytes, write); !overflow.empty())
            faultHere(Fault::Bounds, overflow + ",");
        checkShared(p, bytes, write, from);
        if (profileOn) profileAccess(p, bytes, write, true, from);
        return;
    }
    char* stack = stacks + static_cast<std::size_t>(active->current) * kStackBytes;
    if (inRange(p, stack, stack + kStackBytes)) return;
    if (inRange(p, __executable_start, _end)) return;  // the program's own data (__device__ variables)
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    auto inside = [&](const Allocation* m) {
        return m && a >= reinterpret_cast<std::uintptr_t>(m->start) &&
               a + bytes <= reinterpret_cast<std::uintptr_t>(m->start) + m->bytes;
    };
    bool found = inside(lastHit);
    if (!found) {
        auto it = allocations.upper_bound(a);
        found = it != allocations.begin() && inside(&std::prev(it)->second);
        if (found) lastHit = &std::prev(it)->second;
    }
    if (found) {
        if (profileOn && !atomic) profileAccess(p, bytes, write, false, from);
        return;
    }
    std::ostringstream os;
    os << (write ? "write" : "read") << " of " << bytes << " bytes at " << hex(p);
    const Allocation* m = allocationNear(a);
    // 2^32 elements further on, inside a device array: an element index that wrapped below zero in 32 bits.
    const std::uintptr_t unwrapped = a + (std::uintptr_t{1} << 32) * bytes;
    const Allocation* w = m ? nullptr : holding(reinterpret_cast<const void*>(unwrapped), bytes);
    if (w && !w->device) w = nullptr;
    if (m) {
        const long long off = static_cast<long long>(a - reinterpret_cast<std::uintptr_t>(m->start));
        os << ", out of bounds: " << (off < 0 ? std::to_string(-off) + " bytes before" : std::to_string(off - static_cast<long long>(m->bytes)) + " bytes past the end of")
           << " a " << m->bytes << "-byte " << (m->device ? "device allocation" : "host allocation") << ",";
    } else if (w) {
        const auto element = (unwrapped - reinterpret_cast<std::uintptr_t>(w->start)) / bytes;
        os << ", 2^32 elements of " << bytes << " bytes before element " << element << " of a " << w->bytes
           << "-byte device allocation: an index that wrapped in 32 bits (an int where a 64-bit index is needed),";
    } else {
        os << ", which is not device memory (a host pointer? memory already freed?),";
    }
    faultHere(m || w ? Fault::Bounds : Fault::Pointer, os.str());
}

}  // namespace

const Allocation* holding(const void* p, std::size_t bytes) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    auto it = allocations.upper_bound(a);
    if (it == allocations.begin()) return nullptr;
    const Allocation& m = std::prev(it)->second;
    const auto s = reinterpret_cast<std::uintptr_t>(m.start);
    return a >= s && a + bytes <= s + m.bytes ? &m : nullptr;
}

bool settleWrites() {
    if (pending.empty()) return true;
    Unchecked unchecked;
    std::vector<PendingWrite> now;
    now.swap(pending);
    for (const PendingWrite& w : now) {
        if (static_cast<unsigned char>(*w.byte) == w.before) continue;
        reportFault(Fault::Race, "shared-memory race on " + sharedName(w.byte) + ": written by " +
                                     where(*active, w.first) + placeOf(codeAddress(w.firstCode)) +
                                     " and written again with another value, with no barrier between, by " +
                                     where(*active, w.second) + placeOf(codeAddress(w.secondCode)),
                    {}, false);
        return false;
    }
    return true;
}

void forgetWrites() { pending.clear(); }

void checkAtomic(const void* address, std::size_t bytes) {
    if (!inKernel) return;
    const char* p = static_cast<const char*>(address);
    if (inShared(p)) return;
    access(address, bytes, true, __builtin_return_address(0), true);
}

}  // namespace emu

// ---------------------------------------------------------------- the compiler's calls
// -fsanitize=thread makes the compiler call these before each load and store
// of the kernel files.
extern "C" {
void __tsan_init() {}
void __tsan_func_entry(void*) {}
void __tsan_func_exit() {}
#define EMU_TSAN_HERE __builtin_return_address(0)
#define EMU_TSAN_SIZE(n)                                                                          \
    void __tsan_read##n(void* p) { emu::access(p, n, false, EMU_TSAN_HERE); }                     \
    void __tsan_write##n(void* p) { emu::access(p, n, true, EMU_TSAN_HERE); }                     \
    void __tsan_unaligned_read##n(void* p) { emu::access(p, n, false, EMU_TSAN_HERE); }           \
    void __tsan_unaligned_write##n(void* p) { emu::access(p, n, true, EMU_TSAN_HERE); }           \
    void __tsan_volatile_read##n(void* p) { emu::access(p, n, false, EMU_TSAN_HERE); }            \
    void __tsan_volatile_write##n(void* p) { emu::access(p, n, true, EMU_TSAN_HERE); }
EMU_TSAN_SIZE(1)
EMU_TSAN_SIZE(2)
EMU_TSAN_SIZE(4)
EMU_TSAN_SIZE(8)
EMU_TSAN_SIZE(16)
#undef EMU_TSAN_SIZE
void __tsan_read_range(void* p, unsigned long n) { emu::access(p, n, false, EMU_TSAN_HERE); }
void __tsan_write_range(void* p, unsigned long n) { emu::access(p, n, true, EMU_TSAN_HERE); }
#undef EMU_TSAN_HERE
void __tsan_vptr_update(void**, void*) {}
void __tsan_vptr_read(void**) {}

// Atomics in instrumented code (a function-local static's guard, std::atomic):
// done here, unchecked.
#define EMU_TSAN_ATOMIC(bits, T)                                                                   \
    T __tsan_atomic##bits##_load(const volatile T* a, int) { return __atomic_load_n(a, __ATOMIC_SEQ_CST); } \
    void __tsan_atomic##bits##_store(volatile T* a, T v, int) { __atomic_store_n(a, v, __ATOMIC_SEQ_CST); } \
    T __tsan_atomic##bits##_exchange(volatile T* a, T v, int) { return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST); } \
    T __tsan_atomic##bits##_fetch_add(volatile T* a, T v, int) { return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST); } \
    T __tsan_atomic##bits##_fetch_sub(volatile T* a, T v, int) { return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST); } \
    T __tsan_atomic##bits##_fetch_and(volatile T* a, T v, int) { return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST); } \
    T __tsan_atomic##bits##_fetch_or(volatile T* a, T v, int) { return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST); } \
    T __tsan_atomic##bits##_fetch_xor(volatile T* a, T v, int) { return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST); } \
    T __tsan_atomic##bits##_fetch_nand(volatile T* a, T v, int) { return __atomic_fetch_nand(a, v, __ATOMIC_SEQ_CST); } \
    int __tsan_atomic##bits##_compare_exchange_strong(volatile T* a, T* c, T v, int, int) {       \
        return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);     \
    }                                                                                              \
    int __tsan_atomic##bits##_compare_exchange_weak(volatile T* a, T* c, T v, int, int) {         \
        return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);     \
    }                                                                                              \
    T __tsan_atomic##bits##_compare_exchange_val(volatile T* a, T c, T v, int, int) {             \
        __atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);           \
        return c;                                                                                  \
    }
EMU_TSAN_ATOMIC(8, std::uint8_t)
EMU_TSAN_ATOMIC(16, std::uint16_t)
EMU_TSAN_ATOMIC(32, std::uint32_t)
EMU_TSAN_ATOMIC(64, std::uint64_t)
#undef EMU_TSAN_ATOMIC
void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
void __tsan_atomic_signal_fence(int) {}
}
