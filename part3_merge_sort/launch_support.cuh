// Plumbing that every Part 3 implementation shares (given, not part of the
// questions): temporary device memory that lives until the kernels using it
// have run, an index range, and the dispatch from a run-time LaunchShape to
// template arguments.
#pragma once

#include "part3.cuh"
#include "study_shapes.hpp"

#include "../common/cuda_check.hpp"
#include "../common/gpu.hpp"

#include <cuda_runtime_api.h>

#include <tuple>

namespace lab {

// Tuning: by default the device's memory pool hands freed memory back to the
// system at every synchronization, so each launcher's cudaMallocAsync maps
// fresh memory, which can cost more than a merge of a million values.
// Letting the pool keep up to 1 GiB between calls makes a repeated
// allocation a lookup; more than that still goes back.
inline void keepPoolMemory() {
    static const bool once = [] {
        int device = 0;
        CUDA_CHECK(cudaGetDevice(&device));
        cudaMemPool_t pool;
        CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
        unsigned long long keep = 1ull << 30;
        CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
        return true;
    }();
    (void)once;
}

// n values of temporary device memory, allocated and freed in stream order on
// stream 0 (cudaMallocAsync / cudaFreeAsync): the launchers return before the
// kernels run, and the memory stays valid until those kernels are done.
// Throws lab::Error naming the bytes needed and free when the device is short.
template <class T>
class Scratch {
public:
    explicit Scratch(long long n) {
        keepPoolMemory();
        const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(T);
        const cudaError_t err = cudaMallocAsync(reinterpret_cast<void**>(&p_), bytes, 0);
        if (err == cudaErrorMemoryAllocation) throwOutOfDeviceMemory("temporary storage", bytes);
        CUDA_CHECK(err);
    }
    ~Scratch() { cudaFreeAsync(p_, 0); }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    T* get() const { return p_; }

private:
    T* p_ = nullptr;
};

// A block may declare at most 48 KB of __shared__ arrays. A sort tile of
// 512 x 17 ints is 34 KB, but of 8-byte Tagged values 68 KB, which does not
// compile. The given mergeLarge and mergeSort therefore launch with
// fittingThreads<THREADS, ITEMS, T>() threads: THREADS, halved until a tile
// of T (plus one value) fits (Tagged at 512 x 17: 256 x 17, 34 KB again).
// Every study shape (int) fits as it is; ITEMS never changes.
template <int THREADS, int ITEMS, class T>
constexpr int fittingThreads() {
    int threads = THREADS;
    while (threads > 32 && (threads * ITEMS + 1) * sizeof(T) > 48 * 1024) threads /= 2;
    return threads;
}

// Programmatic dependent launch (compute capability 9.0 on; elsewhere these
// do nothing). A kernel launched with launchAfterPrevious() may start while
// the kernel before it in the stream is still finishing: it must call
// waitForPreviousKernel() in every block before it reads what that kernel
// wrote, or writes what it reads. allowNextKernel() says that the next kernel
// may be scheduled now (this one keeps running).
__device__ inline void waitForPreviousKernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cudaGridDependencySynchronize();
#endif
}
__device__ inline void allowNextKernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cudaTriggerProgrammaticLaunchCompletion();
#endif
}

// kernel<<<grid, block>>>(args...) on stream 0, allowed to overlap the end of
// the previous kernel (see above). Checked like every launch.
template <class... Params, class... Args>
void launchAfterPrevious(void (*kernel)(Params...), unsigned grid, unsigned block, Args... args) {
    cudaLaunchAttribute overlap[1] = {};
    overlap[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    overlap[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(grid);
    config.blockDim = dim3(block);
    config.stream = 0;
    config.attrs = overlap;
    config.numAttrs = 1;
    CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, static_cast<Params>(args)...));
    CUDA_CHECK_LAUNCH(kernel);
}

inline long long ceilDiv(long long a, long long b) { return (a + b - 1) / b; }

// The indices [begin, end) of an array: a tile's slice of A, or of B.
struct Range {
    long long begin, end;
    __host__ __device__ long long size() const { return end - begin; }
};

// Calls f.template operator()<THREADS, ITEMS>() for the study shape that
// matches `shape`; refuses any other shape (checkStudyShape).
template <class F>
void withShape(LaunchShape shape, F&& f) {
    checkStudyShape(shape);
    std::apply(
        [&](auto... s) {
            ((s.threads == shape.threads && s.items == shape.itemsPerThread
                  ? f.template operator()<decltype(s)::threads, decltype(s)::items>()
                  : void()),
             ...);
        },
        StudyShapes{});
}

}  // namespace lab
