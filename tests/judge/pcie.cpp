// The judge's PCIe meter (pcie.hpp), on NVML's field values, opened with
// dlopen: a machine without a GPU has neither the library nor nvml.h.
#include "pcie.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include <dlfcn.h>

namespace lab::judge {

namespace {

// nvml.h's nvmlFieldValue_t, with a 64-bit value, and its two field ids
// (NVML_FI_DEV_PCIE_COUNT_TX_BYTES, _RX_BYTES).
struct Field {
    unsigned fieldId, scopeId;
    long long timestamp, latencyUsec;
    int valueType, nvmlReturn;
    unsigned long long value;
};
constexpr unsigned kTx = 197, kRx = 198;

// The counters wrap at 2^32 bytes (measured on an H100), less than a tenth of
// a second at PCIe's speed: while a window is open a thread reads them every
// kSample and adds the steps. Each read moves about 40 KB itself (measured on
// an H200: NVML asks the GPU), which the harness's rule allows for
// (tests/grading/harness/pcie.py: SAMPLE_ALLOWANCE per SAMPLE, these same 20 ms).
constexpr auto kSample = std::chrono::milliseconds(20);

}  // namespace

struct PcieMeter::State {
    using GetFields = int (*)(void*, int, Field*);
    GetFields getFields = nullptr;
    void* device = nullptr;
    std::mutex mutex;
    std::condition_variable opened;
    bool open = false;
    unsigned long long last[2] = {0, 0};
    std::uint64_t total = 0;
    std::FILE* log = nullptr;

    bool read(unsigned long long now[2]) {
        Field f[2] = {};
        f[0].fieldId = kTx;
        f[1].fieldId = kRx;
        if (getFields(device, 2, f) != 0 || f[0].nvmlReturn != 0 || f[1].nvmlReturn != 0) return false;
        now[0] = f[0].value;
        now[1] = f[1].value;
        return true;
    }
    // Adds what moved since the last read (the caller holds the mutex).
    void step() {
        unsigned long long now[2];
        if (!read(now)) return;
        for (int i = 0; i < 2; ++i) total += (now[i] - last[i]) & 0xffffffffULL;
        last[0] = now[0];
        last[1] = now[1];
    }
};

PcieMeter* PcieMeter::get() {
    static PcieMeter* const meter = []() -> PcieMeter* {
        const char* uuid = std::getenv("LAB_PCIE_GPU");
        if (uuid == nullptr || *uuid == '\0') return nullptr;
        void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        if (lib == nullptr) return nullptr;
        using Init = int (*)();
        using ByUuid = int (*)(const char*, void**);
        const auto init = reinterpret_cast<Init>(dlsym(lib, "nvmlInit_v2"));
        const auto byUuid = reinterpret_cast<ByUuid>(dlsym(lib, "nvmlDeviceGetHandleByUUID"));
        auto* state = new State;
        state->getFields = reinterpret_cast<State::GetFields>(dlsym(lib, "nvmlDeviceGetFieldValues"));
        if (init == nullptr || byUuid == nullptr || state->getFields == nullptr || init() != 0 ||
            byUuid(uuid, &state->device) != 0 || !state->read(state->last)) {
            delete state;
            return nullptr;
        }
        if (const char* path = std::getenv("LAB_PCIE_LOG"); path != nullptr && *path != '\0')
            state->log = std::fopen(path, "a");
        auto* m = new PcieMeter;
        m->state_ = state;
        std::thread([state] {
            std::unique_lock<std::mutex> lock(state->mutex);
            for (;;) {
                state->opened.wait(lock, [state] { return state->open; });
                if (!state->opened.wait_for(lock, kSample, [state] { return !state->open; })) state->step();
            }
        }).detach();
        return m;
    }();
    return meter;
}

void PcieMeter::open() {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->step();
    state_->total = 0;
    state_->open = true;
    state_->opened.notify_all();
}

std::uint64_t PcieMeter::close() {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->step();
    state_->open = false;
    state_->opened.notify_all();
    return state_->total;
}

void PcieMeter::record(const std::string& name, std::uint64_t arrayBytes, std::uint64_t launches,
                       std::uint64_t moved, double seconds) {
    if (state_->log == nullptr) return;
    std::fprintf(state_->log, "%s\t%llu\t%llu\t%llu\t%.6f\n", name.c_str(),
                 static_cast<unsigned long long>(arrayBytes), static_cast<unsigned long long>(launches),
                 static_cast<unsigned long long>(moved), seconds);
    std::fflush(state_->log);
}

}  // namespace lab::judge
