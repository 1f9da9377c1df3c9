#include "timer.hpp"

#include "cuda_check.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

namespace lab {

namespace {

Timing summarise(std::vector<double> ms) {
    std::sort(ms.begin(), ms.end());
    Timing t;
    t.medianMs = ms[ms.size() / 2];
    return t;
}

// Owns a pair of events so an exception in `work` cannot leak them.
struct EventPair {
    cudaEvent_t start{}, stop{};
    EventPair() {
        CUDA_CHECK(cudaEventCreate(&start));
        CUDA_CHECK(cudaEventCreate(&stop));
    }
    ~EventPair() {
        cudaEventDestroy(start);
        cudaEventDestroy(stop);
    }
    EventPair(const EventPair&) = delete;
    EventPair& operator=(const EventPair&) = delete;
};

}  // namespace

Timing timeGpu(const std::function<void()>& work, int warmup, int runs) {
    EventPair ev;
    for (int r = 0; r < warmup; ++r) work();
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<double> ms;
    for (int r = 0; r < std::max(runs, 1); ++r) {
        CUDA_CHECK(cudaEventRecord(ev.start));
        work();
        CUDA_CHECK(cudaEventRecord(ev.stop));
        CUDA_CHECK(cudaEventSynchronize(ev.stop));
        float elapsed = 0;
        CUDA_CHECK(cudaEventElapsedTime(&elapsed, ev.start, ev.stop));
        ms.push_back(elapsed);
    }
    return summarise(ms);
}

Timing timeCpu(const std::function<void()>& work, int warmup, int runs) {
    for (int r = 0; r < warmup; ++r) work();
    std::vector<double> ms;
    for (int r = 0; r < std::max(runs, 1); ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        work();
        const auto t1 = std::chrono::steady_clock::now();
        ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    return summarise(ms);
}

double inPlaceSortMs(void* dWork, const void* dPristine, std::size_t bytes, const std::function<void()>& sort,
                     int runs) {
    const auto restore = [&] { CUDA_CHECK(cudaMemcpyAsync(dWork, dPristine, bytes, cudaMemcpyDeviceToDevice)); };
    const double both = timeGpu([&] { restore(); sort(); }, 1, runs).medianMs;
    return std::max(both - timeGpu(restore, 1, runs).medianMs, 1e-3);
}

double copyBandwidth(std::size_t bytes) {
    void *src = nullptr, *dst = nullptr;
    CUDA_CHECK(cudaMalloc(&src, bytes));
    const cudaError_t err = cudaMalloc(&dst, bytes);
    if (err != cudaSuccess) {
        cudaFree(src);
        CUDA_CHECK(err);
    }
    double bw = 0;
    try {
        CUDA_CHECK(cudaMemset(src, 1, bytes));
        const Timing t = timeGpu([&] { CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice)); });
        bw = 2.0 * static_cast<double>(bytes) / (t.medianMs * 1e-3);
    } catch (...) {
        cudaFree(src);
        cudaFree(dst);
        throw;
    }
    cudaFree(src);
    cudaFree(dst);
    return bw;
}

}  // namespace lab
