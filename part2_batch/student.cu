// Part 2 (Q3-Q4): your implementation. See handout.md, Part 2.
#include "part2.cuh"

#include "../common/cuda_check.hpp"
#include "../part1_merge_path/student_search.cuh"  // your diagonalSearch from Q1

namespace lab {

const char* part2Implementation() { return "student"; }

template <class T>
__global__ void mergeSmallBatch_k(const T* in, const int* split, T* out, int d, long long N) {
    // TODO(Q3): merge every pair of the batch, d threads per pair.
    //
    // Goal: segment p of `out` = stable merge of the first split[p] values of
    //   segment p of `in` (A_p) with its other d - split[p] values (B_p).
    // Constraints: blockDim.x is a multiple of d, so one block serves
    //   blockDim.x / d pairs; compute, for this thread,
    //     tidx = threadIdx.x % d                         its output within the pair,
    //     Qt   = threadIdx.x / d                         its pair within the block,
    //     gbx  = Qt + blockIdx.x * (blockDim.x / d)      its pair within the batch;
    //   the last block may have threads with gbx >= N: they must not read or write.
    //   Use 64-bit arithmetic for gbx * d (batches can exceed 2^31 values).
    // Hint: stage the block's values in __shared__ memory first (they are
    //   contiguous, so the load is coalesced), then reuse Part 1's merge.
    (void)in; (void)split; (void)out; (void)d; (void)N;
}

template <class T>
__global__ void sortSmall_k(const T* in, T* out, int d, long long N) {
    // TODO(Q4): sort every segment of d values, with Q3's ideas.
    //
    // Goal: segment p of `out` = segment p of `in`, sorted, stable.
    // Constraints: the same thread/segment mapping as Q3; no recursion; d need
    //   not be a power of two (the last run of a round may be short or alone).
    // Hint: bottom-up: runs of 1 value are sorted; round w merges neighbouring
    //   runs of w values into runs of 2w, all in shared memory, until one run
    //   covers the segment. Two shared buffers (read one, write the other)
    //   avoid overwriting values other threads still read; every thread of the
    //   block must reach every __syncthreads().
    (void)in; (void)out; (void)d; (void)N;
}

template <class T>
void mergeSmallBatch(const T* dIn, const int* dSplit, T* dOut, int d, long long N, int threadsPerBlock) {
    const int tpb = batchThreadsPerBlock(d, threadsPerBlock);  // checks d and threadsPerBlock
    LAB_REQUIRE(N >= 0, "the number of pairs N must be >= 0, got " << N);
    // TODO(Q3): launch mergeSmallBatch_k with tpb threads per block and enough
    //   blocks for N pairs (nothing when N == 0), then CUDA_CHECK_LAUNCH.
    (void)dIn; (void)dSplit; (void)dOut; (void)tpb;
}

template <class T>
void sortSmall(const T* dIn, T* dOut, int d, long long N, int threadsPerBlock) {
    const int tpb = batchThreadsPerBlock(d, threadsPerBlock);
    LAB_REQUIRE(N >= 0, "the number of arrays N must be >= 0, got " << N);
    // TODO(Q4): launch sortSmall_k like mergeSmallBatch_k, then CUDA_CHECK_LAUNCH.
    (void)dIn; (void)dOut; (void)tpb;
}

// The graders call these element types.
template void mergeSmallBatch<int>(const int*, const int*, int*, int, long long, int);
template void mergeSmallBatch<Tagged>(const Tagged*, const int*, Tagged*, int, long long, int);
template void sortSmall<int>(const int*, int*, int, long long, int);
template void sortSmall<Tagged>(const Tagged*, Tagged*, int, long long, int);

}  // namespace lab
