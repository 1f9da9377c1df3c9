#include "bench_peers.hpp"

#include "../common/cuda_check.hpp"
#include "../common/peer_memory.hpp"

#include <climits>

#include <cub/device/device_merge_sort.cuh>
#include <cub/device/device_radix_sort.cuh>
#if __has_include(<cub/device/device_merge.cuh>)
#include <cub/device/device_merge.cuh>
#define LAB_HAVE_CUB_MERGE 1
#else
#define LAB_HAVE_CUB_MERGE 0
#endif
#include <thrust/execution_policy.h>
#include <thrust/functional.h>
#include <thrust/merge.h>
#include <thrust/sort.h>

namespace lab::peers {

template <class T>
void thrustMerge(const T* dA, long long nA, const T* dB, long long nB, T* dM, KeptMemory& memory) {
    thrust::merge(thrust::cuda::par_nosync(memory), dA, dA + nA, dB, dB + nB, dM);
    CUDA_CHECK_LAUNCH("thrust::merge");
}
template void thrustMerge<int>(const int*, long long, const int*, long long, int*, KeptMemory&);
template void thrustMerge<Tagged>(const Tagged*, long long, const Tagged*, long long, Tagged*, KeptMemory&);

void thrustSort(int* dData, long long n, KeptMemory& memory) {
    thrust::sort(thrust::cuda::par_nosync(memory), dData, dData + n);
    CUDA_CHECK_LAUNCH("thrust::sort");
}

template <class T>
CubMergeSort<T>::CubMergeSort(long long n) : n_(n) {
    std::size_t bytes = 0;
    CUDA_CHECK(cub::DeviceMergeSort::StableSortKeys(nullptr, bytes, static_cast<T*>(nullptr), n, thrust::less<T>()));
    bytes_ = bytes;
    CUDA_CHECK(cudaMalloc(&temp_, bytes));
}

template <class T>
CubMergeSort<T>::~CubMergeSort() {
    cudaFree(temp_);
}

template <class T>
void CubMergeSort<T>::run(T* dData) {
    std::size_t bytes = bytes_;
    CUDA_CHECK(cub::DeviceMergeSort::StableSortKeys(temp_, bytes, dData, n_, thrust::less<T>()));
}

template class CubMergeSort<int>;
template class CubMergeSort<Tagged>;

template <class T>
bool CubMerge<T>::available() { return LAB_HAVE_CUB_MERGE; }

template <class T>
CubMerge<T>::CubMerge(long long nA, long long nB) : nA_(nA), nB_(nB) {
#if LAB_HAVE_CUB_MERGE
    std::size_t bytes = 0;
    CUDA_CHECK(cub::DeviceMerge::MergeKeys(nullptr, bytes, static_cast<const T*>(nullptr), nA, static_cast<const T*>(nullptr),
                                           nB, static_cast<T*>(nullptr), thrust::less<T>()));
    bytes_ = bytes;
    CUDA_CHECK(cudaMalloc(&temp_, bytes));
#endif
}

template <class T>
CubMerge<T>::~CubMerge() {
    cudaFree(temp_);
}

template <class T>
void CubMerge<T>::run(const T* dA, const T* dB, T* dM) {
    LAB_REQUIRE(available(), "cub::DeviceMerge needs CCCL 2.6 or later");
#if LAB_HAVE_CUB_MERGE
    std::size_t bytes = bytes_;
    CUDA_CHECK(cub::DeviceMerge::MergeKeys(temp_, bytes, dA, nA_, dB, nB_, dM, thrust::less<T>()));
#endif
}

template class CubMerge<int>;
template class CubMerge<Tagged>;

CubRadixSort::CubRadixSort(long long n) : n_(n) {
    LAB_REQUIRE(n <= INT_MAX, "CubRadixSort takes at most " << INT_MAX << " keys, not " << n);
    std::size_t bytes = 0;
    cub::DoubleBuffer<int> keys(nullptr, nullptr);
    CUDA_CHECK(cub::DeviceRadixSort::SortKeys(nullptr, bytes, keys, static_cast<int>(n)));
    bytes_ = bytes;
    CUDA_CHECK(cudaMalloc(&temp_, bytes));
    CUDA_CHECK(cudaMalloc(&other_, static_cast<std::size_t>(n) * sizeof(int)));
}

CubRadixSort::~CubRadixSort() {
    cudaFree(temp_);
    cudaFree(other_);
}

void CubRadixSort::run(int* dData) {
    std::size_t bytes = bytes_;
    cub::DoubleBuffer<int> keys(dData, other_);
    CUDA_CHECK(cub::DeviceRadixSort::SortKeys(temp_, bytes, keys, static_cast<int>(n_)));
    if (keys.Current() != dData)
        CUDA_CHECK(cudaMemcpyAsync(dData, keys.Current(), static_cast<std::size_t>(n_) * sizeof(int), cudaMemcpyDeviceToDevice));
}

}  // namespace lab::peers
