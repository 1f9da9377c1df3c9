// Extras (X1-X4, bonus): your implementation. See handout.md, Extras. Write
// your code between the [Xn begins] and [Xn ends] lines; the rest is shared
// with the instructors' version and must stay as it is.
#include "extras.cuh"
#include "network_helpers.cuh"

#include "../common/cuda_check.hpp"

#include <climits>

namespace lab {

const char* extrasImplementation() { return "student"; }

// ---------------------------------------------------------------- given

// compareExchange and nextPow2: network_helpers.cuh.

// ---------------------------------------------------------------- X1, X2: odd-even transposition

template <class T>
__global__ void oddEvenBlock_k(T* data, int n) {
    // [X1 begins] ---------------------------------------------------------------
    // TODO(X1): sort data[0, n) in this one block, in shared memory.
    //
    // Goal: rounds of an even phase (compare-exchange pairs (0,1), (2,3), ...)
    //   and an odd phase ((1,2), (3,4), ...) until a round swaps nothing.
    // Constraints: stable (swap only when the right value is strictly
    //   smaller: compareExchange does that); the values in __shared__ memory;
    //   every thread must leave the loop in the same round, or the barriers
    //   inside it are reached by some threads only.
    //   "Did anything move this round?" needs one answer for the whole block,
    //   made without a race.
    // Hints: handout.md, X1.
    (void)data;
    (void)n;
    // [X1 ends] -----------------------------------------------------------------
}

template <class T>
__global__ void oddEvenPhase_k(T* data, long long n, int parity) {
    // [X2 begins] ---------------------------------------------------------------
    // TODO(X2): one phase of odd-even transposition in global memory.
    //
    // Goal: the phase of this parity (0: the pairs (0,1), (2,3), ...; 1: the
    //   pairs (1,2), (3,4), ...) on data[0, n), one thread per pair.
    //   64-bit indices: n may exceed 2^31.
    (void)data;
    (void)n;
    (void)parity;
    // [X2 ends] -----------------------------------------------------------------
}

// ---------------------------------------------------------------- X3, X4: bitonic

// [X3 begins] -------------------------------------------------------------------
// TODO(X3): helpers of the bitonic network, if you want some (for example:
//   which two indices comparator c of a step compares, and a block's steps
//   in shared memory, which X4 can reuse).
// [X3 ends] ---------------------------------------------------------------------

template <class T>
__global__ void bitonicBlock_k(T* data, int n) {
    // [X3 begins] ---------------------------------------------------------------
    // TODO(X3): sort data[0, n) in this one block with a bitonic network in
    //   shared memory.
    //
    // Goal: stages size = 2, 4, ..., the next power of two >= n, each of
    //   log2(size) steps, a __syncthreads() after each step.
    // Constraints: any n <= kMaxBlockSort: a compare-exchange whose upper
    //   index is >= n is skipped (that slot counts as +infinity); for this to
    //   be right, every comparator must put the smaller value at the LOWER
    //   index, which the textbook network does not do.
    // Hints: handout.md, X3.
    (void)data;
    (void)n;
    // [X3 ends] -----------------------------------------------------------------
}

// [X4 begins] -------------------------------------------------------------------
// TODO(X4): the kernels of the many-block bitonic sort (their names are
//   fixed: the grader's trace checks them):
//   bitonicTiles_k(T* data, long long n): block b sorts tile b of
//     kMaxBlockSort values (the last may be short) in shared memory;
//   bitonicGlobalStep_k(T* data, long long n, long long size, long long half):
//     one step of stage `size`, partners `half` >= kMaxBlockSort apart, one
//     thread per comparator, in global memory;
//   bitonicSharedSteps_k(T* data, long long n, long long size): the steps of
//     stage `size` with partners kMaxBlockSort / 2, ..., 1 apart, which never
//     leave a tile, on each tile in shared memory.
//   Hints: handout.md, X4.
// [X4 ends] ---------------------------------------------------------------------

// ---------------------------------------------------------------- launchers

template <class T>
void oddEvenSortBlock(T* dData, int n) {
    checkBlockSort(dData, n);
    // [X1 begins] ---------------------------------------------------------------
    // TODO(X1): launch oddEvenBlock_k on one block (nothing when n <= 1).
    (void)dData;
    (void)n;
    // [X1 ends] -----------------------------------------------------------------
}

template <class T>
void oddEvenSort(T* dData, long long n) {
    checkSort(dData, n);
    // [X2 begins] ---------------------------------------------------------------
    // TODO(X2): n phases of oddEvenPhase_k, even then odd, one launch each
    //   (nothing when n <= 1). Why n phases suffice: handout, X2.
    (void)dData;
    (void)n;
    // [X2 ends] -----------------------------------------------------------------
}

template <class T>
void bitonicSortBlock(T* dData, int n) {
    checkBlockSort(dData, n);
    // [X3 begins] ---------------------------------------------------------------
    // TODO(X3): launch bitonicBlock_k on one block (nothing when n <= 1).
    (void)dData;
    (void)n;
    // [X3 ends] -----------------------------------------------------------------
}

template <class T>
void bitonicSort(T* dData, long long n) {
    checkSort(dData, n);
    // [X4 begins] ---------------------------------------------------------------
    // TODO(X4): sort dData[0, n) for any n (0, 1, odd, more than 2^31).
    //
    // Constraints: phase 1, bitonicTiles_k, one block per tile; then for each
    //   stage size = 2 * kMaxBlockSort, ..., the next power of two >= n: its
    //   steps with partners >= kMaxBlockSort apart with bitonicGlobalStep_k,
    //   one launch per step, then the rest with one bitonicSharedSteps_k.
    (void)dData;
    (void)n;
    // [X4 ends] -----------------------------------------------------------------
}

#include "instantiations.inc"  // the element types the graders call

}  // namespace lab
