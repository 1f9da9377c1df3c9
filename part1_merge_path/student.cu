// Part 1 (Q1-Q2): your implementation. See handout.md, Part 1.
#include "part1.cuh"
#include "student_search.cuh"

#include "../common/cuda_check.hpp"

namespace lab {

const char* part1Implementation() { return "student"; }

// Lets the graders test your diagonal search on the host; nothing to do here.
int diagonalSearchOnHost(const int* A, int nA, const int* B, int nB, int k) {
    return diagonalSearch(A, nA, B, nB, k);
}
int diagonalSearchOnHost(const Tagged* A, int nA, const Tagged* B, int nB, int k) {
    return diagonalSearch(A, nA, B, nB, k);
}
long long diagonalSearchOnHost(const int* A, long long nA, const int* B, long long nB, long long k) {
    return diagonalSearch(A, nA, B, nB, k);
}

template <class T>
__global__ void mergeSmall_k(const T* A, int nA, const T* B, int nB, T* M) {
    // TODO(Q1): merge A and B into M with one block, one thread per output.
    //
    // Goal: thread k writes M[k], the k-th value of the stable merge.
    // Constraints: no thread walks the whole path; only diagonalSearch
    //   (student_search.cuh) finds where thread k's diagonal meets the path;
    //   on equal keys A's value comes first; threads with k >= nA + nB write nothing.
    // Hint: once you know the crossing (i, j), the path leaves it downwards
    //   (output A[i]) or rightwards (output B[j]). Loading A and B into
    //   __shared__ memory first makes the binary searches cheaper.
    //
    // TODO(Q2): make block b merge pair b (see mergeSmallMany in part1.cuh):
    //   move A, B and M to where pair blockIdx.x starts.
    (void)A; (void)nA; (void)B; (void)nB; (void)M;
}

template <class T>
void mergeSmall(const T* dA, int nA, const T* dB, int nB, T* dM) {
    LAB_REQUIRE(nA >= 0 && nB >= 0 && nA <= kMaxSmallMerge - nB,
                "mergeSmall supports 0 <= |A| + |B| <= " << kMaxSmallMerge << ", got |A| = " << nA
                                                         << ", |B| = " << nB);
    // TODO(Q1): launch mergeSmall_k on one block with one thread per output
    //   (launch nothing when there is no output), then CUDA_CHECK_LAUNCH.
    (void)dA; (void)dB; (void)dM;
}

template <class T>
void mergeSmallMany(const T* dA, int nA, const T* dB, int nB, T* dM, long long count) {
    LAB_REQUIRE(nA >= 0 && nB >= 0 && nA <= kMaxSmallMerge - nB,
                "mergeSmallMany supports 0 <= |A| + |B| <= " << kMaxSmallMerge << ", got |A| = "
                                                             << nA << ", |B| = " << nB);
    LAB_REQUIRE(count >= 0 && count <= 2147483647LL, "count must be in [0, 2^31 - 1], got " << count);
    // TODO(Q2): launch mergeSmall_k with one block per pair, then CUDA_CHECK_LAUNCH.
    (void)dA; (void)dB; (void)dM;
}

// The graders call these element types.
template void mergeSmall<int>(const int*, int, const int*, int, int*);
template void mergeSmall<Tagged>(const Tagged*, int, const Tagged*, int, Tagged*);
template void mergeSmallMany<int>(const int*, int, const int*, int, int*, long long);
template void mergeSmallMany<Tagged>(const Tagged*, int, const Tagged*, int, Tagged*, long long);

}  // namespace lab
