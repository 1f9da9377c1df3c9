// Launch tracing with CUPTI: the activity API records what ran on the GPU
// (kernels, copies) whatever API launched it; the callback API sees the
// runtime and driver calls that make host memory visible to the GPU.
#include "trace.hpp"

#include "../common/gpu.hpp"

#include <cupti.h>
#include <cuda_runtime_api.h>
#include <cxxabi.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>

namespace lab::test {

namespace {

// ---------------------------------------------------------------- CUPTI state

struct Window {
    std::mutex mutex;
    bool open = false;       // a traced call is running
    std::uint64_t from = 0;  // CUPTI timestamps of the window
    TraceLog log;
};
Window window;

std::string demangle(const char* name) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
    return status == 0 && out ? std::string(out.get()) : std::string(name);
}

// "void lab::mergeSmall_k<int>(int const*, int, ...)" -> "mergeSmall_k"
std::string shortName(const std::string& full) {
    std::string s = full;
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
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
        if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
            if (!window.open || k->start < window.from) continue;
            KernelLaunch launch;
            launch.fullName = demangle(k->name);
            launch.name = shortName(launch.fullName);
            launch.blocks = static_cast<long long>(k->gridX) * k->gridY * k->gridZ;
            launch.threads = k->blockX * k->blockY * k->blockZ;
            window.log.kernels.push_back(launch);
        } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
            const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
            if (!window.open || m->start < window.from) continue;
            if (const char* kind = copyKindName(m->copyKind))
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
}

std::string cuptiError(CUptiResult r) {
    const char* text = nullptr;
    cuptiGetResultString(r, &text);
    return text ? text : "unknown CUPTI error";
}

// Starts CUPTI once; an empty string when it runs, else why not.
std::string startTracing() {
    const char* env = std::getenv("LAB_TRACE");
    if (env != nullptr && std::strcmp(env, "0") == 0) return "tracing is off (LAB_TRACE=0)";
    if (!detectGpu().available) return "no GPU";
    CUpti_SubscriberHandle subscriber;
    for (CUptiResult r : {cuptiActivityRegisterCallbacks(bufferRequested, bufferCompleted),
                          cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
                          cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY),
                          cuptiSubscribe(&subscriber, apiCalled, nullptr),
                          cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API),
                          cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API)})
        if (r != CUPTI_SUCCESS) return "CUPTI could not start: " + cuptiError(r);
    return "";
}

const std::string& tracingProblem() {
    static const std::string problem = startTracing();
    return problem;
}

bool tracingRequired() {
    const char* env = std::getenv("LAB_TRACE");
    return env != nullptr && std::strcmp(env, "require") == 0;
}

}  // namespace

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
    cuptiActivityFlushAll(1);
    std::uint64_t now = 0;
    cuptiGetTimestamp(&now);
    {
        std::lock_guard<std::mutex> lock(window.mutex);
        window.log = TraceLog{};
        window.log.traced = true;
        window.from = now;
        window.open = true;
    }
    try {
        call();
    } catch (...) {
        std::lock_guard<std::mutex> lock(window.mutex);
        window.open = false;
        throw;
    }
    // A kernel that faulted leaves no activity record: report the fault itself.
    const cudaError_t err = cudaDeviceSynchronize();
    cuptiActivityFlushAll(1);
    std::lock_guard<std::mutex> lock(window.mutex);
    window.open = false;
    if (err != cudaSuccess) window.log.fault = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
    return window.log;
}

Check checkTrace(const TraceLog& log, const std::vector<KernelRule>& rules, const std::string& what) {
    if (!log.traced) {
        if (tracingRequired()) return failCheck("launch tracing did not run: " + log.why + " [" + what + "]");
        return {};
    }
    if (!log.fault.empty()) return failCheck("the launch failed on the GPU (" + log.fault + ") [" + what + "]");
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
