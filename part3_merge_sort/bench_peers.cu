#include "bench_peers.hpp"

#include "../common/cuda_check.hpp"
#include "../common/peer_memory.hpp"

#include <cub/device/device_merge_sort.cuh>
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

}  // namespace lab::peers
