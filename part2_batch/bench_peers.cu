#include "bench_peers.hpp"

#include "../common/cuda_check.hpp"
#include "../common/peer_memory.hpp"

#include <cub/device/device_segmented_sort.cuh>
#include <thrust/execution_policy.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/merge.h>
#include <thrust/sequence.h>

#include <climits>

namespace lab::peers {

void thrustMergeTuples(const int* dApair, const int* dAkey, long long nA, const int* dBpair,
                       const int* dBkey, long long nB, int* dOutPair, int* dOutKey, KeptMemory& memory) {
    const auto a = thrust::make_zip_iterator(thrust::make_tuple(dApair, dAkey));
    const auto b = thrust::make_zip_iterator(thrust::make_tuple(dBpair, dBkey));
    const auto out = thrust::make_zip_iterator(thrust::make_tuple(dOutPair, dOutKey));
    thrust::merge(thrust::cuda::par_nosync(memory), a, a + nA, b, b + nB, out);
    CUDA_CHECK_LAUNCH("thrust::merge");
}

CubSegmentedSort::CubSegmentedSort(int d, long long N) : d_(d), n_(N) {
    LAB_REQUIRE(N * d <= INT_MAX, "the CUB peer handles at most 2^31 - 1 keys");
    CUDA_CHECK(cudaMalloc(&offsets_, (N + 1) * sizeof(int)));
    thrust::sequence(thrust::device, offsets_, offsets_ + N + 1, 0, d);
    std::size_t bytes = 0;
    CUDA_CHECK(cub::DeviceSegmentedSort::StableSortKeys(nullptr, bytes, static_cast<const int*>(nullptr),
                                                        static_cast<int*>(nullptr), static_cast<int>(N * d),
                                                        static_cast<int>(N), offsets_, offsets_ + 1));
    tempBytes_ = bytes;
    CUDA_CHECK(cudaMalloc(&temp_, bytes));
}

CubSegmentedSort::~CubSegmentedSort() {
    cudaFree(offsets_);
    cudaFree(temp_);
}

void CubSegmentedSort::run(const int* dIn, int* dOut) {
    std::size_t bytes = tempBytes_;
    CUDA_CHECK(cub::DeviceSegmentedSort::StableSortKeys(temp_, bytes, dIn, dOut, static_cast<int>(n_ * d_),
                                                        static_cast<int>(n_), offsets_, offsets_ + 1));
}

}  // namespace lab::peers
