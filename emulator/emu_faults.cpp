// Fault reports: a kernel's fault ends its launch with one line on stderr,
// "EMULATED GPU FAULT: <what> in <kernel> at <file:line>", and leaves the
// error every later CUDA call returns, as on a GPU, until clearFault.
#include "emu_internal.hpp"

#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace emu {
namespace {

std::string lastFault;
const char* lastKind = "";
std::size_t faults = 0;   // every fault so far
std::string caseContext;  // the test case running now (CaseContext), for the reports

}  // namespace

std::string hex(const void* p) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%p", p);
    return buf;
}

// "thread (x,y,z) of block (x,y,z)"
std::string where(const Launch& l, int t) {
    const unsigned bx = l.block.x, by = l.block.y;
    std::ostringstream os;
    os << "thread (" << t % bx << "," << (t / bx) % by << "," << t / (bx * by) << ") of block (" << l.blockIndex.x
       << "," << l.blockIndex.y << "," << l.blockIndex.z << ")";
    return os.str();
}

// Threads, each with the line it waits at when `placed` (a barrier or warp
// operation): up to three, then how many more.
std::string threadList(const std::vector<int>& ids, Launch& l, bool placed) {
    std::ostringstream os;
    for (std::size_t i = 0; i < ids.size() && i < 3; ++i) {
        os << (i ? "; " : "") << where(l, ids[i]);
        if (placed) os << placeText(kernelChain(stackOf(l, ids[i])).frames);
    }
    if (ids.size() > 3) os << " and " << ids.size() - 3 << " more";
    return os.str();
}

// Ends the launch: "EMULATED GPU FAULT: <what> in <kernel> at <file:line>" is
// printed with the test case's context and kept (without it), and every
// later CUDA call returns the error, as after a fault on a GPU, until
// clearFault. `stack`: the return addresses of the thread at fault (stackHere,
// stackOf), which name the kernel as compiled (template arguments filled in)
// and, when `placed`, the line; without them, the kernel as written at the
// launch.
const char* kindText(Fault kind) {
    switch (kind) {
        case Fault::Race: return "a shared-memory race";
        case Fault::Barrier: return "a barrier error";
        case Fault::Bounds: return "an out-of-bounds access";
        case Fault::Pointer: return "an access outside device memory";
        case Fault::Warp: return "a warp-operation error";
        case Fault::SharedSize: return "more static shared memory than a block has";
    }
    return "a fault";
}

void reportFault(Fault kind, const std::string& what, const std::vector<std::uintptr_t>& stack, bool placed) {
    const Chain chain = kernelChain(stack);
    const std::string kernel = chain.kernel.empty() ? active->name : chain.kernel;
    lastFault = "EMULATED GPU FAULT: " + what + " in " + kernel + (placed ? placeText(chain.frames) : "");
    lastKind = kindText(kind);
    ++faults;
    std::fprintf(stderr, "%s%s\n", lastFault.c_str(), caseContext.empty() ? "" : (" [" + caseContext + "]").c_str());
    std::fflush(stderr);
    stickyError = cudaErrorIllegalAddress;  // what the program's CUDA calls return from now on
    active->aborted = true;
}

// The same from inside a thread, whose fiber is then dropped.
void faultHere(Fault kind, const std::string& what) {
    reportFault(kind, what + " by " + where(*active, active->current), stackHere());
    dropFiber();
}

void dropFiber() {
    inKernel = false;
    setcontext(&scheduler);  // back into resume(), never to this fiber
    std::abort();
}

// ---------------------------------------------------------------- the controls (emu.hpp)
const char* faultMessage() { return lastFault.c_str(); }
const char* faultKind() { return lastKind; }
std::size_t faultCount() { return faults; }

void clearFault() {
    stickyError = cudaSuccess;
    lastError = cudaSuccess;
    lastFault.clear();
    lastKind = "";
}

CaseContext::CaseContext(const char* text) { caseContext = text ? text : ""; }
CaseContext::~CaseContext() { caseContext.clear(); }

}  // namespace emu
