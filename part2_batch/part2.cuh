// Part 2 (Q3-Q4): batch merge and batch sort of many small arrays.
//
// Students implement this interface in student.cu and do not change this file.
// Conventions as in part1.cuh (stable, device pointers, lab::Error on bad
// arguments, default stream, no waiting).
//
// Data layout: a batch is N segments of d values each, back to back:
//
//     dIn:  | segment 0 (d values) | segment 1 | ... | segment N-1 |
//
// For a merge (Q3), segment p holds the pair (A_p, B_p): its first
// dSplit[p] values are A_p, the other d - dSplit[p] are B_p, each sorted.
// Output segment p of dOut is their stable merge. For a sort (Q4), segment p
// is an unsorted array M_p and output segment p is M_p sorted.
#pragma once

#include "../common/tagged.hpp"

namespace lab {

// The largest d (and the most threads a block has).
constexpr int kMaxBatchD = 1024;

// The default block size of a batch launch, in threads, when d allows it
// (see batchThreadsPerBlock). A tuning choice, not a rule: the launchers take
// any multiple of d up to kMaxBatchD through threadsPerBlock, and the graders
// try several.
constexpr int kBatchBlockThreads = 256;

const char* part2Implementation();

// Threads per block of a batch launch: `requested` when it is given (> 0),
// else the largest multiple of d that is <= kBatchBlockThreads, or d itself
// when d is larger. Each block then
// serves threadsPerBlock / d segments, one thread per output element.
// Throws lab::Error unless 1 <= d <= kMaxBatchD and the result is a positive
// multiple of d no larger than kMaxBatchD.
int batchThreadsPerBlock(int d, int requested = 0);

// A batch launch: batchThreadsPerBlock(d, requested) threads per block, and
// enough blocks for N segments at threads / d segments per block (0 blocks
// when N == 0). Throws lab::Error as batchThreadsPerBlock does, for N < 0, and
// for more blocks than a grid holds. Shared by every implementation.
struct BatchShape {
    int threads;
    unsigned blocks;
};
BatchShape batchShape(int d, long long N, int requested);

// Throws lab::Error for a null device pointer when there is work (N > 0).
void checkBatchPointers(long long N, const void* in, const void* out, const void* split);

// Q3: dOut segment p = stable merge of A_p = dIn[p*d, p*d + dSplit[p]) and
// B_p = dIn[p*d + dSplit[p], (p+1)*d), for p = 0..N-1, in one launch of
// mergeSmallBatch_k. Requires 1 <= d <= 1024, N >= 0, 0 <= dSplit[p] <= d,
// both halves sorted, dOut not overlapping dIn. threadsPerBlock as above.
template <class T>
void mergeSmallBatch(const T* dIn, const int* dSplit, T* dOut, int d, long long N, int threadsPerBlock = 0);

// Q4: dOut segment p = segment p of dIn, sorted stably, for p = 0..N-1, in one
// launch of sortSmall_k (bottom-up merges inside shared memory). Requires
// 1 <= d <= 1024, N >= 0, dOut not overlapping dIn.
template <class T>
void sortSmall(const T* dIn, T* dOut, int d, long long N, int threadsPerBlock = 0);

}  // namespace lab
