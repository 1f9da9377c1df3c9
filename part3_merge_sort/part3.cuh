// Part 3 (Q5-Q7): merge of large arrays on many blocks, and merge sort of any size.
//
// Students implement this interface in student.cu and do not change this file.
// Conventions as in part1.cuh (stable, device pointers, lab::Error on bad
// arguments, default stream). Sizes are 64-bit: any array that fits in device
// memory, more than 2^31 elements included. The launchers allocate the
// temporary memory they need (stream-ordered, cudaMallocAsync) and throw
// lab::Error naming the bytes needed and free when the device has too little.
#pragma once

#include "../common/tagged.hpp"

#include <string>
#include <vector>

namespace lab {

const char* part3Implementation();

// A launch shape: threads per block and consecutive outputs per thread. One
// block merges (or sorts) a tile of threads * itemsPerThread outputs.
struct LaunchShape {
    int threads;
    int itemsPerThread;
    int tile() const { return threads * itemsPerThread; }
    std::string name() const { return std::to_string(threads) + "x" + std::to_string(itemsPerThread); }  // e.g. "128x8"
};

// The shapes of the Q7 study. Every implementation supports all of them;
// checkStudyShape throws lab::Error for any other.
const std::vector<LaunchShape>& studyShapes();
void checkStudyShape(LaunchShape shape);

// The launchers' argument checks, shared by every implementation: throw
// lab::Error for negative sizes, |A| + |B| overflowing, or a null pointer
// where there is work to do.
void checkMergeLarge(const void* dA, long long nA, const void* dB, long long nB, const void* dM);
void checkMergeSort(const void* dData, long long n);

// Q5: dM[0, nA+nB) = stable merge of sorted dA[0, nA) and dB[0, nB), on many
// blocks: a partition stage (the diagonal search at every tile boundary) and
// a merge stage (each block merges its tile in shared memory).
// Requires nA, nB >= 0, dM not overlapping the inputs.
template <class T>
void mergeLarge(const T* dA, long long nA, const T* dB, long long nB, T* dM);

// Q6: sorts dData[0, n) stably, in place (the result is in dData), without
// recursion: tiles sorted inside blocks, then passes of Q5's merge.
template <class T>
void mergeSort(T* dData, long long n);

// The partition stage of Q5 alone, for the demo's drawing: dSplits[t] = how
// many values of A precede output t * tile of the merge, for every tile t of
// ceil((nA + nB) / tile), by this build's partition_k. Given (shared plumbing).
void mergePartition(const int* dA, long long nA, const int* dB, long long nB, int tile, long long* dSplits);

// Q7: the same with a chosen launch shape (one of studyShapes()), for int keys.
void mergeLargeShaped(const int* dA, long long nA, const int* dB, long long nB, int* dM, LaunchShape shape);
void mergeSortShaped(int* dData, long long n, LaunchShape shape);

// Q7: the launch shapes mergeLarge and mergeSort take for int keys (the
// implementation's DefaultShapes); each must be one of studyShapes(). Given.
LaunchShape mergeLargeDefaultShape();
LaunchShape mergeSortDefaultShape();

}  // namespace lab
