// Launch tracing with CUPTI: the activity API records what ran on the GPU
// (kernels, copies) whatever API launched it; the callback API sees every
// runtime and driver call of the process, checked against the lab's list.
#include "trace.hpp"
#ifdef LAB_JUDGE
#include "judge/judge.hpp"
#endif

#include "../common/cuda_check.hpp"
#include "../common/gpu.hpp"

#ifndef LAB_EMULATED
#include <cupti.h>

// The activity records this toolkit's CUPTI writes: each CUDA release may add
// fields in a record of a new name, and the library delivers its newest, so
// the header and the library (LAB_CUPTI_LIB) must come from one toolkit.
// CUPTI_API_VERSION: 22 in CUDA 12.4, 24 in 12.6, 26 in 12.8 (Memcpy6 from
// there), 130001 in 13.0 (Kernel10).
#if CUPTI_API_VERSION >= 130000
using KernelRecord = CUpti_ActivityKernel10;
#else
using KernelRecord = CUpti_ActivityKernel9;
#endif
#if CUPTI_API_VERSION >= 26
using CopyRecord = CUpti_ActivityMemcpy6;
#else
using CopyRecord = CUpti_ActivityMemcpy5;
#endif
#endif
#include <cuda_runtime_api.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string_view>
#include <utility>

namespace lab::test {

namespace {

// LAB_TRACE and whether compute-sanitizer runs the program, read once: when
// grading, at start-up (subscribeAtStartUp, below) before any code under test
// runs, so a student's constructor that changes the environment changes nothing.
// compute-sanitizer and CUPTI do not mix: under the sanitizer the trace is
// off, whatever LAB_TRACE says.
struct Settings {
    bool off = false, required = false;
};
const Settings& settings() {
    static const Settings s = [] {
        const char* env = std::getenv("LAB_TRACE");
        Settings s;
        s.off = (env != nullptr && std::strcmp(env, "0") == 0) || underComputeSanitizer();
        s.required = env != nullptr && std::strcmp(env, "require") == 0 && !underComputeSanitizer();
        return s;
    }();
    return s;
}
[[maybe_unused]] bool tracingOff() { return settings().off; }  // unused in the judge (LAB_JUDGE)
bool tracingRequired() { return settings().required; }

// Each window also holds two launches of this lab kernel and two copies of
// kCanaryBytes to the host: a trace that misses them was switched off or
// tampered with during the call.
constexpr const char* kCanaryKernel = "traceCanary_k";
constexpr std::size_t kCanaryBytes = 12;

// Two canaries into the window: a launch of the lab's kernel, a small copy.
[[maybe_unused]] void canary() {  // unused in the judge (LAB_JUDGE)
    static int* device = [] {
        int* p = nullptr;
        CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&p), kCanaryBytes));
        return p;
    }();
    launchTraceCanary(device);
    CUDA_CHECK_LAUNCH("traceCanary_k");
    int host[kCanaryBytes / sizeof(int)];
    CUDA_CHECK(cudaMemcpy(host, device, kCanaryBytes, cudaMemcpyDeviceToHost));
}

#if !defined(LAB_EMULATED) && !defined(LAB_JUDGE)  // the judge relays its graded process's trace

// ---------------------------------------------------------------- CUPTI itself

// CUPTI's functions, looked up in libcupti itself (LAB_CUPTI_LIB, set by the
// Makefile) rather than linked by name: a function of the same name defined
// by the code under test would otherwise take their place in the link.
struct Cupti {
    decltype(&cuptiActivityRegisterCallbacks) registerCallbacks = nullptr;
    decltype(&cuptiActivityEnable) enable = nullptr;
    decltype(&cuptiSubscribe) subscribe = nullptr;
    decltype(&cuptiEnableDomain) enableDomain = nullptr;
    decltype(&cuptiActivityGetNextRecord) nextRecord = nullptr;
    decltype(&cuptiGetResultString) resultString = nullptr;
    decltype(&cuptiActivityFlushAll) flushAll = nullptr;
    decltype(&cuptiGetTimestamp) timestamp = nullptr;
    std::string problem;  // why CUPTI cannot be used, "" when it can
};

#ifndef LAB_CUPTI_LIB
#define LAB_CUPTI_LIB "libcupti.so"
#endif

template <class F>
void lookUp(void* lib, const char* name, F& f, std::string& problem) {
    f = reinterpret_cast<F>(dlsym(lib, name));
    if (f == nullptr && problem.empty()) problem = std::string("libcupti has no ") + name;
}

const Cupti& cupti() {
    static const Cupti c = [] {
        Cupti c;
        void* lib = dlopen(LAB_CUPTI_LIB, RTLD_NOW | RTLD_LOCAL);
        if (lib == nullptr) {
            c.problem = std::string("cannot load ") + LAB_CUPTI_LIB;
            return c;
        }
        lookUp(lib, "cuptiActivityRegisterCallbacks", c.registerCallbacks, c.problem);
        lookUp(lib, "cuptiActivityEnable", c.enable, c.problem);
        lookUp(lib, "cuptiSubscribe", c.subscribe, c.problem);
        lookUp(lib, "cuptiEnableDomain", c.enableDomain, c.problem);
        lookUp(lib, "cuptiActivityGetNextRecord", c.nextRecord, c.problem);
        lookUp(lib, "cuptiGetResultString", c.resultString, c.problem);
        lookUp(lib, "cuptiActivityFlushAll", c.flushAll, c.problem);
        lookUp(lib, "cuptiGetTimestamp", c.timestamp, c.problem);
        return c;
    }();
    return c;
}

// ---------------------------------------------------------------- the allowlist

// Where a CUDA call may be made.
enum class Allowed : std::uint8_t {
    Never,     // anything not in the table below
    Launcher,  // inside a launcher (any thread), and on the graders' main thread once main has started
    Anywhere,  // error queries, and the registration every CUDA object file does at start-up
};

struct ApiRule {
    std::string_view name;  // without suffixes: "cudaMemcpy" for cudaMemcpy_v3020 and cudaMemcpy_ptds_v7000
    Allowed allowed;
};

// The CUDA calls the lab allows: what the handout lets a launcher call and
// what the lab's own code calls (graders, reference launchers, this trace).
// Any other call is a violation: pinned, mapped, managed or pool memory
// (cudaMallocHost, cudaHostRegister, cudaMallocManaged, __managed__
// variables, cudaMemPoolCreate), driver entry points (cudaGetDriverEntryPoint,
// cuGetProcAddress), virtual memory (cuMemCreate, cuMemMap), graphs, 2D/3D
// copies, host callbacks... The driver calls listed are those a launcher may
// make itself; the driver calls the runtime makes inside a runtime call are
// its own work and not checked.
constexpr Allowed kLauncher = Allowed::Launcher, kAnywhere = Allowed::Anywhere;
constexpr ApiRule kAllowedApis[] = {
    // runtime: device memory, copies, fills
    {"cudaMalloc", kLauncher}, {"cudaFree", kLauncher}, {"cudaMallocAsync", kLauncher}, {"cudaFreeAsync", kLauncher},
    {"cudaMemcpy", kLauncher}, {"cudaMemcpyAsync", kLauncher}, {"cudaMemset", kLauncher},
    {"cudaMemsetAsync", kLauncher}, {"cudaMemGetInfo", kLauncher}, {"cudaPointerGetAttributes", kLauncher},
    {"cudaDeviceGetDefaultMemPool", kLauncher}, {"cudaMemPoolSetAttribute", kLauncher},  // part 3's launch support
    // runtime: launches (a <<<>>> launch goes through the __cuda ones) and kernel attributes
    {"cudaLaunchKernel", kLauncher}, {"cudaLaunchKernelExC", kLauncher}, {"__cudaLaunchKernel", kLauncher},
    {"__cudaPushCallConfiguration", kLauncher}, {"__cudaPopCallConfiguration", kLauncher},
    {"__cudaGetKernel", kLauncher}, {"cudaFuncGetAttributes", kLauncher}, {"cudaFuncSetAttribute", kLauncher},
    {"cudaFuncSetCacheConfig", kLauncher}, {"cudaOccupancyMaxActiveBlocksPerMultiprocessor", kLauncher},
    {"cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", kLauncher},
    // runtime: streams, events, waiting
    {"cudaDeviceSynchronize", kLauncher}, {"cudaStreamSynchronize", kLauncher}, {"cudaStreamCreate", kLauncher},
    {"cudaStreamCreateWithFlags", kLauncher}, {"cudaStreamDestroy", kLauncher}, {"cudaStreamQuery", kLauncher},
    {"cudaStreamWaitEvent", kLauncher}, {"cudaEventCreate", kLauncher}, {"cudaEventCreateWithFlags", kLauncher},
    {"cudaEventRecord", kLauncher}, {"cudaEventSynchronize", kLauncher}, {"cudaEventElapsedTime", kLauncher},
    {"cudaEventQuery", kLauncher}, {"cudaEventDestroy", kLauncher},
    // runtime: the device
    {"cudaSetDevice", kLauncher}, {"cudaGetDeviceCount", kLauncher}, {"cudaGetDeviceProperties", kLauncher},
    {"cudaDeviceGetAttribute", kLauncher}, {"cudaDeviceGetLimit", kLauncher}, {"cudaDriverGetVersion", kLauncher},
    {"cudaRuntimeGetVersion", kLauncher},
    // runtime, anywhere: error queries, the current device
    {"cudaGetLastError", kAnywhere}, {"cudaPeekAtLastError", kAnywhere}, {"cudaGetErrorString", kAnywhere},
    {"cudaGetErrorName", kAnywhere}, {"cudaGetDevice", kAnywhere},
    // runtime, anywhere: every CUDA object file registers its kernels and __device__ variables at start-up
    {"__cudaRegisterFatBinary", kAnywhere}, {"__cudaRegisterFatBinaryEnd", kAnywhere},
    {"__cudaUnregisterFatBinary", kAnywhere}, {"__cudaRegisterFunction", kAnywhere},
    {"__cudaRegisterVar", kAnywhere}, {"__cudaInitModule", kAnywhere}, {"__cudaRegisterUnifiedTable", kAnywhere},
    // driver: the same operations, for a launcher that calls the driver itself
    {"cuInit", kLauncher}, {"cuDriverGetVersion", kLauncher}, {"cuDeviceGet", kLauncher},
    {"cuDeviceGetCount", kLauncher}, {"cuDeviceGetAttribute", kLauncher}, {"cuDeviceGetName", kLauncher},
    {"cuDeviceTotalMem", kLauncher}, {"cuCtxGetCurrent", kLauncher}, {"cuCtxGetDevice", kLauncher},
    {"cuCtxSynchronize", kLauncher}, {"cuMemAlloc", kLauncher}, {"cuMemFree", kLauncher},
    {"cuMemAllocAsync", kLauncher}, {"cuMemFreeAsync", kLauncher}, {"cuMemcpyDtoD", kLauncher},
    {"cuMemcpyDtoDAsync", kLauncher}, {"cuMemsetD8", kLauncher}, {"cuMemsetD16", kLauncher},
    {"cuMemsetD32", kLauncher}, {"cuMemsetD8Async", kLauncher}, {"cuMemsetD16Async", kLauncher},
    {"cuMemsetD32Async", kLauncher}, {"cuMemGetInfo", kLauncher}, {"cuPointerGetAttribute", kLauncher},
    {"cuLaunchKernel", kLauncher}, {"cuLaunchKernelEx", kLauncher}, {"cuFuncGetAttribute", kLauncher},
    {"cuStreamSynchronize", kLauncher}, {"cuStreamCreate", kLauncher}, {"cuStreamDestroy", kLauncher},
    {"cuEventCreate", kLauncher}, {"cuEventRecord", kLauncher}, {"cuEventSynchronize", kLauncher},
    {"cuEventElapsedTime", kLauncher}, {"cuEventDestroy", kLauncher},
    {"cuGetErrorString", kAnywhere}, {"cuGetErrorName", kAnywhere},
    // driver: the runtime's own plumbing, which CUDA 13 calls outside the runtime calls CUPTI
    // reports (modules loaded lazily at a kernel's first launch, the device and its context set up)
    {"cuLibraryLoadData", kLauncher}, {"cuLibraryGetKernel", kLauncher}, {"cuLibraryGetModule", kLauncher},
    {"cuLibraryUnload", kLauncher}, {"cuKernelGetName", kLauncher}, {"cuKernelGetFunction", kLauncher},
    {"cuKernelGetAttribute", kLauncher}, {"cuKernelGetLibrary", kLauncher}, {"cuModuleGetLoadingMode", kLauncher},
    {"cuModuleLoadData", kLauncher}, {"cuModuleGetFunction", kLauncher}, {"cuModuleUnload", kLauncher},
    {"cuFuncGetName", kLauncher}, {"cuDeviceGetUuid", kLauncher}, {"cuDeviceGetLuid", kLauncher},
    {"cuDeviceGetPCIBusId", kLauncher}, {"cuDevicePrimaryCtxRetain", kLauncher},
    {"cuDevicePrimaryCtxRelease", kLauncher}, {"cuDevicePrimaryCtxGetState", kLauncher},
    {"cuCtxSetCurrent", kLauncher}, {"cuCtxPushCurrent", kLauncher}, {"cuCtxPopCurrent", kLauncher},
    {"cuCtxGetId", kLauncher}, {"cuCtxGetFlags", kLauncher}, {"cuCtxGetApiVersion", kLauncher},
    {"cuDeviceGetDefaultMemPool", kLauncher}, {"cuMemPoolSetAttribute", kLauncher},
};

// "cudaMemcpyAsync_ptsz_v7000" -> "cudaMemcpyAsync", "cuMemcpyDtoD_v2_ptds" -> "cuMemcpyDtoD".
std::string_view baseName(std::string_view name) {
    for (;;) {
        const std::size_t cut = name.rfind('_');
        if (cut == std::string_view::npos || cut == 0) return name;
        const std::string_view tail = name.substr(cut + 1);
        const bool version = tail.size() > 1 && tail[0] == 'v' && tail.find_first_not_of("0123456789", 1) == tail.npos;
        if (!version && tail != "ptsz" && tail != "ptds") return name;
        name = name.substr(0, cut);
    }
}

// The table's verdict on a call (a binary search: no allocation).
Allowed allowedApi(std::string_view base) {
    static const std::vector<ApiRule> sorted = [] {
        std::vector<ApiRule> v(std::begin(kAllowedApis), std::end(kAllowedApis));
        std::sort(v.begin(), v.end(), [](const ApiRule& a, const ApiRule& b) { return a.name < b.name; });
        return v;
    }();
    const auto it = std::lower_bound(sorted.begin(), sorted.end(), base,
                                     [](const ApiRule& r, std::string_view n) { return r.name < n; });
    return it != sorted.end() && it->name == base ? it->allowed : Allowed::Never;
}

// ---------------------------------------------------------------- trace state

// The run's phases (trace.hpp) and where a call was made in them.
enum class Phase : std::uint8_t { BeforeMain, OutsideTests, InTest, AfterTest };
enum class Where : std::uint8_t {
    BeforeMain,    // any thread
    Launcher,      // any thread, while a traced call runs
    MainThread,    // the graders' own calls
    OtherThread,   // during a test case, outside the launcher
    OutsideTests,  // before the first test case or between two, not the main thread
    AfterTest,     // the main thread after a test case: not watched (the process may be ending)
};

// Read by every callback without a lock; constant-initialized, so valid
// before any static constructor runs.
std::atomic<Phase> phase{Phase::BeforeMain};
std::atomic<bool> windowOpen{false};  // a traced call is running
bool listCalls = false;               // LAB_TRACE_LIST=1; set before the callbacks start
thread_local int runtimeDepth = 0;    // how deep this thread is in runtime calls
thread_local bool ownCall = false;    // this thread is inside the trace's own CUPTI calls

// The rest, under the mutex. Made on first use and never destroyed: the
// callbacks at start-up and at exit find it whatever the order of static
// constructors and destructors.
struct State {
    std::mutex mutex;
    std::uint64_t from = 0;               // CUPTI timestamp of the window's start
    TraceLog log;                         // the window's
    std::vector<std::string> violations;  // since the last takeTraceViolations
    std::set<std::string> seen;           // LAB_TRACE_LIST: "name (where): verdict" since the last print
};
State& state() {
    static State* const s = new State;
    return *s;
}

// Marks the trace's own CUPTI calls: calls CUPTI makes meanwhile are not the code under test's.
struct OwnCall {
    OwnCall() { ownCall = true; }
    ~OwnCall() { ownCall = false; }
};

// The canaries are the lab's own calls: only their activity records count.
void ownCanary() {
    OwnCall own;
    canary();
}

Where whereNow() {
    const Phase p = phase.load(std::memory_order_acquire);
    if (p == Phase::BeforeMain) return Where::BeforeMain;
    if (windowOpen.load(std::memory_order_acquire)) return Where::Launcher;
    thread_local const bool mainThread = syscall(SYS_gettid) == getpid();
    if (mainThread) return p == Phase::AfterTest ? Where::AfterTest : Where::MainThread;
    return p == Phase::InTest ? Where::OtherThread : Where::OutsideTests;
}

std::string whereText(Where w, bool withThread) {
    const std::string thread = withThread ? "thread " + std::to_string(syscall(SYS_gettid)) : "another thread";
    switch (w) {
        case Where::BeforeMain: return "before main";
        case Where::Launcher: return "in the launcher";
        case Where::MainThread: return "outside the launcher, main thread";
        case Where::OtherThread: return "outside the launcher, " + thread;
        case Where::OutsideTests: return "outside a test case, " + thread;
        case Where::AfterTest: return "after a test case, main thread";
    }
    return "?";
}

// Adds `text` once; at most 100 entries, so a loop of calls cannot flood the report.
void addOnce(std::vector<std::string>& list, const std::string& text) {
    if (list.size() < 100 && std::find(list.begin(), list.end(), text) == list.end()) list.push_back(text);
}

// The call `name` (suffixes stripped: `base`) was made here and now.
void noteCall(const char* name, std::string_view base, Allowed allowed) {
    const Where where = whereNow();
    const bool notAllowed = allowed == Allowed::Never && where != Where::AfterTest;
    const bool misplaced = allowed == Allowed::Launcher && (where == Where::BeforeMain ||
                           where == Where::OtherThread || where == Where::OutsideTests);
    if (!notAllowed && !misplaced && !listCalls) return;  // the fast path: no lock, no allocation
    std::lock_guard<std::mutex> lock(state().mutex);
    if (listCalls)
        state().seen.insert(std::string(name) + " (" + whereText(where, false) + "): " +
                            (notAllowed ? "NOT ALLOWED" : misplaced ? "NOT ALLOWED HERE"
                             : where == Where::AfterTest ? "not watched" : "allowed"));
    if (!notAllowed && !misplaced) return;
    const std::string text = "it called " + std::string(base) +
                             (notAllowed ? ", which the lab does not allow (" + whereText(where, true) + ")"
                                         : " (" + whereText(where, true) + "), which the lab allows only in the launcher");
    addOnce(state().violations, text);
    if (where == Where::Launcher) addOnce(state().log.violations, text);
}

// LAB_TRACE_LIST: the calls seen since the last print (the caller holds the lock).
void printCallList() {
    for (const std::string& line : state().seen) std::fprintf(stderr, "LAB_TRACE_LIST %s\n", line.c_str());
    std::fflush(stderr);
    state().seen.clear();
}

// ---------------------------------------------------------------- CUPTI callbacks

std::string demangle(const char* name) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
    return status == 0 && out ? std::string(out.get()) : std::string(name);
}

const char* copyKindName(std::uint8_t kind) {
    switch (kind) {
        case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "host-to-device";
        case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "device-to-host";
        case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return "host-to-array";
        case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return "array-to-host";
        case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "host-to-host";
        default: return nullptr;  // device-side copies are allowed
    }
}

void CUPTIAPI bufferRequested(std::uint8_t** buffer, std::size_t* size, std::size_t* maxRecords) {
    constexpr std::size_t kBytes = 1 << 20;
    *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, kBytes));
    *size = kBytes;
    *maxRecords = 0;
}

// Activity records: the kernels and host copies that ran in the window.
void CUPTIAPI bufferCompleted(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t, std::size_t valid) {
    std::lock_guard<std::mutex> lock(state().mutex);
    TraceLog& log = state().log;
    const bool open = windowOpen.load();
    CUpti_Activity* record = nullptr;
    while (cupti().nextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
        if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            const auto* k = reinterpret_cast<const KernelRecord*>(record);
            if (!open || k->start < state().from) continue;
            KernelLaunch launch;
            launch.fullName = demangle(k->name);
            launch.name = kernelShortName(launch.fullName);
            launch.blocks = static_cast<long long>(k->gridX) * k->gridY * k->gridZ;
            launch.threads = k->blockX * k->blockY * k->blockZ;
            if (launch.name == kCanaryKernel) ++log.canaryKernels;
            else log.kernels.push_back(launch);
        } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
            const auto* m = reinterpret_cast<const CopyRecord*>(record);
            if (!open || m->start < state().from) continue;
            const char* kind = copyKindName(m->copyKind);
            if (m->bytes == kCanaryBytes && m->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH &&
                log.canaryCopies < log.canaryKernels) {
                ++log.canaryCopies;
                continue;
            }
            ++log.copyRecords;
            if (kind != nullptr)
                log.hostCopies.push_back(std::string(kind) + " copy of " + std::to_string(m->bytes) + " bytes");
        }
    }
    std::free(buffer);
}

// A copy or a launch the launcher asked for, on entry: its direction read from
// the call itself, and counted, so that the activity records of the window
// can be checked against them (checkTrace): a copy or launch that left no
// record means CUPTI's activity was switched off or tampered with meanwhile.
// (cudaMemcpyAsync's parameters begin as cudaMemcpy's.)
static_assert(offsetof(cudaMemcpyAsync_v3020_params, kind) == offsetof(cudaMemcpy_v3020_params, kind) &&
                  offsetof(cudaMemcpyAsync_v3020_params, count) == offsetof(cudaMemcpy_v3020_params, count),
              "cudaMemcpy's and cudaMemcpyAsync's CUPTI parameters differ in layout");
void noteWork(std::string_view base, bool runtime, const void* params) {
    const bool copy = runtime && (base == "cudaMemcpy" || base == "cudaMemcpyAsync");
    const bool launch = base == "cudaLaunchKernel" || base == "cudaLaunchKernelExC" || base == "cuLaunchKernel" ||
                        base == "cuLaunchKernelEx";
    if (!copy && !launch) return;
    std::lock_guard<std::mutex> lock(state().mutex);
    TraceLog& log = state().log;
    if (launch) {
        ++log.launchCalls;
        return;
    }
    const auto* p = static_cast<const cudaMemcpy_v3020_params*>(params);
    if (p == nullptr || p->count == 0) return;
    ++log.copyCalls;
    const char* direction = p->kind == cudaMemcpyHostToDevice   ? "host-to-device"
                            : p->kind == cudaMemcpyDeviceToHost ? "device-to-host"
                            : p->kind == cudaMemcpyHostToHost   ? "host-to-host"
                                                                : nullptr;
    if (direction != nullptr)
        addOnce(log.violations, "it called " + std::string(base) + " for a " + direction + " copy of " +
                                    std::to_string(p->count) + " bytes");
}

// Every top-level runtime and driver call, on entry and on exit (a call that
// outlasts its launcher's window is outside it). A call made inside a runtime
// call on the same thread is the runtime's own work: not checked.
void CUPTIAPI apiCalled(void*, CUpti_CallbackDomain domain, CUpti_CallbackId, const void* data) {
    const auto* info = static_cast<const CUpti_CallbackData*>(data);
    if (ownCall || info->functionName == nullptr) return;
    const bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API, enter = info->callbackSite == CUPTI_API_ENTER;
    if (runtime && !enter && runtimeDepth > 0) --runtimeDepth;
    const bool topLevel = runtimeDepth == 0;
    if (runtime && enter) ++runtimeDepth;
    if (!topLevel) return;
    const std::string_view base = baseName(info->functionName);
    noteCall(info->functionName, base, allowedApi(base));
    if (enter && windowOpen.load(std::memory_order_acquire)) noteWork(base, runtime, info->functionParams);
}

std::string cuptiError(CUptiResult r) {
    const char* text = nullptr;
    cupti().resultString(r, &text);
    return text ? text : "unknown CUPTI error";
}

// The callbacks on every CUDA call, once; "" when they run.
std::string subscribeOnce() {
    static const std::string problem = [] {
        if (!cupti().problem.empty()) return cupti().problem;
        const char* list = std::getenv("LAB_TRACE_LIST");
        listCalls = list != nullptr && std::strcmp(list, "1") == 0;
        if (listCalls)
            std::atexit([] {
                std::lock_guard<std::mutex> lock(state().mutex);
                printCallList();
            });
        OwnCall own;
        CUpti_SubscriberHandle subscriber;
        for (CUptiResult r : {cupti().subscribe(&subscriber, apiCalled, nullptr),
                              cupti().enableDomain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API),
                              cupti().enableDomain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API)})
            if (r != CUPTI_SUCCESS) return "CUPTI could not start: " + cuptiError(r);
        return std::string();
    }();
    return problem;
}

// When grading (LAB_TRACE=require), calls are watched from start-up: this
// runs before the constructors of ordinary static objects (the harness makes
// sure no code under test runs earlier), so their CUDA calls show too.
__attribute__((constructor(101))) void subscribeAtStartUp() {
    if (tracingRequired()) subscribeOnce();
}

// Starts CUPTI once; an empty string when it runs, else why not.
std::string startTracing() {
    if (underComputeSanitizer()) return "tracing is off under compute-sanitizer";
    if (tracingOff()) return "tracing is off (LAB_TRACE=0)";
    if (!detectGpu().available) return "no GPU";
    if (std::string problem = subscribeOnce(); !problem.empty()) return problem;
    OwnCall own;
    for (CUptiResult r : {cupti().registerCallbacks(bufferRequested, bufferCompleted),
                          cupti().enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
                          cupti().enable(CUPTI_ACTIVITY_KIND_MEMCPY)})
        if (r != CUPTI_SUCCESS) return "CUPTI could not start: " + cuptiError(r);
    return "";
}

const std::string& tracingProblem() {
    static const std::string problem = startTracing();
    return problem;
}

#endif  // LAB_EMULATED

}  // namespace

// "void lab::mergeSmall_k<int>(int const*, int, ...)" -> "mergeSmall_k"
// (also for a kernel in an anonymous namespace: "(anonymous namespace)::k").
std::string kernelShortName(const std::string& full) {
    std::string s = full;
    static const std::string anonymous = "(anonymous namespace)";
    for (std::size_t at; (at = s.find(anonymous)) != std::string::npos;) s.erase(at, anonymous.size());
    int depth = 0;
    std::size_t cut = s.size();
    for (std::size_t i = 0; i < s.size(); ++i) {  // drop the parameter list
        if (s[i] == '<') ++depth;
        else if (s[i] == '>') --depth;
        else if (s[i] == '(' && depth == 0) { cut = i; break; }
    }
    s = s.substr(0, cut);
    depth = 0;
    std::string plain;  // without template arguments
    for (char c : s) {
        if (c == '<') ++depth;
        else if (c == '>') --depth;
        else if (depth == 0) plain += c;
    }
    const std::size_t space = plain.rfind(' ');
    if (space != std::string::npos) plain = plain.substr(space + 1);
    const std::size_t colons = plain.rfind("::");
    return colons == std::string::npos ? plain : plain.substr(colons + 2);
}

#if defined(LAB_JUDGE)  // the grading's judge: the graded process traces, the judge relays (tests/judge/)

std::string tracingStatus() { return "in the graded process, relayed to the judge"; }

TraceLog traceCall(const std::function<void()>& call) {
    judge::beginRemoteTrace();
    try {
        call();
    } catch (...) {
        judge::endRemoteTrace();
        throw;
    }
    return judge::endRemoteTrace();
}

void traceMainStarted() {}
void traceTestStarted() {}
void traceTestEnded() {}
std::vector<std::string> takeTraceViolations() { return judge::takeRemoteViolations(); }

#elif !defined(LAB_EMULATED)

std::string tracingStatus() { return tracingProblem().empty() ? "on" : "off: " + tracingProblem(); }

TraceLog traceCall(const std::function<void()>& call) {
    if (!tracingProblem().empty()) {
        call();
        TraceLog off;
        off.why = tracingProblem();
        return off;
    }
    // Close the gap: earlier work finishes and is flushed before the window.
    cudaDeviceSynchronize();
    std::uint64_t now = 0;
    {
        OwnCall own;
        cupti().flushAll(1);
        cupti().timestamp(&now);
    }
    {
        std::lock_guard<std::mutex> lock(state().mutex);
        state().log = TraceLog{};
        state().log.traced = true;
        state().from = now;
        windowOpen = true;
    }
    try {
        ownCanary();
        call();
        ownCanary();
    } catch (...) {
        std::lock_guard<std::mutex> lock(state().mutex);
        windowOpen = false;
        throw;
    }
    // A kernel that faulted leaves no activity record: report the fault itself.
    const cudaError_t err = cudaDeviceSynchronize();
    {
        OwnCall own;
        cupti().flushAll(1);
    }
    std::lock_guard<std::mutex> lock(state().mutex);
    windowOpen = false;
    if (err != cudaSuccess) state().log.fault = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
    return state().log;
}

void traceMainStarted() { phase = Phase::OutsideTests; }

void traceTestStarted() { phase = Phase::InTest; }

void traceTestEnded() {
    phase = Phase::AfterTest;
    if (!listCalls) return;
    std::lock_guard<std::mutex> lock(state().mutex);
    printCallList();
}

std::vector<std::string> takeTraceViolations() {
    std::lock_guard<std::mutex> lock(state().mutex);
    return std::exchange(state().violations, {});
}

#else  // the emulator's own record of launches and copies (emulator/emu.hpp)

std::string tracingStatus() {
    return tracingOff() ? "off (LAB_TRACE=0)" : "on (the emulator's record of launches and copies)";
}

TraceLog traceCall(const std::function<void()>& call) {
    TraceLog log;
    if (tracingOff()) {
        call();
        log.why = "tracing is off (LAB_TRACE=0)";
        return log;
    }
    log.traced = true;
    const std::size_t callsBefore = emu::hostMemoryCallCount();
    const std::size_t faultsBefore = emu::faultCount();
    emu::recordLaunches(true);
    try {
        canary();
        call();
        canary();
    } catch (...) {
        emu::recordLaunches(false);
        // An emulated launch ends before the launcher's own check of it,
        // which then throws on the fault; on a GPU the fault shows at the
        // synchronization below: reported the same way, as the launch's.
        if (emu::faultCount() == faultsBefore) throw;
    }
    emu::recordLaunches(false);
    const cudaError_t err = cudaDeviceSynchronize();
    for (std::size_t i = 0; i < emu::launchCount(); ++i) {
        KernelLaunch launch;
        launch.fullName = emu::launchName(i);
        launch.name = kernelShortName(launch.fullName);
        launch.blocks = emu::launchBlocks(i);
        launch.threads = emu::launchThreads(i);
        if (launch.name == kCanaryKernel) ++log.canaryKernels;
        else log.kernels.push_back(launch);
    }
    for (std::size_t i = 0; i < emu::hostCopyCount(); ++i) {
        const std::string copy = emu::hostCopy(i);
        if (copy == "device-to-host copy of " + std::to_string(kCanaryBytes) + " bytes" &&
            log.canaryCopies < log.canaryKernels)
            ++log.canaryCopies;
        else
            log.hostCopies.push_back(copy);
    }
    for (std::size_t i = 0; i < emu::hostMemoryCallCount(); ++i)
        log.violations.push_back("it called " + std::string(emu::hostMemoryCall(i)) + ", which the lab does not allow (" +
                                 (i < callsBefore ? "outside a traced call" : "in the launcher") + ")");
    if (err != cudaSuccess)
        log.fault = *emu::faultKind() ? "the emulator found " + std::string(emu::faultKind()) + " (" +
                                            emu::faultMessage() + ")"
                                      : "the emulated launch failed (" + std::string(cudaGetErrorName(err)) + ")";
    return log;
}

// The watch on every CUDA call needs CUPTI: the emulator's log of host-memory
// calls above is what it has instead. Each test case starts on an emulated
// device without the previous one's fault (emu.hpp, clearFault).
void traceMainStarted() {}
void traceTestStarted() { emu::clearFault(); }
void traceTestEnded() {}
std::vector<std::string> takeTraceViolations() { return {}; }

#endif  // LAB_EMULATED

Check checkTrace(const TraceLog& log, const std::vector<KernelRule>& rules, const std::string& what) {
    if (!log.traced) {
        if (tracingRequired()) return failCheck("launch tracing did not run: " + log.why + " [" + what + "]");
        return {};
    }
#ifdef LAB_EMULATED
    if (!log.fault.empty()) return failCheck(log.fault + " [" + what + "]");
#else
    if (!log.fault.empty()) return failCheck("the launch failed on the GPU (" + log.fault + ") [" + what + "]");
#endif
    long long launched = 0;
    for (const KernelLaunch& k : log.kernels) launched += k.count;
    if (log.copyRecords < log.copyCalls || launched < log.launchCalls)
        return failCheck("the launch trace saw " + std::to_string(log.copyCalls) + " copies and " +
                         std::to_string(log.launchCalls) + " launches asked for, but only " +
                         std::to_string(log.copyRecords) + " and " + std::to_string(launched) +
                         " ran on the record: a launch that failed, or tracing switched off or tampered with "
                         "during the call [" + what + "]");
    if (log.canaryKernels != 2 || log.canaryCopies != 2)
        return failCheck("the launch trace missed the lab's own canary launches or copies (" +
                         std::to_string(log.canaryKernels) + " and " + std::to_string(log.canaryCopies) +
                         " of 2): tracing was switched off or tampered with during the call [" + what + "]");
    std::set<std::string> seenProblems;  // each problem once, however many launches show it
    std::ostringstream problems;
    const auto problem = [&](const std::string& p) {
        if (seenProblems.insert(p).second) problems << p << "; ";
    };
    for (const std::string& copy : log.hostCopies) problem("it made a " + copy);
    for (const std::string& violation : log.violations) problem(violation);
    for (const KernelLaunch& k : log.kernels) {
        const KernelRule* rule = nullptr;
        for (const KernelRule& r : rules)
            if (r.name == k.name) rule = &r;
        const bool library = k.fullName.find("cub::") != std::string::npos ||
                             k.fullName.find("thrust::") != std::string::npos;
        if (rule == nullptr) {
            problem("it launched " + std::string(library ? "the library kernel " : "the kernel ") + k.name +
                    (library ? " (Thrust/CUB calls are not allowed)" : " (not one the handout names here)"));
            continue;
        }
        if (rule->threads > 0 && k.threads != rule->threads)
            problem(k.name + " ran with " + std::to_string(k.threads) + " threads per block instead of " +
                    std::to_string(rule->threads));
        if (rule->blocks > 0 && k.blocks != rule->blocks)
            problem(k.name + " ran with " + std::to_string(k.blocks) + " blocks instead of " +
                    std::to_string(rule->blocks));
    }
    for (const KernelRule& r : rules) {
        bool seen = false;
        for (const KernelLaunch& k : log.kernels) seen = seen || k.name == r.name;
        if (r.required && !seen) problem("it never launched " + r.name);
    }
    std::string text = problems.str();
    if (text.empty()) return {};
    text.resize(text.size() - 2);
    if (text.size() > 600) text = text.substr(0, 600) + " ...";
    return failCheck("launch trace of " + what + ": " + text);
}

}  // namespace lab::test
