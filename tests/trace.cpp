// Launch tracing with CUPTI: the activity API records what ran on the GPU
// (kernels, copies) whatever API launched it; the callback API sees the
// runtime and driver calls that make host memory visible to the GPU.
#include "trace.hpp"

#include "../common/cuda_check.hpp"
#include "../common/gpu.hpp"

#ifndef LAB_EMULATED
#include <cupti.h>
#endif
#include <cuda_runtime_api.h>
#include <cxxabi.h>
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>

namespace lab::test {

namespace {

// compute-sanitizer and CUPTI do not mix: under the sanitizer the trace is
// off, whatever LAB_TRACE says.
bool tracingOff() {
    const char* env = std::getenv("LAB_TRACE");
    return (env != nullptr && std::strcmp(env, "0") == 0) || underComputeSanitizer();
}

bool tracingRequired() {
    const char* env = std::getenv("LAB_TRACE");
    return env != nullptr && std::strcmp(env, "require") == 0 && !underComputeSanitizer();
}

// Each window also holds two launches of this lab kernel and two copies of
// kCanaryBytes to the host: a trace that misses them was switched off or
// tampered with during the call.
constexpr const char* kCanaryKernel = "traceCanary_k";
constexpr std::size_t kCanaryBytes = 12;

// Two canaries into the window: a launch of the lab's kernel, a small copy.
void canary() {
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

#ifndef LAB_EMULATED

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

// ---------------------------------------------------------------- CUPTI state

struct Window {
    std::mutex mutex;
    bool open = false;       // a traced call is running
    std::uint64_t from = 0;  // CUPTI timestamps of the window
    TraceLog log;
    std::vector<std::string> outside;  // host-memory calls made outside any window, from start-up on
};
Window window;

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

void CUPTIAPI bufferCompleted(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t, std::size_t valid) {
    std::lock_guard<std::mutex> lock(window.mutex);
    CUpti_Activity* record = nullptr;
    while (cupti().nextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
        if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
            if (!window.open || k->start < window.from) continue;
            KernelLaunch launch;
            launch.fullName = demangle(k->name);
            launch.name = kernelShortName(launch.fullName);
            launch.blocks = static_cast<long long>(k->gridX) * k->gridY * k->gridZ;
            launch.threads = k->blockX * k->blockY * k->blockZ;
            if (launch.name == kCanaryKernel) ++window.log.canaryKernels;
            else window.log.kernels.push_back(launch);
        } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
            const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
            if (!window.open || m->start < window.from) continue;
            const char* kind = copyKindName(m->copyKind);
            if (m->bytes == kCanaryBytes && m->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH &&
                window.log.canaryCopies < window.log.canaryKernels)
                ++window.log.canaryCopies;
            else if (kind != nullptr)
                window.log.hostCopies.push_back(std::string(kind) + " copy of " + std::to_string(m->bytes) + " bytes");
        }
    }
    std::free(buffer);
}

// Runtime and driver calls that give the GPU host memory (or the host device
// memory): with them a launcher could sort on the CPU without a copy.
bool hostMemoryApi(const char* name) {
    static const char* const names[] = {"cudaMallocHost", "cudaHostAlloc", "cudaHostRegister", "cudaMallocManaged",
                                        "cuMemAllocHost", "cuMemHostAlloc", "cuMemHostRegister", "cuMemAllocManaged",
                                        "cudaHostGetDevicePointer", "cuMemHostGetDevicePointer"};
    for (const char* n : names)
        if (std::strncmp(name, n, std::strlen(n)) == 0) return true;
    return false;
}

void CUPTIAPI apiCalled(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void* data) {
    const auto* info = static_cast<const CUpti_CallbackData*>(data);
    if (info->callbackSite != CUPTI_API_ENTER || info->functionName == nullptr) return;
    if (!hostMemoryApi(info->functionName)) return;
    std::lock_guard<std::mutex> lock(window.mutex);
    if (window.open) window.log.hostMemoryCalls.push_back(info->functionName);
    else window.outside.push_back(info->functionName);
}

std::string cuptiError(CUptiResult r) {
    const char* text = nullptr;
    cupti().resultString(r, &text);
    return text ? text : "unknown CUPTI error";
}

// The callbacks on host-memory calls, once; "" when they run.
std::string subscribeOnce() {
    static const std::string problem = [] {
        if (!cupti().problem.empty()) return cupti().problem;
        CUpti_SubscriberHandle subscriber;
        for (CUptiResult r : {cupti().subscribe(&subscriber, apiCalled, nullptr),
                              cupti().enableDomain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API),
                              cupti().enableDomain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API)})
            if (r != CUPTI_SUCCESS) return "CUPTI could not start: " + cuptiError(r);
        return std::string();
    }();
    return problem;
}

// When grading (LAB_TRACE=require), host-memory calls are recorded from
// start-up, before the constructors of ordinary static objects run, so
// memory made host-visible before the first traced call shows too.
__attribute__((constructor(101))) void subscribeAtStartUp() {
    if (tracingRequired()) subscribeOnce();
}

// Starts CUPTI once; an empty string when it runs, else why not.
std::string startTracing() {
    if (underComputeSanitizer()) return "tracing is off under compute-sanitizer";
    if (tracingOff()) return "tracing is off (LAB_TRACE=0)";
    if (!detectGpu().available) return "no GPU";
    if (std::string problem = subscribeOnce(); !problem.empty()) return problem;
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

#ifndef LAB_EMULATED

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
    cupti().flushAll(1);
    std::uint64_t now = 0;
    cupti().timestamp(&now);
    {
        std::lock_guard<std::mutex> lock(window.mutex);
        window.log = TraceLog{};
        window.log.traced = true;
        window.from = now;
        window.open = true;
    }
    try {
        canary();
        call();
        canary();
    } catch (...) {
        std::lock_guard<std::mutex> lock(window.mutex);
        window.open = false;
        throw;
    }
    // A kernel that faulted leaves no activity record: report the fault itself.
    const cudaError_t err = cudaDeviceSynchronize();
    cupti().flushAll(1);
    std::lock_guard<std::mutex> lock(window.mutex);
    window.open = false;
    for (const std::string& call : window.outside) window.log.hostMemoryCalls.push_back(call + " (outside a traced call)");
    if (err != cudaSuccess) window.log.fault = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
    return window.log;
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
    emu::recordLaunches(true);
    try {
        canary();
        call();
        canary();
    } catch (...) {
        emu::recordLaunches(false);
        throw;
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
        log.hostMemoryCalls.push_back(emu::hostMemoryCall(i) +
                                      std::string(i < callsBefore ? " (outside a traced call)" : ""));
    if (err != cudaSuccess)
        log.fault = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err) + " (" + emu::faultMessage() + ")";
    return log;
}

#endif  // LAB_EMULATED

Check checkTrace(const TraceLog& log, const std::vector<KernelRule>& rules, const std::string& what) {
    if (!log.traced) {
        if (tracingRequired()) return failCheck("launch tracing did not run: " + log.why + " [" + what + "]");
        return {};
    }
    if (!log.fault.empty()) return failCheck("the launch failed on the GPU (" + log.fault + ") [" + what + "]");
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
    for (const std::string& call : log.hostMemoryCalls) problem("it called " + call);
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
