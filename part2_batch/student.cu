// Part 2 (Q3-Q4): your implementation. See handout.md, Part 2. Write your code
// between the [Qn begins] and [Qn ends] lines; the rest is shared with the
// instructors' version and must stay as it is.
#include "part2.cuh"

#include "../common/cuda_check.hpp"
#include "../part1_merge_path/student_search.cuh"

namespace lab {

const char* part2Implementation() { return "student"; }

// [Q3 begins] -------------------------------------------------------------------
// TODO(Q3): where a thread works. A block of blockDim.x threads (a multiple
//   of d, see batchThreadsPerBlock in part2.cuh) serves blockDim.x / d
//   consecutive segments, d threads each. Work out, and explain in your
//   report why they are right, this thread's
//     tidx: its output within its segment,
//     Qt:   its segment within the block,
//     gbx:  its segment within the batch (64-bit: batches exceed 2^31 values).
//   A small struct and a __device__ function that computes it serve Q3 and Q4.
// [Q3 ends] ---------------------------------------------------------------------

// Q3: segment p of `out` = the stable merge of A_p and B_p, the two sorted
// halves of segment p of `in` (A_p has split[p] values); d threads per pair.
template <class T>
__global__ void mergeSmallBatch_k(const T* in, const int* split, T* out, int d, long long N) {
    // [Q3 begins] ---------------------------------------------------------------
    // TODO(Q3): merge every pair of the batch, d threads per pair.
    //
    // Goal: segment p of `out` = stable merge of the first split[p] values of
    //   segment p of `in` (A_p) with its other d - split[p] values (B_p).
    // Constraints: the last block may have threads with gbx >= N: they must
    //   not read or write (but must reach every __syncthreads of the block).
    //   Reuse Part 1's search (student_search.cuh); the block reads its pairs
    //   from global memory with consecutive threads at consecutive addresses.
    // Hints: handout.md, Q3.
    (void)in; (void)split; (void)out; (void)d; (void)N;
    // [Q3 ends] -----------------------------------------------------------------
}

// Q4: segment p of `out` = segment p of `in`, sorted stably; d threads per segment.
template <class T>
__global__ void sortSmall_k(const T* in, T* out, int d, long long N) {
    // [Q4 begins] ---------------------------------------------------------------
    // TODO(Q4): sort every segment of d values, with Q3's ideas.
    //
    // Goal: segment p of `out` = segment p of `in`, sorted, stable.
    // Constraints: the same thread/segment mapping as Q3; no recursion; the
    //   segments sorted inside shared memory; d need not be a power of two
    //   (the last run of a round may be short or alone); every thread of the
    //   block must reach every __syncthreads().
    // Hints: handout.md, Q4.
    (void)in; (void)out; (void)d; (void)N;
    // [Q4 ends] -----------------------------------------------------------------
}

template <class T>
void mergeSmallBatch(const T* dIn, const int* dSplit, T* dOut, int d, long long N, int threadsPerBlock) {
    const BatchShape shape = batchShape(d, N, threadsPerBlock);
    checkBatchPointers(N, dIn, dOut, dSplit);
    // [Q3 begins] ---------------------------------------------------------------
    // TODO(Q3): launch mergeSmallBatch_k with shape.blocks blocks of
    //   shape.threads threads (nothing when there are no blocks), then
    //   CUDA_CHECK_LAUNCH.
    (void)dIn; (void)dSplit; (void)dOut; (void)shape;
    // [Q3 ends] -----------------------------------------------------------------
}

template <class T>
void sortSmall(const T* dIn, T* dOut, int d, long long N, int threadsPerBlock) {
    const BatchShape shape = batchShape(d, N, threadsPerBlock);
    checkBatchPointers(N, dIn, dOut, dIn);
    // [Q4 begins] ---------------------------------------------------------------
    // TODO(Q4): launch sortSmall_k like mergeSmallBatch_k, then CUDA_CHECK_LAUNCH.
    (void)dIn; (void)dOut; (void)shape;
    // [Q4 ends] -----------------------------------------------------------------
}

// The graders call these element types.
template void mergeSmallBatch<int>(const int*, const int*, int*, int, long long, int);
template void mergeSmallBatch<Tagged>(const Tagged*, const int*, Tagged*, int, long long, int);
template void sortSmall<int>(const int*, int*, int, long long, int);
template void sortSmall<Tagged>(const Tagged*, Tagged*, int, long long, int);

}  // namespace lab
