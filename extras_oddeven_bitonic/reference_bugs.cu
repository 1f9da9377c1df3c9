// The bug gallery's variants (instructor material: files named reference*
// are not in the student release). Each kernel is a correct one of the lab
// with one known mistake, marked BUG; ./extras --bug NAME runs it.
#include "bug_gallery.hpp"

#include "extras.cuh"

#include "../common/cuda_check.hpp"
#include "../common/device_buffer.hpp"
#include "../common/inputs.hpp"
#include "../part1_merge_path/reference_search.cuh"

#include <algorithm>

namespace lab {
namespace {

constexpr int kN = kMaxBlockSort;  // the one-block variants sort 2048 values, 1024 threads

template <class Kernel>
BugTrial sortTrial(std::uint64_t seed, long long n, Kernel launch) {
    BugTrial t;
    const std::vector<int> in = randomKeys(static_cast<std::size_t>(n), seed, 64);  // many equal keys
    DeviceBuffer<int> d(in.size());
    d.upload(in);
    launch(d.data());
    CUDA_CHECK(cudaDeviceSynchronize());
    t.got = d.download();
    t.expected = in;
    std::sort(t.expected.begin(), t.expected.end());
    return t;
}

// X1, per-thread flag: each thread stops when ITS pairs are in order, so
// threads leave the loop in different rounds, and those still in it wait at
// barriers the others never reach.
__global__ void oddEvenPrivateFlag_k(int* data, int n) {
    __shared__ int s[kN];
    for (int x = threadIdx.x; x < n; x += blockDim.x) s[x] = data[x];
    __syncthreads();
    int sorted = 0;  // BUG: one flag per thread
    while (!sorted) {
        sorted = 1;
        for (int p = 0; p < 2; ++p) {
            const int i = 2 * threadIdx.x + p;
            if (i + 1 < n && s[i + 1] < s[i]) {
                const int v = s[i];
                s[i] = s[i + 1];
                s[i + 1] = v;
                sorted = 0;
            }
            __syncthreads();
        }
    }
    __syncthreads();
    for (int x = threadIdx.x; x < n; x += blockDim.x) data[x] = s[x];
}

// X1, shared flag without barriers around its reset: a late warp's reset can
// erase an early warp's "I swapped", and a warp can reset the flag of the next
// round before a slow warp has read this round's: the block then disagrees
// about whether to go on.
__global__ void oddEvenSharedFlagRace_k(int* data, int n) {
    __shared__ int s[kN];
    __shared__ int sorted;
    for (int x = threadIdx.x; x < n; x += blockDim.x) s[x] = data[x];
    __syncthreads();
    do {
        sorted = 1;  // BUG: no barrier before this reset, nor between it and the writes below
        for (int p = 0; p < 2; ++p) {
            const int i = 2 * threadIdx.x + p;
            if (i + 1 < n && s[i + 1] < s[i]) {
                const int v = s[i];
                s[i] = s[i + 1];
                s[i + 1] = v;
                sorted = 0;
            }
            __syncthreads();
        }
    } while (!sorted);
    __syncthreads();
    for (int x = threadIdx.x; x < n; x += blockDim.x) data[x] = s[x];
}

// X4, tile sort indexing shared memory with the GLOBAL index: right in block
// 0, outside the block's shared memory in every other block.
__global__ void bitonicTilesGlobalIndex_k(int* data, long long n) {
    __shared__ int s[kN];
    const long long base = blockIdx.x * static_cast<long long>(kN);
    for (int x = threadIdx.x; x < kN; x += blockDim.x) s[base + x] = data[base + x];  // BUG: s[x]
    __syncthreads();
    for (int size = 2; size <= kN; size *= 2)
        for (int half = size / 2; half > 0; half /= 2) {
            const int c = threadIdx.x;
            const int lo = 2 * half * (c / half) + c % half;
            const int hi = half == size / 2 ? lo ^ (size - 1) : lo + half;
            if (s[base + hi] < s[base + lo]) {  // BUG: s[hi], s[lo]
                const int v = s[base + lo];
                s[base + lo] = s[base + hi];
                s[base + hi] = v;
            }
            __syncthreads();
        }
    for (int x = threadIdx.x; x < kN; x += blockDim.x) data[base + x] = s[base + x];
    (void)n;
}

// Merge by rank: every value's output index is its index in its own array
// plus how many values of the other array go before it. Counting "less than"
// on both sides puts equal keys of A and B on the same slot.
__device__ int countLess(const int* v, int n, int key) {
    int lo = 0, hi = n;
    while (lo < hi) {
        const int mid = lo + (hi - lo) / 2;
        if (v[mid] < key) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

__global__ void rankMergeCollide_k(const int* A, int nA, const int* B, int nB, int* M) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < nA) M[t + countLess(B, nB, A[t])] = A[t];
    else if (t < nA + nB) M[t - nA + countLess(A, nA, B[t - nA])] = B[t - nA];  // BUG: count A <= B[j]
}

// Q1 without the barrier after the shared loads: a thread may search values
// another warp has not stored yet.
__global__ void mergeNoBarrier_k(const int* A, int nA, const int* B, int nB, int* M) {
    __shared__ int s[1024];
    const int k = threadIdx.x;
    if (k < nA + nB) s[k] = k < nA ? A[k] : B[k - nA];
    // BUG: __syncthreads() missing here
    if (k < nA + nB) M[k] = mergeOutputAt(s, nA, s + nA, nB, k);
}

template <class Kernel>
BugTrial mergeTrial(std::uint64_t seed, int nA, int nB, int distinct, Kernel launch) {
    std::vector<int> A = randomKeys(nA, seed, distinct), B = randomKeys(nB, seed + 1, distinct);
    std::sort(A.begin(), A.end());
    std::sort(B.begin(), B.end());
    DeviceBuffer<int> dA(A.size()), dB(B.size()), dM(A.size() + B.size());
    dA.upload(A);
    dB.upload(B);
    launch(dA.data(), dB.data(), dM.data());
    CUDA_CHECK(cudaDeviceSynchronize());
    BugTrial t{dM.download(), std::vector<int>(A.size() + B.size())};
    std::merge(A.begin(), A.end(), B.begin(), B.end(), t.expected.begin());
    return t;
}

}  // namespace

const std::vector<Bug>& bugGallery() {
    static const std::vector<Bug> bugs = {
        {"private-flag", "X1", "the 'is it sorted yet?' flag is a local variable, one per thread",
         "one answer for the whole block: __syncthreads_or(vote) (or a __shared__ flag between barriers)",
         [](std::uint64_t seed) {
             return sortTrial(seed, kN, [](int* d) {
                 oddEvenPrivateFlag_k<<<1, kN / 2>>>(d, kN);
                 CUDA_CHECK_LAUNCH("oddEvenPrivateFlag_k");
             });
         }},
        {"shared-flag-race", "X1", "a __shared__ flag that every thread resets at the top of the loop, no barrier",
         "the reset is separated from the writes and the reads by barriers (or a block-wide vote)",
         [](std::uint64_t seed) {
             return sortTrial(seed, kN, [](int* d) {
                 oddEvenSharedFlagRace_k<<<1, kN / 2>>>(d, kN);
                 CUDA_CHECK_LAUNCH("oddEvenSharedFlagRace_k");
             });
         }},
        {"bitonic-global-index", "X4", "a tile sort indexes shared memory with the global index, not the block's",
         "shared memory is per block: index it with threadIdx-based (tile-local) indices",
         [](std::uint64_t seed) {  // four tiles, each to be sorted: only block 0 is right
             BugTrial t = sortTrial(seed, 4 * kN, [](int* d) {
                 bitonicTilesGlobalIndex_k<<<4, kN / 2>>>(d, 4 * kN);
                 CUDA_CHECK_LAUNCH("bitonicTilesGlobalIndex_k");
             });
             t.expected = randomKeys(4 * kN, seed, 64);
             for (int b = 0; b < 4; ++b) std::sort(t.expected.begin() + b * kN, t.expected.begin() + (b + 1) * kN);
             return t;
         }},
        {"rank-collide", "Q1", "merge by rank counts 'less than' on both sides: equal keys of A and B collide",
         "ties are broken one way: A's values count B's < them, B's values count A's <= them (the merge path's rule)",
         [](std::uint64_t seed) {
             return mergeTrial(seed, 1000, 1000, 64, [](const int* a, const int* b, int* m) {
                 rankMergeCollide_k<<<8, 256>>>(a, 1000, b, 1000, m);
                 CUDA_CHECK_LAUNCH("rankMergeCollide_k");
             });
         }},
        {"merge-no-barrier", "Q1", "mergeSmall_k without the __syncthreads() between the shared loads and the search",
         "a barrier after the loads: every value is in shared memory before anyone searches",
         [](std::uint64_t seed) {
             return mergeTrial(seed, 512, 512, 0, [](const int* a, const int* b, int* m) {
                 mergeNoBarrier_k<<<1, 1024>>>(a, 512, b, 512, m);
                 CUDA_CHECK_LAUNCH("mergeNoBarrier_k");
             });
         }},
    };
    return bugs;
}

}  // namespace lab
