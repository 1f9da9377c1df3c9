// What the emulator's own files (emu_*.cpp) share: its limits, the state of
// the emulated device, and what each file offers the others. Those files are
// compiled without -fsanitize=thread: nothing in them is checked, and they
// answer the checks of the kernel files. The lab's code never includes this.
#pragma once

#include "emu.hpp"

#include <ucontext.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace emu {

// ---------------------------------------------------------------- limits
constexpr int kMaxThreads = 1024;
constexpr std::size_t kStaticSharedLimit = 48 * 1024;
constexpr std::size_t kDynamicSharedLimit = 48 * 1024;
constexpr std::size_t kStackBytes = 256 * 1024;  // per CUDA thread, parameters included
constexpr std::size_t kParamBytes = 32 * 1024;   // at the top of each stack
constexpr std::size_t kArenaBytes = 64 << 20;    // all shared memory (emu_device.cpp)
constexpr std::size_t kSharedGap = 1024;         // unused bytes after each shared variable

inline bool inRange(const void* p, const void* lo, const void* hi) {
    return reinterpret_cast<std::uintptr_t>(p) >= reinterpret_cast<std::uintptr_t>(lo) &&
           reinterpret_cast<std::uintptr_t>(p) < reinterpret_cast<std::uintptr_t>(hi);
}

// ---------------------------------------------------------------- errors and the trace log (emu_runtime.cpp)
extern cudaError_t lastError;    // cleared by cudaGetLastError
extern cudaError_t stickyError;  // a kernel fault: every later call returns it (until clearFault)

struct Log {
    bool on = false;
    std::vector<std::string> names;
    std::vector<long long> blocks;
    std::vector<int> threads;
    std::vector<std::string> copies;
    std::vector<std::string> memoryCalls;
};
extern Log trace;

// ---------------------------------------------------------------- device memory (emu_runtime.cpp)
struct Allocation {
    char* start;
    std::size_t bytes;
    char* mapping;
    std::size_t mapped;
    bool device;  // false: host memory visible to kernels (pinned, mapped, managed, registered)
};
extern std::map<std::uintptr_t, Allocation> allocations;  // by start
const Allocation* holding(const void* p, std::size_t bytes);  // the allocation holding all of [p, p + bytes)
extern const Allocation* lastHit;  // the bounds check's last find (emu_memcheck.cpp): forgotten with its allocation

// Device memory is readable only while the emulator itself touches it (a
// launch, a copy), so that host code dereferencing a device pointer crashes.
void deviceMemoryOpen(bool open);

// ---------------------------------------------------------------- shared memory (emu_device.cpp)
// One arena, the launch's dynamic shared memory at its start, then every
// __shared__ variable of the program (rewrite.py turns each into a reference
// to its place here, made on first use). Blocks run one at a time, so one
// copy of each serves them all.
struct SharedVariable {
    const char* start;
    std::size_t bytes;
    std::string name;
};
extern char* arena;
extern std::size_t arenaUsed;

inline bool inShared(const void* p) { return arena && inRange(p, arena, arena + arenaUsed); }
inline bool inArena(const void* p) { return arena && inRange(p, arena, arena + kArenaBytes); }
const SharedVariable* sharedVariableAt(const char* p);
const SharedVariable* sharedVariableBefore(const char* p);  // the last one that starts before p

// ---------------------------------------------------------------- threads and launches (emu_device.cpp)
enum class State { Ready, AtBarrier, AtWarp, Done };
enum class Barrier { Plain, Count, And, Or };

struct Thread {
    ucontext_t context;
    State state = State::Ready;
    Barrier barrier = Barrier::Plain;
    int predicate = 0, result = 0;
    // a warp operation: 0 syncwarp, 1 ballot, 2 shuffle
    int warpOp = 0, shuffleKind = 0, shuffleLane = 0, shuffleWidth = 32;
    unsigned mask = 0;
    unsigned long long value = 0, warpResult = 0;
};

struct Launch {
    const char* name = "";
    dim3 grid, block;
    int threads = 0;
    uint3 blockIndex{0, 0, 0};
    Body body = nullptr;
    std::size_t closureBytes = 0;
    const void* closure = nullptr;
    std::vector<Thread> thread;
    int current = -1;
    bool aborted = false;
    std::uint32_t warpSyncs[kMaxThreads / 32] = {};
    bool firstBlock = true;
    std::size_t dynamicShared = 0;
    std::vector<const SharedVariable*> sharedVariables;  // the static shared variables it touched
    std::size_t staticShared = 0;              // their bytes
    bool capturing = false;                    // stackOf: a waiting thread reports its stack
    std::vector<std::uintptr_t> captured;      // ... here
};

extern Launch* active;       // the launch running now, if any
extern bool inKernel;        // a fiber is running (the access checks are on)
extern ucontext_t scheduler;
extern char* stacks;         // kMaxThreads stacks, each with a guard page below

extern std::uint32_t blockGeneration;  // one per block run: shared memory starts unwritten
extern bool sparse;                    // a SparseRun lives (emu.hpp)
extern std::uint32_t interval;         // one per block start and per barrier

inline Thread& me() { return active->thread[active->current]; }

// The emulator's own work inside a kernel's thread (a check, a message, a
// new shared variable) goes unchecked: the library code it calls may be the
// instrumented copy the linker took from a kernel file.
struct Unchecked {
    bool was = inKernel;
    Unchecked() { inKernel = false; }
    ~Unchecked() { inKernel = was; }
};

// From a thread: back to the scheduler until it resumes this thread.
void yieldToScheduler();
// The stack of a thread waiting at a barrier or warp operation (from the
// scheduler, after a fault): it wakes up just to read it.
std::vector<std::uintptr_t> stackOf(Launch& l, int t);

// ---------------------------------------------------------------- barriers and warps (emu_warp.cpp)
// From the scheduler, when no thread of the block is ready: the warps whose
// every named thread waits go on (true if any did); else the block's barrier
// completes (false, the fault reported, when it cannot).
bool releaseWarps(Launch& l);
bool releaseBlock(Launch& l);

// ---------------------------------------------------------------- source lines (emu_source.cpp)
struct SourceFrame {
    std::string function;  // demangled, in full (shortFunction shortens it)
    std::string file;      // in the lab: "part1_merge_path/student.cu"; outside it (a system header): absolute
    int line = 0;
};

// The lines of the kernel's own code in a stack, and the kernel they are in
// (empty when the walk did not get to the launch).
struct Chain {
    std::vector<SourceFrame> frames;
    std::string kernel;
};

std::string symbolAt(const void* address);
std::vector<std::uintptr_t> stackHere();
Chain kernelChain(const std::vector<std::uintptr_t>& stack);
std::string placeText(const std::vector<SourceFrame>& frames);
std::string placeOf(std::uintptr_t returnAddress);

// "void lab::(anonymous namespace)::k<int>(int const*, int)" -> "k<int>"
std::string shortFunction(std::string s);

// ---------------------------------------------------------------- the profile (emu_profile.cpp)
// EMU_PROFILE=1 (or emu::profile): the emulator calls these, and only then;
// each call site tests the flag first, so that counting off costs one branch.
extern bool profileOn;
// A return address in the program's code as 32 bits (emu_memcheck.cpp).
std::uint32_t codeOffset(const void* returnAddress);
void profileLaunchStart(const Launch& l);
void profileBlockStart(const Launch& l);
void profileBlockEnd(const Launch& l);
void profileLaunchEnd(const Launch& l);
// A load or store the checks let through, in shared or global memory, from
// the code at `from` (the hook's return address).
void profileAccess(const void* address, std::size_t bytes, bool write, bool shared, const void* from);
// The threads of `mask` in warp `warp` went on from a warp operation.
void profileWarpMet(const Launch& l, int warp, unsigned mask);
// Every thread of the block went on from __syncthreads.
void profileBarrier(const Launch& l);

// ---------------------------------------------------------------- faults (emu_faults.cpp)
std::string hex(const void* p);
std::string where(const Launch& l, int t);
std::string threadList(const std::vector<int>& ids, Launch& l, bool placed = false);
// The kinds of fault, each named in words in the reports (faultKind).
enum class Fault { Race, Barrier, Bounds, Pointer, Warp, SharedSize };
void reportFault(Fault kind, const std::string& what, const std::vector<std::uintptr_t>& stack = {},
                 bool placed = true);
[[noreturn]] void faultHere(Fault kind, const std::string& what);
// From a thread whose fault is reported: back to the scheduler, the fiber dropped.
[[noreturn]] void dropFiber();
// From the scheduler or a thread: the writes to shared memory that followed
// another thread's write in the same interval are compared with it now that
// they are done (a race only when the value changed); false after reporting one.
bool settleWrites();
void forgetWrites();  // a block's start

}  // namespace emu
