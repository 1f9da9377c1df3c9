// CUDA on the CPU, for `make test EMULATE=1`: the part of CUDA the lab and a
// student's kernels use, run by host threads of our own.
//
// Every source file of an emulated build is compiled by the host compiler
// with this header included first (the Makefile's -include), after
// emulator/rewrite.py has turned each launch `k<<<grid, block>>>(args)` into
// a call of emu::launch. Kernels and device functions are then ordinary
// host functions; the emulator runs a launch block after block, each CUDA
// thread a fiber (ucontext), and switches fibers at every barrier and warp
// operation. The kernel files are compiled with -fsanitize=thread, which
// makes the compiler call __tsan_read4(address) and the like before every
// load and store: the emulator answers those calls itself (no ThreadSanitizer
// runtime is linked) and checks each access of a running kernel: inside a
// device allocation, shared memory written before it is read, no two threads
// touching the same shared byte between two barriers with one writing.
//
// What it cannot show: warp timing, memory ordering between blocks, speed.
// What it can count (EMU_PROFILE=1): the memory requests of each warp, as a
// profiler does, from the same hooks.
//
// The emulator's files, each with one job:
//   emu.hpp           this entry point: qualifiers, and the emulator's own
//                     controls (trace log, faults, thread order)
//   emu_runtime.hpp   the CUDA runtime API's types and calls (host code)
//   emu_kernel.hpp    launches, shared memory and built-ins (device code)
//   emu_internal.hpp  what the .cpp files below share, for them alone
//   emu_runtime.cpp   the runtime API: errors, device memory, copies, events
//   emu_device.cpp    launches: blocks, a fiber per thread, shared memory
//   emu_warp.cpp      __syncthreads and its variants, warp functions
//   emu_memcheck.cpp  the access checks: bounds, shared-memory races
//   emu_faults.cpp    fault reports and the error they leave
//   emu_source.cpp    symbols and source lines, for the reports
//   emu_profile.cpp   the emulated profile (EMU_PROFILE): memory requests per kernel
#pragma once

#define LAB_EMULATED 1

#include <vector>

#include "emu_runtime.hpp"
#include "emu_kernel.hpp"

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

// ---------------------------------------------------------------- the emulator's controls
namespace emu {

// The log the graders' trace reads (tests/trace.cpp).
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
const char* faultKind();     // what kind it was, in words: "a shared-memory race", "a barrier error", ...
std::size_t faultCount();    // the faults so far

// A fresh start after a fault: the errors and the fault message cleared, the
// device usable again (its allocations stay; memory freed after the fault is
// back). On a GPU, a fault spoils the rest of the process; the graders call
// this at the start of each test case, so that one fault fails one test case
// (as in grading, where each runs in a process of its own).
void clearFault();

// The [large] tier's index arithmetic without its memory: while one lives,
// device allocations may pass EMU_MEMORY_MB (their pages are taken only where
// touched) and each launch runs only the blocks sparseBlocks names for its
// grid; the launch trace still records the whole grid. A test fills and
// checks only what those blocks read and write: an index that wraps at 2^31
// or 2^32 then reads or writes outside its array, and the emulator says where.
class SparseRun {
public:
    SparseRun();
    ~SparseRun();
    SparseRun(const SparseRun&) = delete;
    SparseRun& operator=(const SparseRun&) = delete;
};
// The blocks (linear indices, ascending) a grid of `blocks` runs under a
// SparseRun: the first, the middle one and the last two.
std::vector<long long> sparseBlocks(long long blocks);

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

// The emulated profile (emu_profile.cpp): per kernel and launch shape, the
// global and shared memory requests of its warps, counted as Nsight Compute
// counts them, and its barriers. EMU_PROFILE=1 in the environment counts
// every launch and prints the table on stderr at exit; EMU_PROFILE_FILE=path
// writes it there as CSV (appended) instead.
struct ProfileRow {
    const char* kernel;  // as compiled, template arguments filled in (valid until clearProfile)
    dim3 grid, block;
    std::size_t dynamicShared;
    long long launches, blocks, threads;
    long long globalLoads, globalLoadSectors, globalStores, globalStoreSectors;
    long long sharedLoads, sharedLoadWavefronts, sharedLoadConflicts;
    long long sharedStores, sharedStoreWavefronts, sharedStoreConflicts;
    long long barriers, idleLaneWaits;
};
void profile(bool on);  // count the launches from now on (or stop); the table is printed at exit
bool profiling();
std::size_t profileRowCount();
ProfileRow profileRow(std::size_t i);
void printProfile(const char* title);  // the table so far on stdout (and into EMU_PROFILE_FILE)
void clearProfile();

}  // namespace emu
