// Extras (X1-X4, bonus): odd-even transposition sort and bitonic sort, in one
// block and on many blocks.
//
// Students implement this interface in student.cu and do not change this file.
// Conventions as in part1.cuh (device pointers, lab::Error on bad arguments,
// default stream, no waiting). The sorts are in place and ascending.
//
// Stability: odd-even transposition swaps neighbours only when the right one
// is strictly smaller, so it is stable. Bitonic sort compares values far
// apart and is NOT stable: equal keys may come out in any order (the graders
// check order and permutation only).
#pragma once

#include "../common/tagged.hpp"

namespace lab {

const char* extrasImplementation();

// The most values X1 and X3 sort in one block: 1024 threads, two values each.
constexpr int kMaxBlockSort = 2048;

// The launchers' argument checks, shared by every implementation: throw
// lab::Error for a negative n, n > kMaxBlockSort (block sorts only), or a
// null pointer with n > 0.
void checkBlockSort(const void* dData, int n);
void checkSort(const void* dData, long long n);

// X1: sorts dData[0, n) in ONE block (oddEvenBlock_k), in shared memory:
// phases of compare-exchange on (even, even + 1) pairs, then (odd, odd + 1),
// until a round of both swaps nothing. Requires 0 <= n <= kMaxBlockSort.
template <class T>
void oddEvenSortBlock(T* dData, int n);

// X2: sorts dData[0, n), any n, on many blocks: one launch of oddEvenPhase_k
// per phase, n phases (after n phases of odd-even transposition any input is
// sorted, so the host never has to ask the GPU whether it is done).
template <class T>
void oddEvenSort(T* dData, long long n);

// X3: sorts dData[0, n) in ONE block (bitonicBlock_k) with a bitonic network
// in shared memory, for any n <= kMaxBlockSort (not only powers of two: the
// network is that of the next power of two, and a compare-exchange whose
// upper index is >= n is skipped, as if that slot held +infinity).
template <class T>
void bitonicSortBlock(T* dData, int n);

// X4: sorts dData[0, n), any n, on many blocks: every tile of kMaxBlockSort
// values sorted in shared memory (bitonicTiles_k), then, for each larger
// stage, the steps whose partners are a tile or more apart in global memory
// (bitonicGlobalStep_k, one launch per step) and the remaining steps of that
// stage in shared memory (bitonicSharedSteps_k, one launch).
template <class T>
void bitonicSort(T* dData, long long n);

}  // namespace lab
