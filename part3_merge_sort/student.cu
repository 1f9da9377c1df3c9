// Part 3 (Q5-Q7): your implementation. See handout.md, Part 3.
#include "part3.cuh"

#include "../common/cuda_check.hpp"
#include "../part1_merge_path/student_search.cuh"  // your diagonalSearch from Q1 (use Size = long long)

namespace lab {

const char* part3Implementation() { return "student"; }

// TODO(Q5): the partition stage, a kernel named partition_k (the grader's
//   launch trace looks for the names the handout gives).
//
// Goal: for every tile t of the output (tile = THREADS * ITEMS outputs), store
//   in global memory how many values of A precede output t * tile.
// Constraints: one diagonal search per tile boundary, on the arrays in global
//   memory, with 64-bit sizes; one thread per boundary.
// Hint: the last tile ends at |A| + |B|; its end needs no search.
//
// TODO(Q5): the merge stage, a kernel named mergeTiles_k, one block per tile.
//
// Goal: block t merges tile t: outputs [t*tile, min((t+1)*tile, |A|+|B|)).
// Constraints: load the tile's windows of A and B into __shared__ memory
//   (coalesced: consecutive threads read consecutive addresses); each thread
//   produces ITEMS consecutive outputs, starting where its diagonal of the tile
//   meets the path (a search in shared memory) and then merging sequentially;
//   stable; correct when a window of A or B is empty.
// Hint: the partition stage gives each tile its start in A; the next tile's
//   start is this tile's end. Write the outputs through shared memory too, so
//   that the stores to global memory are coalesced.

template <class T>
void mergeLarge(const T* dA, long long nA, const T* dB, long long nB, T* dM) {
    LAB_REQUIRE(nA >= 0 && nB >= 0, "merge sizes must be >= 0, got |A| = " << nA << ", |B| = " << nB);
    // TODO(Q5): run the partition stage, then the merge stage, with your default
    //   shape. The launch does not wait, so temporary memory must live until the
    //   kernels have run: cudaMallocAsync / cudaFreeAsync on stream 0 do that.
    (void)dA; (void)dB; (void)dM;
}

template <class T>
void mergeSort(T* dData, long long n) {
    LAB_REQUIRE(n >= 0, "the array size must be >= 0, got " << n);
    // TODO(Q6): sort dData[0, n) without recursion.
    //
    // Goal: dData sorted, stably, for any n (0, 1, odd, more than 2^31).
    // Constraints: first sort each tile inside a block (Part 2's batch sort,
    //   with several values per thread, a kernel named sortTiles_k, one block
    //   per tile), then passes that merge neighbouring
    //   sorted runs of width tile, 2*tile, 4*tile, ... with Q5's two stages.
    //   Ping-pong between dData and one temporary buffer of n values, and make
    //   sure the result ends in dData.
    // Hint: a pass is many merges at once; since 2*width is a multiple of the
    //   tile, each tile of a pass belongs to exactly one merge, which block t
    //   can compute from t alone.
    (void)dData;
}

void mergeLargeShaped(const int* dA, long long nA, const int* dB, long long nB, int* dM, LaunchShape shape) {
    // TODO(Q7): run Q5 with the given shape (every one of studyShapes()).
    //   Kernels templated on THREADS and ITEMS, and one instantiation per shape,
    //   keep the shape a compile-time constant, as registers need.
    (void)dA; (void)nA; (void)dB; (void)nB; (void)dM; (void)shape;
}

void mergeSortShaped(int* dData, long long n, LaunchShape shape) {
    // TODO(Q7): run Q6 with the given shape.
    (void)dData; (void)n; (void)shape;
}

// The graders call these element types.
template void mergeLarge<int>(const int*, long long, const int*, long long, int*);
template void mergeLarge<Tagged>(const Tagged*, long long, const Tagged*, long long, Tagged*);
template void mergeSort<int>(int*, long long);
template void mergeSort<Tagged>(Tagged*, long long);

}  // namespace lab
