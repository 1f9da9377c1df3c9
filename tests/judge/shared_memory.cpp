// Device memory shared between the judge and a graded process (see the header).
#include "shared_memory.hpp"

#include "../../common/cuda_check.hpp"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <sstream>

#include <sys/socket.h>
#include <unistd.h>

namespace lab::judge {

namespace {

// The driver's functions, asked of the runtime (no link with libcuda: a
// graded process links what it always did, and its student object no more).
struct Driver {
    decltype(&cuGetErrorName) getErrorName;
    decltype(&cuGetErrorString) getErrorString;
    decltype(&cuDeviceGet) deviceGet;
    decltype(&cuMemGetAllocationGranularity) granularity;
    decltype(&cuMemCreate) create;
    decltype(&cuMemRelease) release;
    decltype(&cuMemAddressReserve) reserve;
    decltype(&cuMemAddressFree) addressFree;
    decltype(&cuMemMap) map;
    decltype(&cuMemUnmap) unmap;
    decltype(&cuMemSetAccess) setAccess;
    decltype(&cuMemExportToShareableHandle) exportHandle;
    decltype(&cuMemImportFromShareableHandle) importHandle;
};

template <class F>
void entry(const char* name, F& f) {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
#if CUDART_VERSION >= 12050
    const cudaError_t err = cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &found);
#else
    const cudaError_t err = cudaGetDriverEntryPoint(name, &p, cudaEnableDefault, &found);
#endif
    if (err != cudaSuccess || found != cudaDriverEntryPointSuccess || p == nullptr)
        throw Error(std::string("the CUDA driver has no ") + name + " (virtual memory management needs CUDA 10.2+)");
    f = reinterpret_cast<F>(p);
}

const Driver& driver() {
    static const Driver d = [] {
        Driver x{};
        entry("cuGetErrorName", x.getErrorName);
        entry("cuGetErrorString", x.getErrorString);
        entry("cuDeviceGet", x.deviceGet);
        entry("cuMemGetAllocationGranularity", x.granularity);
        entry("cuMemCreate", x.create);
        entry("cuMemRelease", x.release);
        entry("cuMemAddressReserve", x.reserve);
        entry("cuMemAddressFree", x.addressFree);
        entry("cuMemMap", x.map);
        entry("cuMemUnmap", x.unmap);
        entry("cuMemSetAccess", x.setAccess);
        entry("cuMemExportToShareableHandle", x.exportHandle);
        entry("cuMemImportFromShareableHandle", x.importHandle);
        return x;
    }();
    return d;
}

void check(CUresult r, const char* what) {
    if (r == CUDA_SUCCESS) return;
    const char* name = nullptr;
    const char* text = nullptr;
    driver().getErrorName(r, &name);
    driver().getErrorString(r, &text);
    std::ostringstream os;
    os << what << " failed: " << (name ? name : "?") << " (" << (text ? text : "no description") << ")";
    throw Error(os.str());
}

// The device the runtime made current, with its primary context current for
// the driver calls below (the runtime creates it on first use).
CUdevice currentDevice() {
    int ordinal = 0;
    CUDA_CHECK(cudaGetDevice(&ordinal));
    CUDA_CHECK(cudaFree(nullptr));  // the runtime's context exists and is current
    CUdevice dev = 0;
    check(driver().deviceGet(&dev, ordinal), "cuDeviceGet");
    return dev;
}

CUmemAllocationProp properties(CUdevice dev) {
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    return prop;
}

// Reserves `bytes` and one granularity more, maps `handle` at the start and
// lets the current device read and write it. The rest stays unmapped, so that
// an access just past the allocation faults (next to another mapping it
// would read that one: measured).
std::size_t reserved(std::size_t bytes) { return bytes + sharedGranularity(); }

void* mapHere(CUmemGenericAllocationHandle handle, std::size_t bytes, CUdevice dev) {
    CUdeviceptr ptr = 0;
    check(driver().reserve(&ptr, reserved(bytes), 0, 0, 0), "cuMemAddressReserve");
    if (const CUresult r = driver().map(ptr, bytes, 0, handle, 0); r != CUDA_SUCCESS) {
        driver().addressFree(ptr, reserved(bytes));
        check(r, "cuMemMap");
    }
    CUmemAccessDesc access = {};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = dev;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if (const CUresult r = driver().setAccess(ptr, bytes, &access, 1); r != CUDA_SUCCESS) {
        driver().unmap(ptr, bytes);
        driver().addressFree(ptr, reserved(bytes));
        check(r, "cuMemSetAccess");
    }
    return reinterpret_cast<void*>(ptr);
}

}  // namespace

std::size_t sharedGranularity() {
    const CUmemAllocationProp prop = properties(currentDevice());
    std::size_t granularity = 0;
    check(driver().granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
          "cuMemGetAllocationGranularity");
    return granularity;
}

std::size_t sharedBytes(std::size_t bytes) {
    const std::size_t granularity = sharedGranularity();
    return std::max(granularity, (bytes + granularity - 1) / granularity * granularity);
}

SharedAllocation allocateShared(std::size_t bytes) {
    const CUdevice dev = currentDevice();
    const CUmemAllocationProp prop = properties(dev);
    SharedAllocation a;
    a.bytes = sharedBytes(bytes);
    CUmemGenericAllocationHandle handle = 0;
    check(driver().create(&handle, a.bytes, &prop, 0), "cuMemCreate");
    a.handle = handle;
    try {
        a.device = mapHere(handle, a.bytes, dev);
        check(driver().exportHandle(&a.fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
              "cuMemExportToShareableHandle");
    } catch (...) {
        freeShared(a);
        throw;
    }
    return a;
}

void freeShared(SharedAllocation& a) {
    if (a.device != nullptr) {
        driver().unmap(reinterpret_cast<CUdeviceptr>(a.device), a.bytes);
        driver().addressFree(reinterpret_cast<CUdeviceptr>(a.device), reserved(a.bytes));
    }
    if (a.handle != 0) driver().release(a.handle);
    if (a.fd >= 0) close(a.fd);
    a = SharedAllocation{};
}

void* mapShared(int fd, std::size_t bytes) {
    const CUdevice dev = currentDevice();
    CUmemGenericAllocationHandle handle = 0;
    check(driver().importHandle(&handle, reinterpret_cast<void*>(static_cast<std::intptr_t>(fd)),
                                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
          "cuMemImportFromShareableHandle");
    void* device = nullptr;
    try {
        device = mapHere(handle, bytes, dev);
    } catch (...) {
        driver().release(handle);
        throw;
    }
    driver().release(handle);  // the mapping keeps the memory alive until unmapped
    return device;
}

void unmapShared(void* device, std::size_t bytes) {
    driver().unmap(reinterpret_cast<CUdeviceptr>(device), bytes);
    driver().addressFree(reinterpret_cast<CUdeviceptr>(device), reserved(bytes));
}

void sendMessage(int socket, const std::string& text, const std::vector<int>& fds) {
    iovec part = {const_cast<char*>(text.data()), text.size()};
    msghdr msg = {};
    msg.msg_iov = &part;
    msg.msg_iovlen = 1;
    std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
    if (!fds.empty()) {
        msg.msg_control = control.data();
        msg.msg_controllen = control.size();
        cmsghdr* c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
        std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    if (sendmsg(socket, &msg, MSG_NOSIGNAL) != static_cast<ssize_t>(text.size()))
        throw Error(std::string("sending a message to the other process failed: ") + std::strerror(errno));
}

std::string receiveMessage(int socket, std::vector<int>* fds, std::size_t cap) {
    std::string text(cap, '\0');
    iovec part = {text.data(), text.size()};
    msghdr msg = {};
    msg.msg_iov = &part;
    msg.msg_iovlen = 1;
    char control[CMSG_SPACE(sizeof(int) * 16)];
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t got = recvmsg(socket, &msg, MSG_CMSG_CLOEXEC);
    if (got < 0) throw Error(std::string("receiving a message from the other process failed: ") + std::strerror(errno));
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        const std::size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (std::size_t i = 0; i < n; ++i) {
            int fd = -1;
            std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
            if (fds != nullptr) fds->push_back(fd);
            else close(fd);
        }
    }
    text.resize(static_cast<std::size_t>(got));
    return text;
}

}  // namespace lab::judge
