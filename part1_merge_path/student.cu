// Part 1 (Q1-Q2): your implementation. See handout.md, Part 1. Write your code
// between the [Qn begins] and [Qn ends] lines; the rest is shared with the
// instructors' version and must stay as it is.
#include "part1.cuh"
#include "student_search.cuh"
#include "search_on_host.cuh"  // the given host wrappers of the search

#include "../common/cuda_check.hpp"

namespace lab {

const char* part1Implementation() { return "student"; }

// One block merges one pair: block p takes pair p (Q2), so Q1 is the launch
// with a single block. Thread k owns diagonal k and writes output M[k].
template <class T>
__global__ void mergeSmall_k(const T* A, int nA, const T* B, int nB, T* M) {
    // [Q1-Q2 begins] ------------------------------------------------------------
    // TODO(Q1): merge A and B into M with one block, one thread per output.
    //
    // Goal: thread k writes M[k], the k-th value of the stable merge.
    // Constraints: no thread walks the whole path; only diagonalSearch
    //   (student_search.cuh) finds where thread k's diagonal meets the path;
    //   on equal keys A's value comes first; threads with k >= nA + nB write nothing.
    //   mergeOutputAt (student_search.cuh) gives output k from the crossing.
    //   Each value of A and B is read by many threads' searches: make those
    //   reads cheap.
    // Hints: handout.md, Q1 (two levels, open them in order).
    //
    // TODO(Q2): make block b merge pair b of mergeSmallMany (part1.cuh); the
    //   pairs' offsets pass 2^31 in the largest batches. Hints: handout.md, Q2.
    (void)A; (void)nA; (void)B; (void)nB; (void)M;
    // [Q1-Q2 ends] --------------------------------------------------------------
}

template <class T>
void mergeSmall(const T* dA, int nA, const T* dB, int nB, T* dM) {
    checkSmallMerge(dA, nA, dB, nB, dM, 1);
    // [Q1 begins] ---------------------------------------------------------------
    // TODO(Q1): launch mergeSmall_k on one block with one thread per output
    //   (launch nothing when there is no output), then CUDA_CHECK_LAUNCH.
    (void)dA; (void)dB; (void)dM;
    // [Q1 ends] -----------------------------------------------------------------
}

template <class T>
void mergeSmallMany(const T* dA, int nA, const T* dB, int nB, T* dM, long long count) {
    checkSmallMerge(dA, nA, dB, nB, dM, count);
    // [Q2 begins] ---------------------------------------------------------------
    // TODO(Q2): launch mergeSmall_k with one block per pair (nothing when
    //   there is no output), then CUDA_CHECK_LAUNCH.
    (void)dA; (void)dB; (void)dM;
    // [Q2 ends] -----------------------------------------------------------------
}

// The graders call these element types.
template void mergeSmall<int>(const int*, int, const int*, int, int*);
template void mergeSmall<Tagged>(const Tagged*, int, const Tagged*, int, Tagged*);
template void mergeSmallMany<int>(const int*, int, const int*, int, int*, long long);
template void mergeSmallMany<Tagged>(const Tagged*, int, const Tagged*, int, Tagged*, long long);

}  // namespace lab
