// The CUDA runtime API (emu_runtime.hpp) on the emulated device: its errors,
// device and host-visible memory with guard pages, copies, streams and
// events (which time the host), and the log of launches and copies the
// graders' trace reads.
#include "emu_internal.hpp"

#include <sys/mman.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace emu {

cudaError_t lastError = cudaSuccess;
cudaError_t stickyError = cudaSuccess;
Log trace;
std::map<std::uintptr_t, Allocation> allocations;

// Device memory is out of the host's reach, as on a GPU: its pages are
// readable only while the emulator itself touches them (a launch, a copy),
// so host code that dereferences a device pointer crashes here as there.
void deviceMemoryOpen(bool open) {
    for (auto& [start, m] : allocations)
        if (m.device) mprotect(m.mapping, m.mapped, open ? PROT_READ | PROT_WRITE : PROT_NONE);
}

namespace {

std::size_t memoryLimit() {
    static const std::size_t limit = [] {
        const char* env = std::getenv("EMU_MEMORY_MB");
        const long long mb = env ? std::atoll(env) : 4096;
        return static_cast<std::size_t>(mb > 0 ? mb : 4096) << 20;
    }();
    return limit;
}

std::size_t allocatedBytes = 0;

void hostMemoryCallMade(const char* name) { trace.memoryCalls.push_back(name); }

struct Open {
    Open() { deviceMemoryOpen(true); }
    ~Open() { deviceMemoryOpen(false); }
};

cudaError_t fail(cudaError_t err) {
    lastError = err;
    return err;
}

cudaError_t allocate(void** ptr, std::size_t bytes, bool device, const char* call) {
    if (stickyError != cudaSuccess) return stickyError;
    if (!ptr) return fail(cudaErrorInvalidValue);
    if (!device) hostMemoryCallMade(call);
    *ptr = nullptr;
    if (bytes == 0) return cudaSuccess;
    if (device && !sparse && allocatedBytes + bytes > memoryLimit()) return fail(cudaErrorMemoryAllocation);
    const std::size_t page = 4096, mapped = (bytes + page - 1) / page * page + page;  // a guard page after
    // Under a SparseRun the mapping is shared: a private writable one counts
    // whole against a data limit (RLIMIT_DATA), a shared one only where touched.
    void* m = mmap(nullptr, mapped, device ? PROT_NONE : PROT_READ | PROT_WRITE,
                   (device && sparse ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return fail(cudaErrorMemoryAllocation);
    char* start = static_cast<char*>(m);
    if (!device) mprotect(start + mapped - page, page, PROT_NONE);
    allocations[reinterpret_cast<std::uintptr_t>(start)] = {start, bytes, start, mapped - page, device};
    if (device) allocatedBytes += bytes;
    *ptr = start;
    return cudaSuccess;
}

// After a fault it still frees (and returns the error), so that the memory
// of a test case that faulted is back when clearFault starts the next.
cudaError_t release(void* ptr, bool device) {
    if (!ptr) return stickyError;
    auto it = allocations.find(reinterpret_cast<std::uintptr_t>(ptr));
    if (it == allocations.end() || it->second.device != device)
        return stickyError != cudaSuccess ? stickyError : fail(cudaErrorInvalidDevicePointer);
    if (lastHit == &it->second) lastHit = nullptr;
    munmap(it->second.mapping, it->second.mapped + 4096);
    if (device) allocatedBytes -= it->second.bytes;
    allocations.erase(it);
    return stickyError;
}

const char* const kKindNames[] = {"host-to-host", "host-to-device", "device-to-host", "device-to-device", "default"};

cudaError_t copy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
    if (stickyError != cudaSuccess) return stickyError;
    if (bytes == 0) return cudaSuccess;
    if (!dst || !src || kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault) return fail(cudaErrorInvalidValue);
    const Allocation* d = holding(dst, bytes);
    const Allocation* s = holding(src, bytes);
    const bool dDevice = d && d->device, sDevice = s && s->device;
    if (kind == cudaMemcpyDefault)
        kind = sDevice ? (dDevice ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost)
                       : (dDevice ? cudaMemcpyHostToDevice : cudaMemcpyHostToHost);
    // a device side must lie inside one device allocation
    const bool dWanted = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    const bool sWanted = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    if ((dWanted && !d) || (sWanted && !s)) return fail(cudaErrorInvalidValue);
    if (trace.on && (kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToHost))
        trace.copies.push_back(std::string(kKindNames[kind]) + " copy of " + std::to_string(bytes) + " bytes");
    Open open;
    std::memmove(dst, src, bytes);
    return cudaSuccess;
}

struct Event {
    std::chrono::steady_clock::time_point at;
    bool recorded = false;
};

cudaDeviceProp properties() {
    cudaDeviceProp p{};
    std::snprintf(p.name, sizeof p.name, "EMULATED on the CPU (no GPU)");
    p.totalGlobalMem = memoryLimit();
    p.sharedMemPerBlock = kStaticSharedLimit;
    p.sharedMemPerBlockOptin = kStaticSharedLimit;
    p.sharedMemPerMultiprocessor = 2 * kStaticSharedLimit;
    p.regsPerBlock = 65536;
    p.warpSize = 32;
    p.maxThreadsPerBlock = kMaxThreads;
    p.maxThreadsDim[0] = p.maxThreadsDim[1] = kMaxThreads;
    p.maxThreadsDim[2] = 64;
    p.maxGridSize[0] = 2147483647;
    p.maxGridSize[1] = p.maxGridSize[2] = 65535;
    p.clockRate = 1000000;
    p.major = 0;  // no compute capability: nothing real runs here
    p.minor = 0;
    p.multiProcessorCount = 1;
    p.maxThreadsPerMultiProcessor = 2048;
    p.maxBlocksPerMultiProcessor = 32;
    p.canMapHostMemory = 1;
    return p;
}

}  // namespace

// ---------------------------------------------------------------- the trace log (emu.hpp)
void recordLaunches(bool on) {
    trace.on = on;
    if (on) {
        trace.names.clear();
        trace.blocks.clear();
        trace.threads.clear();
        trace.copies.clear();
    }
}
std::size_t launchCount() { return trace.names.size(); }
const char* launchName(std::size_t i) { return trace.names[i].c_str(); }
long long launchBlocks(std::size_t i) { return trace.blocks[i]; }
int launchThreads(std::size_t i) { return trace.threads[i]; }
std::size_t hostCopyCount() { return trace.copies.size(); }
const char* hostCopy(std::size_t i) { return trace.copies[i].c_str(); }
std::size_t hostMemoryCallCount() { return trace.memoryCalls.size(); }
const char* hostMemoryCall(std::size_t i) { return trace.memoryCalls[i].c_str(); }

}  // namespace emu

// ---------------------------------------------------------------- the API (emu_runtime.hpp)
using emu::fail;

cudaError_t cudaGetDeviceCount(int* count) {
    *count = 1;
    return cudaSuccess;
}
cudaError_t cudaGetDevice(int* device) {
    *device = 0;
    return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : fail(cudaErrorInvalidValue); }
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
    if (device != 0 || !prop) return fail(cudaErrorInvalidValue);
    *prop = emu::properties();
    return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize() { return emu::stickyError; }
cudaError_t cudaDeviceReset() { return cudaSuccess; }
cudaError_t cudaGetLastError() {
    if (emu::stickyError != cudaSuccess) return emu::stickyError;
    const cudaError_t e = emu::lastError;
    emu::lastError = cudaSuccess;
    return e;
}
cudaError_t cudaPeekAtLastError() { return emu::stickyError != cudaSuccess ? emu::stickyError : emu::lastError; }

const char* cudaGetErrorName(cudaError_t err) {
    switch (err) {
        case cudaSuccess: return "cudaSuccess";
        case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
        case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
        case cudaErrorInitializationError: return "cudaErrorInitializationError";
        case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
        case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
        case cudaErrorInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
        case cudaErrorInvalidMemcpyDirection: return "cudaErrorInvalidMemcpyDirection";
        case cudaErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
        case cudaErrorNoDevice: return "cudaErrorNoDevice";
        case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
        case cudaErrorLaunchOutOfResources: return "cudaErrorLaunchOutOfResources";
        case cudaErrorNotSupported: return "cudaErrorNotSupported";
        default: return "cudaErrorUnknown";
    }
}
const char* cudaGetErrorString(cudaError_t err) {
    switch (err) {
        case cudaSuccess: return "no error";
        case cudaErrorInvalidValue: return "invalid argument";
        case cudaErrorMemoryAllocation: return "out of memory (emulated device; EMU_MEMORY_MB sets its size)";
        case cudaErrorInvalidConfiguration: return "invalid configuration argument";
        case cudaErrorInvalidDevicePointer: return "invalid device pointer";
        case cudaErrorIllegalAddress: return "the emulator stopped a kernel (see the EMULATED GPU FAULT line)";
        default: return cudaGetErrorName(err);
    }
}
cudaError_t cudaMemGetInfo(std::size_t* free, std::size_t* total) {
    *total = emu::memoryLimit();
    *free = emu::memoryLimit() - emu::allocatedBytes;
    return emu::stickyError;
}

cudaError_t cudaMalloc(void** ptr, std::size_t bytes) { return emu::allocate(ptr, bytes, true, "cudaMalloc"); }
cudaError_t cudaFree(void* ptr) { return emu::release(ptr, true); }
cudaError_t cudaMallocAsync(void** ptr, std::size_t bytes, cudaStream_t) { return cudaMalloc(ptr, bytes); }
cudaError_t cudaFreeAsync(void* ptr, cudaStream_t) { return cudaFree(ptr); }
cudaError_t cudaMallocManaged(void** ptr, std::size_t bytes, unsigned) {
    return emu::allocate(ptr, bytes, false, "cudaMallocManaged");
}
cudaError_t cudaMallocHost(void** ptr, std::size_t bytes) { return emu::allocate(ptr, bytes, false, "cudaMallocHost"); }
cudaError_t cudaHostAlloc(void** ptr, std::size_t bytes, unsigned) {
    return emu::allocate(ptr, bytes, false, "cudaHostAlloc");
}
cudaError_t cudaFreeHost(void* ptr) { return emu::release(ptr, false); }
cudaError_t cudaHostRegister(void* ptr, std::size_t bytes, unsigned) {
    emu::hostMemoryCallMade("cudaHostRegister");
    if (!ptr || bytes == 0) return fail(cudaErrorInvalidValue);
    emu::allocations[reinterpret_cast<std::uintptr_t>(ptr)] = {static_cast<char*>(ptr), bytes, nullptr, 0, false};
    return cudaSuccess;
}
cudaError_t cudaHostUnregister(void* ptr) {
    auto it = emu::allocations.find(reinterpret_cast<std::uintptr_t>(ptr));
    if (it == emu::allocations.end() || it->second.mapping) return fail(cudaErrorInvalidValue);
    if (emu::lastHit == &it->second) emu::lastHit = nullptr;
    emu::allocations.erase(it);
    return cudaSuccess;
}
cudaError_t cudaHostGetDevicePointer(void** device, void* host, unsigned) {
    emu::hostMemoryCallMade("cudaHostGetDevicePointer");
    *device = host;
    return cudaSuccess;
}
cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
    return emu::copy(dst, src, bytes, kind);
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind, cudaStream_t) {
    return emu::copy(dst, src, bytes, kind);
}
cudaError_t cudaMemset(void* dst, int value, std::size_t bytes) {
    if (emu::stickyError != cudaSuccess) return emu::stickyError;
    if (bytes == 0) return cudaSuccess;
    if (!emu::holding(dst, bytes)) return fail(cudaErrorInvalidValue);
    emu::Open open;
    std::memset(dst, value, bytes);
    return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* dst, int value, std::size_t bytes, cudaStream_t) {
    return cudaMemset(dst, value, bytes);
}
cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int) {
    *pool = nullptr;
    return cudaSuccess;
}
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t, cudaMemPoolAttr, void*) { return cudaSuccess; }

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
    *stream = nullptr;
    return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return emu::stickyError; }
cudaError_t cudaEventCreate(cudaEvent_t* event) {
    *event = reinterpret_cast<cudaEvent_t>(new emu::Event);
    return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {
    delete reinterpret_cast<emu::Event*>(event);
    return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t) {
    auto* e = reinterpret_cast<emu::Event*>(event);
    e->at = std::chrono::steady_clock::now();
    e->recorded = true;
    return emu::stickyError;
}
cudaError_t cudaEventSynchronize(cudaEvent_t) { return emu::stickyError; }
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
    const auto* a = reinterpret_cast<emu::Event*>(start);
    const auto* b = reinterpret_cast<emu::Event*>(end);
    if (!a->recorded || !b->recorded) return fail(cudaErrorInvalidValue);
    *ms = std::chrono::duration<float, std::milli>(b->at - a->at).count();
    return cudaSuccess;
}
