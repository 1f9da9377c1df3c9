// Whether (and how fast) a graded process can map device memory the judge
// owns, where grading runs it: measured on the GPU by
// tests/judge/share_probe.py, which starts the two ends of one socket, the
// judge's unsandboxed and the graded one inside the harness's sandbox.
//
//   share_probe judge  FD vmm|ipc N       allocates an input of N ints (0, 1, 2, ...)
//                                         and a poisoned output, shares both, waits,
//                                         then checks output[i] == input[i] + 1 itself
//   share_probe graded FD [past-end|host-copy]
//                                         maps what it is sent, runs out[i] = in[i] + 1,
//                                         (past-end: also reads one int past the input's
//                                         mapping; host-copy: does it on the host through
//                                         copies), synchronises and says so
//
// vmm: CUDA's virtual memory management, a POSIX descriptor over the socket
// (shared_memory.hpp); ipc: the legacy cudaIpcGetMemHandle, 64 bytes of text.
#include "shared_memory.hpp"

#include "../../common/cuda_check.hpp"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include <dlfcn.h>

namespace {

// NVML's PCIe byte counters (field values; ids from LAB_PCIE_FIELDS="tx,rx",
// read from nvml.h by share_probe.py), declared here: the toolkit on a
// machine without a GPU has no nvml.h.
struct NvmlField {
    unsigned fieldId, scopeId;
    long long timestamp, latencyUsec;
    int valueType, nvmlReturn;
    unsigned long long value;
};

class PcieCounters {
public:
    PcieCounters() {
        const char* ids = std::getenv("LAB_PCIE_FIELDS");
        void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
        if (ids == nullptr || lib == nullptr) return;
        using Init = int (*)();
        using Handle = int (*)(unsigned, void**);
        auto init = reinterpret_cast<Init>(dlsym(lib, "nvmlInit_v2"));
        auto handle = reinterpret_cast<Handle>(dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
        get_ = reinterpret_cast<Get>(dlsym(lib, "nvmlDeviceGetFieldValues"));
        if (!init || !handle || !get_ || init() != 0 || handle(0, &device_) != 0) get_ = nullptr;
        std::sscanf(ids, "%u,%u", &tx_, &rx_);
    }
    // Bytes (tx, rx) since the last call; the counters are 32 bits wide
    // (measured), so one wrap between two reads is undone.
    bool read(long long* tx, long long* rx) {
        if (get_ == nullptr) return false;
        NvmlField f[2] = {};
        f[0].fieldId = tx_;
        f[1].fieldId = rx_;
        if (get_(device_, 2, f) != 0 || f[0].nvmlReturn != 0 || f[1].nvmlReturn != 0) return false;
        const auto delta = [](unsigned long long now, unsigned long long before) {
            return static_cast<long long>((now - before) & 0xffffffffULL);
        };
        *tx = delta(f[0].value, lastTx_);
        *rx = delta(f[1].value, lastRx_);
        lastTx_ = f[0].value;
        lastRx_ = f[1].value;
        return true;
    }

private:
    using Get = int (*)(void*, int, NvmlField*);
    Get get_ = nullptr;
    void* device_ = nullptr;
    unsigned tx_ = 0, rx_ = 0;
    unsigned long long lastTx_ = 0, lastRx_ = 0;
};

using lab::judge::receiveMessage;
using lab::judge::sendMessage;

__global__ void addOne_k(const int* in, int* out, long long n, long long pastEnd) {
    const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = in[i] + 1;
    if (pastEnd > 0 && i == 0) out[0] = in[pastEnd] + 1;  // one int past the input's mapping
}

__global__ void iota_k(int* data, long long n) {
    const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (i < n) data[i] = static_cast<int>(i);
}

double secondsSince(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string hex(const void* bytes, std::size_t n) {
    std::string s;
    char buf[3];
    for (std::size_t i = 0; i < n; ++i) {
        std::snprintf(buf, sizeof buf, "%02x", static_cast<const unsigned char*>(bytes)[i]);
        s += buf;
    }
    return s;
}

void unhex(const std::string& s, void* bytes, std::size_t n) {
    for (std::size_t i = 0; i < n && 2 * i + 1 < s.size(); ++i)
        static_cast<unsigned char*>(bytes)[i] = static_cast<unsigned char>(std::stoi(s.substr(2 * i, 2), nullptr, 16));
}

int judge(int sock, const std::string& how, long long n) {
    const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(int);
    const auto t0 = std::chrono::steady_clock::now();
    int* in = nullptr;
    int* out = nullptr;
    lab::judge::SharedAllocation a, b;
    std::string message;
    std::vector<int> fds;
    if (how == "vmm") {
        a = lab::judge::allocateShared(bytes);
        b = lab::judge::allocateShared(bytes);
        in = static_cast<int*>(a.device);
        out = static_cast<int*>(b.device);
        message = "vmm " + std::to_string(a.bytes) + " " + std::to_string(n);
        fds = {a.fd, b.fd};
    } else {
        CUDA_CHECK(cudaMalloc(&in, bytes));
        CUDA_CHECK(cudaMalloc(&out, bytes));
        cudaIpcMemHandle_t hIn, hOut;
        CUDA_CHECK(cudaIpcGetMemHandle(&hIn, in));
        CUDA_CHECK(cudaIpcGetMemHandle(&hOut, out));
        message = "ipc " + hex(&hIn, sizeof hIn) + " " + hex(&hOut, sizeof hOut) + " " + std::to_string(n);
    }
    iota_k<<<static_cast<unsigned>((n + 255) / 256), 256>>>(in, n);
    CUDA_CHECK_LAUNCH("iota_k");
    CUDA_CHECK(cudaMemset(out, 0xA5, bytes));
    CUDA_CHECK(cudaDeviceSynchronize());
    const double setUp = secondsSince(t0);
    PcieCounters pcie;
    long long tx = 0, rx = 0;
    const bool counted = pcie.read(&tx, &rx);  // the baseline
    const auto t1 = std::chrono::steady_clock::now();
    sendMessage(sock, message, fds);
    const std::string reply = receiveMessage(sock);
    const double served = secondsSince(t1);
    std::string traffic = "no PCIe counters";
    if (counted && pcie.read(&tx, &rx))
        traffic = "PCIe while served: to host " + std::to_string(tx >> 10) + " KiB, to device " +
                  std::to_string(rx >> 10) + " KiB";
    std::vector<int> got(static_cast<std::size_t>(n)), input(static_cast<std::size_t>(n));
    CUDA_CHECK(cudaMemcpy(got.data(), out, bytes, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(input.data(), in, bytes, cudaMemcpyDeviceToHost));
    long long wrong = 0;
    for (long long i = 0; i < n; ++i) wrong += got[i] != input[i] + 1 || input[i] != i;
    std::printf("%s n=%lld: the graded process said \"%s\"; the judge read %lld wrong values of %lld "
                "(set-up %.1f ms, served in %.1f ms; %s)\n",
                how.c_str(), n, reply.c_str(), wrong, n, 1e3 * setUp, 1e3 * served, traffic.c_str());
    if (how == "vmm") {
        lab::judge::freeShared(a);
        lab::judge::freeShared(b);
    } else {
        CUDA_CHECK(cudaFree(in));
        CUDA_CHECK(cudaFree(out));
    }
    return reply == "done" && wrong == 0 ? 0 : 1;
}

int graded(int sock, bool pastEnd, bool hostCopy) {
    std::vector<int> fds;
    const std::string message = receiveMessage(sock, &fds);
    std::istringstream is(message);
    std::string how;
    is >> how;
    try {
        const int* in = nullptr;
        int* out = nullptr;
        long long n = 0, mapped = 0;
        if (how == "vmm") {
            std::size_t bytes = 0;
            is >> bytes >> n;
            if (fds.size() != 2) throw lab::Error("expected 2 descriptors, got " + std::to_string(fds.size()));
            in = static_cast<const int*>(lab::judge::mapShared(fds[0], bytes));
            out = static_cast<int*>(lab::judge::mapShared(fds[1], bytes));
            mapped = static_cast<long long>(bytes / sizeof(int));
        } else {
            std::string a, b;
            is >> a >> b >> n;
            cudaIpcMemHandle_t hIn, hOut;
            unhex(a, &hIn, sizeof hIn);
            unhex(b, &hOut, sizeof hOut);
            void* p = nullptr;
            CUDA_CHECK(cudaIpcOpenMemHandle(&p, hIn, cudaIpcMemLazyEnablePeerAccess));
            in = static_cast<const int*>(p);
            CUDA_CHECK(cudaIpcOpenMemHandle(&p, hOut, cudaIpcMemLazyEnablePeerAccess));
            out = static_cast<int*>(p);
            mapped = n;
        }
        if (hostCopy) {  // the work done on the host, as a forger would: the traffic shows it
            std::vector<int> h(static_cast<std::size_t>(n));
            CUDA_CHECK(cudaMemcpy(h.data(), in, h.size() * sizeof(int), cudaMemcpyDeviceToHost));
            for (int& x : h) ++x;
            CUDA_CHECK(cudaMemcpy(out, h.data(), h.size() * sizeof(int), cudaMemcpyHostToDevice));
        } else {
            addOne_k<<<static_cast<unsigned>((n + 255) / 256), 256>>>(in, out, n, pastEnd ? mapped : 0);
            CUDA_CHECK_LAUNCH("addOne_k");
        }
        CUDA_CHECK(cudaDeviceSynchronize());
        sendMessage(sock, "done");
    } catch (const std::exception& e) {
        sendMessage(sock, std::string("error: ") + e.what());
        return 1;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: share_probe judge FD vmm|ipc N | share_probe graded FD [past-end]\n");
        return 2;
    }
    const std::string role = argv[1];
    const int sock = std::atoi(argv[2]);
    try {
        if (role == "judge" && argc == 5) return judge(sock, argv[3], std::atoll(argv[4]));
        const std::string mode = argc > 3 ? argv[3] : "";
        if (role == "graded") return graded(sock, mode == "past-end", mode == "host-copy");
    } catch (const std::exception& e) {
        std::printf("%s: %s\n", role.c_str(), e.what());
        return 1;
    }
    std::fprintf(stderr, "share_probe: bad arguments\n");
    return 2;
}
