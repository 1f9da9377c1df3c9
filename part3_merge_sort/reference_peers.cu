// The naive GPU peers of the Part 3 tables (reference_peers.hpp).
// [instructor reference: files named reference* are not in the student release]
#include "reference_peers.hpp"

#include "../common/cuda_check.hpp"

#include <utility>

namespace lab::peers {

namespace {

__global__ void oneThreadMerge_k(const int* A, long long nA, const int* B, long long nB, int* M) {
    long long i = 0, j = 0;
    while (i + j < nA + nB) M[i + j] = (j >= nB || (i < nA && A[i] <= B[j])) ? A[i++] : B[j++];
}

// Number of values of `run` (sorted, n values) below x, or not above x when orEqual.
__device__ long long rankIn(const int* run, long long n, int x, bool orEqual) {
    long long lo = 0, hi = n;
    while (lo < hi) {
        const long long mid = lo + (hi - lo) / 2;
        if (run[mid] < x || (orEqual && run[mid] == x)) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

// Element x of the concatenation A ++ B goes to its index plus its rank in the
// other array; A's values rank strictly, B's with ties, so A goes first on ties.
__global__ void rankMerge_k(const int* A, long long nA, const int* B, long long nB, int* M) {
    const long long x = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (x < nA) M[x + rankIn(B, nB, A[x], false)] = A[x];
    else if (x < nA + nB) M[x - nA + rankIn(A, nA, B[x - nA], true)] = B[x - nA];
}

// One pass of the rank merge sort: runs of `width` merged pairwise.
__global__ void rankMergePass_k(const int* src, int* dst, long long n, long long width) {
    const long long x = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (x >= n) return;
    const long long start = x / (2 * width) * (2 * width);
    const long long nA = min(width, n - start), nB = min(width, n - start - nA);
    const int* A = src + start;
    const long long local = x - start;
    if (local < nA) dst[start + local + rankIn(A + nA, nB, A[local], false)] = A[local];
    else dst[start + local - nA + rankIn(A, nA, A[local], true)] = A[local];
}

unsigned blocksFor(long long n) { return static_cast<unsigned>((n + 255) / 256); }

}  // namespace

void oneThreadMerge(const int* dA, long long nA, const int* dB, long long nB, int* dM) {
    oneThreadMerge_k<<<1, 1>>>(dA, nA, dB, nB, dM);
    CUDA_CHECK_LAUNCH("oneThreadMerge_k");
}

void rankMerge(const int* dA, long long nA, const int* dB, long long nB, int* dM) {
    if (nA + nB == 0) return;
    rankMerge_k<<<blocksFor(nA + nB), 256>>>(dA, nA, dB, nB, dM);
    CUDA_CHECK_LAUNCH("rankMerge_k");
}

void rankMergeSort(int* dData, int* dTemp, long long n) {
    int* src = dData;
    int* dst = dTemp;
    for (long long width = 1; width < n; width *= 2) {
        rankMergePass_k<<<blocksFor(n), 256>>>(src, dst, n, width);
        CUDA_CHECK_LAUNCH("rankMergePass_k");
        std::swap(src, dst);
    }
    if (src != dData) CUDA_CHECK(cudaMemcpyAsync(dData, src, n * sizeof(int), cudaMemcpyDeviceToDevice));
}

}  // namespace lab::peers
