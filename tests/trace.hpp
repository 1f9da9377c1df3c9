// Launch tracing for the graders (CUPTI, shipped with the CUDA toolkit).
//
// While a grader calls a launcher, the trace records every kernel that ran
// (name, grid, block) and every memory copy. The graders then check that a
// launcher ran only its own kernels, with the shape it was asked for, and
// never moved the data to the host: what a checker of outputs alone cannot
// see (a host std::sort, a Thrust call, an ignored launch shape).
//
// It also watches every CUDA runtime and driver call of the whole process,
// from start-up on, against a list of the calls the lab allows (trace.cpp):
// any other call (pinned, mapped, managed or pool memory, driver entry
// points...) is a violation wherever it is made, and so is an allowed call
// made before main or by a thread of the code under test outside the
// launcher (a copy made after the launcher returned).
//
// LAB_TRACE=0 turns tracing off, and so does running under compute-sanitizer
// (it and CUPTI do not mix); LAB_TRACE=require (set by the grading harness)
// makes a trace that cannot start a failure instead of a note, and watches
// the calls from start-up. LAB_TRACE_LIST=1 prints every distinct call seen,
// where, and the verdict, to stderr after each test case (to tune the list).
#pragma once

#include "../common/checks.hpp"

#include <functional>
#include <string>
#include <vector>

namespace lab::test {

struct KernelLaunch {
    std::string name;      // the kernel's own name: "mergeSmall_k", "DeviceMergeSortBlockSortKernel"
    std::string fullName;  // demangled, with namespaces and template arguments
    long long blocks = 0;  // grid size, all dimensions multiplied
    int threads = 0;       // block size, all dimensions multiplied
    long long count = 1;   // launches alike (relayed to the grading's judge folded: tests/judge/serve.cpp)
};

struct TraceLog {
    bool traced = false;                 // false: tracing is off or unavailable here
    std::string why;                     // why not, when !traced
    std::string fault;                   // the CUDA error the launched work ended with, if any
    std::vector<KernelLaunch> kernels;
    std::vector<std::string> hostCopies;   // "device-to-host copy of 4096 bytes"
    std::vector<std::string> violations;   // CUDA calls the lab does not allow, made in the window:
                                           // "it called cudaMallocManaged, which the lab does not allow (in the launcher)"
    int canaryKernels = 0, canaryCopies = 0;   // the lab's own canaries seen in the window (2 each)
    int copyCalls = 0, launchCalls = 0;        // copies (of more than 0 bytes) and launches the calls asked for
    int copyRecords = 0;                       // copies in the activity records, canaries left out
};

// Launches the lab's canary kernel, traceCanary_k, writing to `device` (trace_canary.cu).
void launchTraceCanary(int* device);

// A demangled kernel name without return type, namespaces (anonymous ones
// included), template arguments and parameters: "mergeSmall_k".
std::string kernelShortName(const std::string& demangled);

// "on", or "off: <why>" (printed at the start of every grader run).
std::string tracingStatus();

// Runs `call` (a launcher), waits for the GPU, and returns what it did.
TraceLog traceCall(const std::function<void()>& call);

// What a launcher may launch: kernels named `name`, every launch of them
// with `threads` per block and `blocks` blocks (0: any). A `required` kernel
// must be launched at least once.
struct KernelRule {
    std::string name;
    int threads = 0;
    long long blocks = 0;
    bool required = true;
};

// The launcher's trace obeys the rules: only the named kernels ran (no
// Thrust/CUB or other kernels), with the right shapes, every required one at
// least once, no copies between host and device, no CUDA call the lab does
// not allow.
// `what` names the call in messages ("mergeSmallBatch(d=8, N=37, threadsPerBlock=24)").
Check checkTrace(const TraceLog& log, const std::vector<KernelRule>& rules, const std::string& what);

// Runs the launcher under the trace and checks it: the one call graders use.
// Emulated, a fault's report names `what` too.
inline Check tracedCall(const std::function<void()>& call, const std::vector<KernelRule>& rules,
                        const std::string& what) {
#ifdef LAB_EMULATED
    const emu::CaseContext context(what.c_str());
#endif
    return checkTrace(traceCall(call), rules, what);
}

// The phases of the run, for the watch on CUDA calls. Calls before
// traceMainStarted are "before main"; between traceTestStarted and
// traceTestEnded the graders' main thread may call what the lab allows, and
// other threads only inside a traced call; after traceTestEnded calls of the
// main thread are no longer watched (the next test case, or the process's end).
void traceMainStarted();  // main() calls it first thing
void traceTestStarted();  // the test listener, at each test case's start
void traceTestEnded();    // ... and at its end

// The violations recorded since the last call, each once, with where it was
// made: "it called cudaMemcpy (outside the launcher, thread 4242), which the
// lab allows only in the launcher", "it called cudaMallocHost, which the lab
// does not allow (before main)".
// A test case with any fails in grading. Empty when tracing is off.
std::vector<std::string> takeTraceViolations();

}  // namespace lab::test
