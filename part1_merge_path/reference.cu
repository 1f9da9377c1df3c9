// Part 1 reference (Q1-Q2): merge path in one block, one block per merge.
// [instructor reference: files named reference* are not in the student release]
#include "part1.cuh"
#include "reference_search.cuh"

#include "../common/cuda_check.hpp"

namespace lab {

const char* part1Implementation() { return "reference"; }

int diagonalSearchOnHost(const int* A, int nA, const int* B, int nB, int k) {
    return diagonalSearch(A, nA, B, nB, k);
}
int diagonalSearchOnHost(const Tagged* A, int nA, const Tagged* B, int nB, int k) {
    return diagonalSearch(A, nA, B, nB, k);
}
long long diagonalSearchOnHost(const int* A, long long nA, const int* B, long long nB, long long k) {
    return diagonalSearch(A, nA, B, nB, k);
}

// One block merges one pair; block p takes pair p (Q2), so Q1 is the launch
// with a single block. Thread k owns diagonal k and writes output M[k].
template <class T>
__global__ void mergeSmall_k(const T* A, int nA, const T* B, int nB, T* M) {
    // Step 1: this block's pair.
    const int d = nA + nB;
    const size_t pair = blockIdx.x;
    A += pair * nA;
    B += pair * nB;
    M += pair * d;

    // Step 2: stage A and B in shared memory, one coalesced load per thread:
    // s[0, nA) = A and s[nA, d) = B. The searches below then read fast memory.
    __shared__ T s[kMaxSmallMerge];
    const int k = threadIdx.x;
    if (k < nA) s[k] = A[k];
    else if (k < d) s[k] = B[k - nA];
    __syncthreads();
    if (k >= d) return;
    const T* sA = s;
    const T* sB = s + nA;

    // Step 3: find where the merge path crosses diagonal k, and write the
    // value of the step it takes from there (reference_search.cuh).
    M[k] = mergeOutputAt(sA, nA, sB, nB, k);
}

namespace {

void checkSmallSizes(int nA, int nB) {
    LAB_REQUIRE(nA >= 0 && nB >= 0, "merge sizes must be >= 0, got |A| = " << nA << ", |B| = " << nB);
    LAB_REQUIRE(nA <= kMaxSmallMerge - nB, "|A| + |B| = " << (long long)nA + nB << " exceeds "
                                              << kMaxSmallMerge
                                              << ", the most one block merges (one thread per output)");
}

}  // namespace

template <class T>
void mergeSmall(const T* dA, int nA, const T* dB, int nB, T* dM) {
    mergeSmallMany(dA, nA, dB, nB, dM, 1);
}

template <class T>
void mergeSmallMany(const T* dA, int nA, const T* dB, int nB, T* dM, long long count) {
    checkSmallSizes(nA, nB);
    LAB_REQUIRE(count >= 0 && count <= 2147483647LL,
                "the number of merges must be in [0, 2^31 - 1] (one block each), got " << count);
    const int d = nA + nB;
    if (d == 0 || count == 0) return;
    LAB_REQUIRE(dM != nullptr && (nA == 0 || dA != nullptr) && (nB == 0 || dB != nullptr),
                "null device pointer passed to mergeSmall");
    mergeSmall_k<<<static_cast<unsigned>(count), d>>>(dA, nA, dB, nB, dM);
    CUDA_CHECK_LAUNCH("mergeSmall_k");
}

template void mergeSmall<int>(const int*, int, const int*, int, int*);
template void mergeSmall<Tagged>(const Tagged*, int, const Tagged*, int, Tagged*);
template void mergeSmallMany<int>(const int*, int, const int*, int, int*, long long);
template void mergeSmallMany<Tagged>(const Tagged*, int, const Tagged*, int, Tagged*, long long);

}  // namespace lab
