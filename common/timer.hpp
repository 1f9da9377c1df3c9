// Timing for the demos and benchmarks (never for pass/fail tests).
//
// GPU work is timed with CUDA events around each run, after warm-up runs that
// keep module loading and first-touch costs out; the median of the runs is
// reported. CPU work is timed the same way with a steady clock.
#pragma once

#include <functional>

namespace lab {

struct Timing {
    double medianMs = 0;
};

// `work` must only enqueue device work on the default stream (no host copies).
Timing timeGpu(const std::function<void()>& work, int warmup = 2, int runs = 9);

Timing timeCpu(const std::function<void()>& work, int warmup = 1, int runs = 5);

// Median time of an in-place sort of `bytes` bytes at dWork: each run first
// restores the input from dPristine (a device copy), so the time is that of
// (restore + sort) minus that of (restore) alone. At least 0.001 ms.
double inPlaceSortMs(void* dWork, const void* dPristine, std::size_t bytes, const std::function<void()>& sort,
                     int runs);

// The same for two device buffers of equal size (DeviceBuffer<T>).
template <class Buffer>
double inPlaceSortMs(Buffer& work, const Buffer& pristine, const std::function<void()>& sort, int runs) {
    return inPlaceSortMs(work.data(), pristine.data(), work.size() * sizeof(*work.data()), sort, runs);
}

// Measured device-to-device copy bandwidth in bytes/s (bytes read + bytes
// written), the memory-bound floor that kernel throughputs are compared with.
double copyBandwidth(std::size_t bytes);

}  // namespace lab
