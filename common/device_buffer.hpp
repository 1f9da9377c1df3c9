// A device array with poisoned contents and guard zones, for checked runs.
//
//      [ guard | n elements | guard ]      all bytes start as kPoisonByte (checks.hpp)
//              ^ data()
//
// Outputs start poisoned, so an element the kernel never wrote shows up as a
// wrong value; the guards catch writes just outside the array, which
// compute-sanitizer would not see because they stay inside the allocation.
// download() reads back everything and records whether the guards survived.
#pragma once

#include "checks.hpp"
#include "cuda_check.hpp"
#include "gpu.hpp"

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace lab {

// Guard elements on each side of a DeviceBuffer: 1024, or none under
// compute-sanitizer (or with LAB_EXACT_ALLOCS=1), so that the sanitizer sees
// accesses outside an array: a read of a guard zone stays inside the
// allocation and is invisible to it. The array then ends exactly where its
// allocation ends (see the constructor).
inline std::size_t defaultGuardElements() {
    static const bool exact = [] {
        const char* env = std::getenv("LAB_EXACT_ALLOCS");
        return (env != nullptr && *env == '1') || underComputeSanitizer() || kEmulated;
    }();
    return exact ? 0 : 1024;
}

// Where checked arrays get their memory: cudaMalloc, unless a program routes
// them elsewhere (the grading's judge, tests/judge/: memory it shares with
// the graded process).
struct ArrayMemory {
    cudaError_t (*allocate)(void** p, std::size_t bytes);
    void (*release)(void* p);
};
inline ArrayMemory& arrayMemory() {
    static ArrayMemory m{[](void** p, std::size_t bytes) { return cudaMalloc(p, bytes); },
                         [](void* p) { cudaFree(p); }};
    return m;
}

template <class T>
class DeviceBuffer {
public:
    explicit DeviceBuffer(std::size_t n, std::size_t guard = defaultGuardElements()) : n_(n), guard_(guard) {
        // Without guards, the front guard becomes the slack that rounds the
        // allocation up to 256 bytes, so that the first element past the array
        // is the first byte past the allocation (compute-sanitizer's padding
        // then catches a read of it).
        constexpr std::size_t kRound = sizeof(T) < 256 ? 256 / sizeof(T) : 1;  // elements in 256 bytes
        front_ = guard_ > 0 ? guard_ : (kRound - n_ % kRound) % kRound;
        const std::size_t bytes = total() * sizeof(T);
        const cudaError_t err = arrayMemory().allocate(reinterpret_cast<void**>(&base_), bytes);
        if (err == cudaErrorMemoryAllocation) {
            cudaGetLastError();  // clear it: the device is still usable
            std::ostringstream os;
            os << "not enough device memory: " << n_ << " elements need " << formatBytes(double(bytes))
               << ", only " << formatBytes(double(freeDeviceBytes())) << " are free";
            throw Error(os.str());
        }
        CUDA_CHECK(err);
        poison();
    }
    ~DeviceBuffer() {
        if (base_ != nullptr) arrayMemory().release(base_);
    }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    DeviceBuffer(DeviceBuffer&& other) noexcept
        : base_(std::exchange(other.base_, nullptr)), n_(other.n_), guard_(other.guard_), front_(other.front_) {}

    T* data() { return base_ + front_; }
    const T* data() const { return base_ + front_; }
    std::size_t size() const { return n_; }

    // Every byte, guards included, back to kPoisonByte.
    void poison() { CUDA_CHECK(cudaMemset(base_, kPoisonByte, total() * sizeof(T))); }

    void upload(const std::vector<T>& values) {
        LAB_REQUIRE(values.size() == n_, "upload of " << values.size() << " values into a buffer of " << n_);
        if (n_ > 0) CUDA_CHECK(cudaMemcpy(data(), values.data(), n_ * sizeof(T), cudaMemcpyHostToDevice));
    }

    // The n elements; also checks the guards (see guards()).
    std::vector<T> download() {
        std::vector<T> all(total());
        CUDA_CHECK(cudaMemcpy(all.data(), base_, all.size() * sizeof(T), cudaMemcpyDeviceToHost));
        guards_ = checkGuard(all, 0, "before");
        if (guards_) guards_ = checkGuard(all, front_ + n_, "after");
        return std::vector<T>(all.begin() + front_, all.begin() + front_ + n_);
    }

    // Whether the guard zones still held poison at the last download().
    const Check& guards() const { return guards_; }

private:
    Check checkGuard(const std::vector<T>& all, std::size_t from, const char* side) const {
        const auto* bytes = reinterpret_cast<const unsigned char*>(all.data() + from);
        for (std::size_t b = 0; b < guard_ * sizeof(T); ++b) {
            if (bytes[b] != kPoisonByte) {
                const std::size_t elem = b / sizeof(T);
                std::ostringstream os;
                os << "write outside the array: element "
                   << (side[0] == 'b' ? "[-" + std::to_string(guard_ - elem) + "]"
                                      : "[n+" + std::to_string(elem) + "]")
                   << " " << side << " the array of n = " << n_ << " was overwritten";
                return failCheck(os.str());
            }
        }
        return {};
    }

    T* base_ = nullptr;
    std::size_t total() const { return front_ + n_ + guard_; }

    std::size_t n_ = 0, guard_ = 0, front_ = 0;  // front_: guard_, or the rounding slack when there is no guard
    Check guards_;
};

// Checks what out.download() returned (`got`): guards intact, then
// checkOutput against `expected` (order, permutation, stability).
template <class T>
Check checkDownloaded(const DeviceBuffer<T>& out, const std::vector<T>& got, const std::vector<T>& expected,
                      const std::string& ctx, Segments segments = {}) {
    if (!out.guards()) return failCheck(out.guards().message + " [" + ctx + "]");
    return checkOutput(got, expected, ctx, segments);
}

// Downloads an output buffer and checks it (checkDownloaded).
template <class T>
Check checkDeviceOutput(DeviceBuffer<T>& out, const std::vector<T>& expected, const std::string& ctx) {
    const std::vector<T> got = out.download();
    return checkDownloaded(out, got, expected, ctx);
}

}  // namespace lab
