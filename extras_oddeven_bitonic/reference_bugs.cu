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
// about whether to go on. On a quiet GPU the warps leave a barrier almost
// together and the window is a few cycles, so the race rarely shows. Here
// every odd warp is made slow after the round's last barrier (as a warp
// delayed by other work or by the scheduler would be): the even warps loop
// back and reset the flag before the odd ones read it, the odd warps leave
// the loop early, and the two halves of the block meet at different barriers.
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
        if ((threadIdx.x / 32) % 2 == 1) __nanosleep(4000);  // the skew: odd warps read the flag late
    } while (!sorted);
    __syncthreads();
    for (int x = threadIdx.x; x < n; x += blockDim.x) data[x] = s[x];
}

// X4 as a first many-block version is often written: every block declares
// shared memory for the WHOLE array and indexes it with the global index,
// then runs the whole network. But shared memory is per block: block b loads
// only its own part, and every comparator that reaches into another block's
// part reads values this block never loaded. Nothing faults (every index is
// inside the array); the sort is silently wrong.
constexpr int kWholeThreads = 256, kWholeBlocks = 4, kWhole = kWholeThreads * kWholeBlocks;

__global__ void bitonicWholeArrayPerBlock_k(int* data) {
    __shared__ int s[kWhole];
    const int g = blockIdx.x * blockDim.x + threadIdx.x;  // BUG: a global index into per-block memory
    s[g] = data[g];
    __syncthreads();
    for (int size = 2; size <= kWhole; size *= 2)
        for (int half = size / 2; half > 0; half /= 2) {
            const int partner = g ^ half;
            if (partner > g) {
                const bool up = (g & size) == 0;
                if ((s[partner] < s[g]) == up) {
                    const int v = s[g];
                    s[g] = s[partner];
                    s[partner] = v;
                }
            }
            __syncthreads();  // only this block's threads: the other parts are never seen
        }
    data[g] = s[g];
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
        {"bitonic-whole-array", "X4", "every block keeps the whole array in its own shared memory, global index",
         "shared memory is per block: a block sorts its own tile; the far steps go through global memory",
         [](std::uint64_t seed) {
             return sortTrial(seed, kWhole, [](int* d) {
                 bitonicWholeArrayPerBlock_k<<<kWholeBlocks, kWholeThreads>>>(d);
                 CUDA_CHECK_LAUNCH("bitonicWholeArrayPerBlock_k");
             });
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
