// Part 2 reference (Q3-Q4): batch merge and batch sort, several segments per block.
// [instructor reference: files named reference* are not in the student release]
#include "part2.cuh"

#include "../common/cuda_check.hpp"
#include "../part1_merge_path/reference_search.cuh"

namespace lab {

const char* part2Implementation() { return "reference"; }

// [Q3 begins] -------------------------------------------------------------------
// Where a thread of a batch launch works. A block of blockDim.x threads (a
// multiple of d) serves blockDim.x / d consecutive segments, d threads each.
struct BatchIndex {
    int tidx;        // position in its segment: its diagonal / output element
    int Qt;          // which segment of the block
    long long gbx;   // which segment of the whole batch
};

__device__ inline BatchIndex batchIndex(int d) {
    BatchIndex b;
    b.Qt = threadIdx.x / d;
    b.tidx = threadIdx.x - b.Qt * d;  // threadIdx.x % d, without a second division
    b.gbx = b.Qt + static_cast<long long>(blockIdx.x) * (blockDim.x / d);
    return b;
}
// [Q3 ends] ---------------------------------------------------------------------

// Q3: segment p of `out` = the stable merge of A_p and B_p, the two sorted
// halves of segment p of `in` (A_p has split[p] values); d threads per pair.
template <class T>
__global__ void mergeSmallBatch_k(const T* in, const int* split, T* out, int d, long long N) {
    // [Q3 begins] ---------------------------------------------------------------
    __shared__ T s[kMaxBatchD];
    const BatchIndex b = batchIndex(d);
    const bool active = b.gbx < N;  // the last block may have fewer segments

    // Step 1: stage the block's segments; they are contiguous in memory, so
    // thread t loads element t: one coalesced load for the whole block. The
    // split is loaded in the same breath, so both wait for memory together
    // rather than one after the other (tuning: one memory latency, not two).
    const int nA = active ? split[b.gbx] : 0;
    if (active) s[threadIdx.x] = in[b.gbx * d + b.tidx];
    __syncthreads();
    if (!active) return;

    // Step 2: merge path inside this thread's segment (Part 1's diagonal search).
    const T* seg = s + b.Qt * d;
    out[b.gbx * d + b.tidx] = mergeOutputAt(seg, nA, seg + nA, d - nA, b.tidx);
    // [Q3 ends] -----------------------------------------------------------------
}

// Q4: segment p of `out` = segment p of `in`, sorted stably; d threads per segment.
template <class T>
__global__ void sortSmall_k(const T* in, T* out, int d, long long N) {
    // [Q4 begins] ---------------------------------------------------------------
    __shared__ T buf[2][kMaxBatchD];  // ping-pong: round r reads buf[src], writes the other
    const BatchIndex b = batchIndex(d);
    const bool active = b.gbx < N;

    // Step 1: stage the block's segments (runs of width 1 are sorted).
    if (active) buf[0][threadIdx.x] = in[b.gbx * d + b.tidx];
    __syncthreads();

    // Step 2: rounds w = 1, 2, 4, ... until one run covers the segment. The
    // loop is the same for every thread, so the barrier is reached by all.
    int src = 0;
    for (int w = 1; w < d; w *= 2) {
        if (active) {
            const T* seg = buf[src] + b.Qt * d;
            // First value of this thread's pair of runs: tidx rounded down to a
            // multiple of 2w, a power of two, so clearing the low bits does it
            // (tuning: an integer division costs about as much as a short round's search).
            const int start = b.tidx & -(2 * w);
            const int nA = min(w, d - start);
            const int nB = min(w, d - start - nA);
            buf[1 - src][threadIdx.x] = mergeOutputAt(seg + start, nA, seg + start + nA, nB, b.tidx - start);
        }
        __syncthreads();
        src = 1 - src;
    }

    // Step 3: the sorted segments are in buf[src].
    if (active) out[b.gbx * d + b.tidx] = buf[src][threadIdx.x];
    // [Q4 ends] -----------------------------------------------------------------
}

template <class T>
void mergeSmallBatch(const T* dIn, const int* dSplit, T* dOut, int d, long long N, int threadsPerBlock) {
    const BatchShape shape = batchShape(d, N, threadsPerBlock);
    checkBatchPointers(N, dIn, dOut, dSplit);
    // [Q3 begins] ---------------------------------------------------------------
    if (shape.blocks == 0) return;
    mergeSmallBatch_k<<<shape.blocks, shape.threads>>>(dIn, dSplit, dOut, d, N);
    CUDA_CHECK_LAUNCH("mergeSmallBatch_k");
    // [Q3 ends] -----------------------------------------------------------------
}

template <class T>
void sortSmall(const T* dIn, T* dOut, int d, long long N, int threadsPerBlock) {
    const BatchShape shape = batchShape(d, N, threadsPerBlock);
    checkBatchPointers(N, dIn, dOut, dIn);
    // [Q4 begins] ---------------------------------------------------------------
    if (shape.blocks == 0) return;
    sortSmall_k<<<shape.blocks, shape.threads>>>(dIn, dOut, d, N);
    CUDA_CHECK_LAUNCH("sortSmall_k");
    // [Q4 ends] -----------------------------------------------------------------
}

// The graders call these element types.
template void mergeSmallBatch<int>(const int*, const int*, int*, int, long long, int);
template void mergeSmallBatch<Tagged>(const Tagged*, const int*, Tagged*, int, long long, int);
template void sortSmall<int>(const int*, int*, int, long long, int);
template void sortSmall<Tagged>(const Tagged*, Tagged*, int, long long, int);

}  // namespace lab
