// Part 3's given launchers, the same for every implementation: mergeLarge and
// mergeSort (part3.cuh) at the default shapes, the Q7 study's shaped
// launches, and the partition alone for the demo's drawing. Included at the
// top of student.cu, which defines what they call (declared below); its last
// lines instantiate mergeLarge and mergeSort (instantiations.inc).
#pragma once

#include "jobs.cuh"
#include "launch_support.cuh"
#include "part3.cuh"

#include "../common/cuda_check.hpp"

#include <climits>

namespace lab {

// ---------------------------------------------------------------- defined in student.cu

// Q7: the default launch shapes of mergeLarge and mergeSort.
struct DefaultShapes;

// Q5: the partition stage, and the large merge with tiles of THREADS x ITEMS.
template <class Job>
__global__ void partition_k(Job job, int tile, long long numTiles, long long* splits);

template <int THREADS, int ITEMS, class T>
void mergeLargeImpl(const T* dA, long long nA, const T* dB, long long nB, T* dM);

// Q6: the merge sort with tiles of THREADS x ITEMS.
template <int THREADS, int ITEMS, class T>
void mergeSortImpl(T* dData, long long n);

// ---------------------------------------------------------------- the launchers

// DefaultShapes through a template of T: student.cu defines it only after
// including this file, and what depends on T is looked up where the
// launchers are instantiated (instantiations.inc, at the end of student.cu).
template <class T, class Shapes = DefaultShapes>
struct DefaultShapesFor : Shapes {};

// The default shapes, with fewer threads where a tile of T would not fit in
// shared memory (fittingThreads, launch_support.cuh).
template <class T>
void mergeLarge(const T* dA, long long nA, const T* dB, long long nB, T* dM) {
    using S = DefaultShapesFor<T>;
    mergeLargeImpl<fittingThreads<S::kThreads, S::kItems, T>(), S::kItems>(dA, nA, dB, nB, dM);
}

template <class T>
void mergeSort(T* dData, long long n) {
    using S = DefaultShapesFor<T>;
    mergeSortImpl<fittingThreads<S::kSortThreads, S::kSortItems, T>(), S::kSortItems>(dData, n);
}

// The default shapes as values. A template, so that DefaultShapes is looked up
// where it is instantiated, at the end of student.cu.
template <class T>
LaunchShape defaultShapeOf(bool sort) {
    using S = DefaultShapesFor<T>;
    return sort ? LaunchShape{S::kSortThreads, S::kSortItems} : LaunchShape{S::kThreads, S::kItems};
}

LaunchShape mergeLargeDefaultShape() { return defaultShapeOf<int>(false); }
LaunchShape mergeSortDefaultShape() { return defaultShapeOf<int>(true); }

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

}  // namespace lab
