// Part 3's given launchers, the same for every implementation: the default
// shapes' mergeLarge and mergeSort, the Q7 study's shaped launches, the
// partition alone for the demo's drawing, and the element types the graders
// call. Included at the end of student.cu and reference.cu, after each file's
// kernels, mergeLargeImpl and mergeSortImpl and its default shapes (Q7).
#pragma once

namespace lab {


namespace {

struct MergeLargeInt {
    const int* dA;
    long long nA;
    const int* dB;
    long long nB;
    int* dM;
    template <int THREADS, int ITEMS>
    void operator()() const { mergeLargeImpl<THREADS, ITEMS>(dA, nA, dB, nB, dM); }
};

struct MergeSortInt {
    int* dData;
    long long n;
    template <int THREADS, int ITEMS>
    void operator()() const { mergeSortImpl<THREADS, ITEMS>(dData, n); }
};

}  // namespace

// The default shapes, with fewer threads where a tile of T would not fit in
// shared memory (fittingThreads, launch_support.cuh).
template <class T>
void mergeLarge(const T* dA, long long nA, const T* dB, long long nB, T* dM) {
    mergeLargeImpl<fittingThreads<kThreads, kItems, T>(), kItems>(dA, nA, dB, nB, dM);
}

template <class T>
void mergeSort(T* dData, long long n) {
    mergeSortImpl<fittingThreads<kSortThreads, kSortItems, T>(), kSortItems>(dData, n);
}

void mergeLargeShaped(const int* dA, long long nA, const int* dB, long long nB, int* dM, LaunchShape shape) {
    withShape(shape, MergeLargeInt{dA, nA, dB, nB, dM});
}

void mergeSortShaped(int* dData, long long n, LaunchShape shape) { withShape(shape, MergeSortInt{dData, n}); }

void mergePartition(const int* dA, long long nA, const int* dB, long long nB, int tile, long long* dSplits) {
    checkMergeLarge(dA, nA, dB, nB, dSplits);
    LAB_REQUIRE(tile > 0, "tile must be positive, not " << tile);
    const long long numTiles = ceilDiv(nA + nB, tile);
    if (numTiles == 0) return;
    LAB_REQUIRE(numTiles <= INT_MAX, "too many tiles (" << numTiles << ") for one grid");
    partition_k<<<static_cast<unsigned>(ceilDiv(numTiles, 256)), 256>>>(TwoArrays<int>{{dA, nA, dB, nB, nullptr, 0}},
                                                                         tile, numTiles, dSplits);
    CUDA_CHECK_LAUNCH("partition_k");
}

// The graders call these element types.
template void mergeLarge<int>(const int*, long long, const int*, long long, int*);
template void mergeLarge<Tagged>(const Tagged*, long long, const Tagged*, long long, Tagged*);
template void mergeSort<int>(int*, long long);
template void mergeSort<Tagged>(Tagged*, long long);

}  // namespace lab
