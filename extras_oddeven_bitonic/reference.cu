// Extras reference (X1-X4): odd-even transposition sort and bitonic sort.
// [instructor reference: files named reference* are not in the student release]
//
// Layers: one compare-exchange -> a network step (which threads compare
// which pairs) -> kernels (a block's steps in shared memory, or one step in
// global memory) -> host launchers (which steps, in which order).
#include "extras.cuh"
#include "network_helpers.cuh"

#include "../common/cuda_check.hpp"

#include <climits>

namespace lab {

const char* extrasImplementation() { return "reference"; }

// ---------------------------------------------------------------- given

// compareExchange and nextPow2: network_helpers.cuh.

// ---------------------------------------------------------------- X1, X2: odd-even transposition

template <class T>
__global__ void oddEvenBlock_k(T* data, int n) {
    // [X1 begins] ---------------------------------------------------------------
    __shared__ T s[kMaxBlockSort];
    for (int x = threadIdx.x; x < n; x += blockDim.x) s[x] = data[x];
    __syncthreads();
    // Rounds of an even phase and an odd phase; thread t owns the pair
    // (2t + p, 2t + p + 1) in phase p.
    bool swapped = true;
    while (swapped) {
        bool mine = false;
        for (int p = 0; p < 2; ++p) {
            const int i = 2 * threadIdx.x + p;
            if (i + 1 < n && s[i + 1] < s[i]) {
                compareExchange(s[i], s[i + 1]);
                mine = true;
            }
            __syncthreads();  // a phase ends before the next one reads its pairs
        }
        // The "is it sorted yet?" flag of the whole block: a barrier that also
        // ORs every thread's vote, so every thread sees the same answer and all
        // leave the loop in the same round (handout, X1).
        swapped = __syncthreads_or(mine);
    }
    for (int x = threadIdx.x; x < n; x += blockDim.x) data[x] = s[x];
    // [X1 ends] -----------------------------------------------------------------
}

template <class T>
__global__ void oddEvenPhase_k(T* data, long long n, int parity) {
    // [X2 begins] ---------------------------------------------------------------
    // One phase in global memory: thread t owns pair (2t + parity, 2t + parity + 1).
    const long long i = 2 * (blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) + parity;
    if (i + 1 < n) compareExchange(data[i], data[i + 1]);
    // [X2 ends] -----------------------------------------------------------------
}

// ---------------------------------------------------------------- X3, X4: bitonic

// [X3 begins] -------------------------------------------------------------------
constexpr int kBlockThreads = kMaxBlockSort / 2;  // every thread owns one comparator per step

// Comparator c of a step of stage `size` (a power of two), partner distance
// `half`: c's lower index has bit `half` clear. The first step of a stage
// (half == size / 2) compares i with its mirror i ^ (size - 1), which sorts
// two sorted halves into one bitonic-free order; the later steps compare i
// with i + half. Every comparator puts the smaller value at the lower index.
struct Comparator {
    long long lo, hi;
};
__host__ __device__ inline Comparator comparator(long long c, long long size, long long half) {
    const long long lo = 2 * half * (c / half) + c % half;
    return {lo, half == size / 2 ? lo ^ (size - 1) : lo + half};
}

// Steps half = first, first/2, ..., 1 of stage `size` on s[0, len), in shared
// memory, by a block whose threads own one comparator each per step. A
// comparator reaching past len is skipped: that slot is +infinity.
template <class T>
__device__ void blockSteps(T* s, int len, long long size, long long first) {
    for (long long half = first; half > 0; half /= 2) {
        for (int c = threadIdx.x; c < kMaxBlockSort / 2; c += blockDim.x) {
            const Comparator k = comparator(c, size, half);
            if (k.hi < len) compareExchange(s[k.lo], s[k.hi]);
        }
        __syncthreads();
    }
}
// [X3 ends] ---------------------------------------------------------------------

template <class T>
__global__ void bitonicBlock_k(T* data, int n) {
    // [X3 begins] ---------------------------------------------------------------
    __shared__ T s[kMaxBlockSort];
    for (int x = threadIdx.x; x < n; x += blockDim.x) s[x] = data[x];
    __syncthreads();
    // Stages: sorted runs of 2, 4, ..., up to the next power of two >= n.
    for (long long size = 2; size < 2 * n; size *= 2) blockSteps(s, n, size, size / 2);
    for (int x = threadIdx.x; x < n; x += blockDim.x) data[x] = s[x];
    // [X3 ends] -----------------------------------------------------------------
}

// [X4 begins] -------------------------------------------------------------------
// Phase 1: block b sorts tile b (kMaxBlockSort values, fewer in the last).
template <class T>
__global__ void bitonicTiles_k(T* data, long long n) {
    __shared__ T s[kMaxBlockSort];
    const long long base = blockIdx.x * static_cast<long long>(kMaxBlockSort);
    const int len = static_cast<int>(min(static_cast<long long>(kMaxBlockSort), n - base));
    for (int x = threadIdx.x; x < len; x += blockDim.x) s[x] = data[base + x];
    __syncthreads();
    for (long long size = 2; size <= kMaxBlockSort; size *= 2) blockSteps(s, len, size, size / 2);
    for (int x = threadIdx.x; x < len; x += blockDim.x) data[base + x] = s[x];
}

// Phase 2a: one step of stage `size` whose partners are `half` >= a tile
// apart, in global memory, one thread per comparator.
template <class T>
__global__ void bitonicGlobalStep_k(T* data, long long n, long long size, long long half) {
    const long long c = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    const Comparator k = comparator(c, size, half);
    if (k.hi < n) compareExchange(data[k.lo], data[k.hi]);
}

// Phase 2b: the rest of stage `size`, partners 1024, 512, ..., 1 apart: they
// never leave a tile, so block b does them all on tile b in shared memory
// (none of them is the stage's mirror step, which spans the whole stage).
template <class T>
__global__ void bitonicSharedSteps_k(T* data, long long n, long long size) {
    __shared__ T s[kMaxBlockSort];
    const long long base = blockIdx.x * static_cast<long long>(kMaxBlockSort);
    const int len = static_cast<int>(min(static_cast<long long>(kMaxBlockSort), n - base));
    for (int x = threadIdx.x; x < len; x += blockDim.x) s[x] = data[base + x];
    __syncthreads();
    blockSteps(s, len, size, kMaxBlockSort / 2);
    for (int x = threadIdx.x; x < len; x += blockDim.x) data[base + x] = s[x];
}
// [X4 ends] ---------------------------------------------------------------------

// ---------------------------------------------------------------- launchers

template <class T>
void oddEvenSortBlock(T* dData, int n) {
    checkBlockSort(dData, n);
    // [X1 begins] ---------------------------------------------------------------
    if (n <= 1) return;
    oddEvenBlock_k<<<1, (n + 1) / 2>>>(dData, n);
    CUDA_CHECK_LAUNCH("oddEvenBlock_k");
    // [X1 ends] -----------------------------------------------------------------
}

template <class T>
void oddEvenSort(T* dData, long long n) {
    checkSort(dData, n);
    // [X2 begins] ---------------------------------------------------------------
    if (n <= 1) return;
    constexpr int kThreads = 256;
    const long long pairs = (n + 1) / 2;
    LAB_REQUIRE((pairs + kThreads - 1) / kThreads <= INT_MAX, "n = " << n << " is too large for one grid");
    const unsigned blocks = static_cast<unsigned>((pairs + kThreads - 1) / kThreads);
    for (long long phase = 0; phase < n; ++phase) {
        oddEvenPhase_k<<<blocks, kThreads>>>(dData, n, static_cast<int>(phase % 2));
        CUDA_CHECK_LAUNCH("oddEvenPhase_k");
    }
    // [X2 ends] -----------------------------------------------------------------
}

template <class T>
void bitonicSortBlock(T* dData, int n) {
    checkBlockSort(dData, n);
    // [X3 begins] ---------------------------------------------------------------
    if (n <= 1) return;
    bitonicBlock_k<<<1, kBlockThreads>>>(dData, n);
    CUDA_CHECK_LAUNCH("bitonicBlock_k");
    // [X3 ends] -----------------------------------------------------------------
}

template <class T>
void bitonicSort(T* dData, long long n) {
    checkSort(dData, n);
    // [X4 begins] ---------------------------------------------------------------
    if (n <= 1) return;
    const long long tiles = (n + kMaxBlockSort - 1) / kMaxBlockSort;
    LAB_REQUIRE(tiles <= INT_MAX, "n = " << n << " is too large for one grid");
    bitonicTiles_k<<<static_cast<unsigned>(tiles), kBlockThreads>>>(dData, n);
    CUDA_CHECK_LAUNCH("bitonicTiles_k");
    // Stages larger than a tile: the far steps in global memory, then the
    // near ones in shared memory. Comparators: half the padded size.
    const long long padded = nextPow2(n);
    constexpr int kThreads = 256;
    const unsigned stepBlocks = static_cast<unsigned>((padded / 2 + kThreads - 1) / kThreads);
    for (long long size = 2 * kMaxBlockSort; size <= padded; size *= 2) {
        for (long long half = size / 2; half >= kMaxBlockSort; half /= 2) {
            bitonicGlobalStep_k<<<stepBlocks, kThreads>>>(dData, n, size, half);
            CUDA_CHECK_LAUNCH("bitonicGlobalStep_k");
        }
        bitonicSharedSteps_k<<<static_cast<unsigned>(tiles), kBlockThreads>>>(dData, n, size);
        CUDA_CHECK_LAUNCH("bitonicSharedSteps_k");
    }
    // [X4 ends] -----------------------------------------------------------------
}

#include "instantiations.inc"  // the element types the graders call

}  // namespace lab
