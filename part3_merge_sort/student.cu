// Part 3 (Q5-Q7): your implementation. See handout.md, Part 3. Write your code
// between the [Qn begins] and [Qn ends] lines; the rest is shared with the
// instructors' version and must stay as it is. Given: the jobs (jobs.cuh),
// the plumbing (launch_support.cuh) and the launchers that call what this
// file defines (given_launchers.cuh, which declares it).
#include "part3.cuh"
#include "jobs.cuh"
#include "launch_support.cuh"
#include "given_launchers.cuh"

#include "../common/cuda_check.hpp"
#include "../part1_merge_path/student_search.cuh"

#include <climits>
#include <utility>

namespace lab {

const char* part3Implementation() { return "student"; }

// The launch shapes of mergeLarge (kThreads threads per block, kItems
// consecutive outputs per thread, a tile of kThreads * kItems outputs per
// block) and of mergeSort (kSortThreads, kSortItems). Each must be one of
// studyShapes() (study_shapes.hpp; a test of Q7 checks).
struct DefaultShapes {
    // [Q7 begins] ---------------------------------------------------------------
    // TODO(Q7): your default shapes. Run the study (./part3), pick the shapes you
    //   would ship, and justify the choice in your report (no GPU: handout.md,
    //   "The report without a GPU"). The sort may use the merge's shape or its
    //   own. Until then: the first study shape for both.
    static constexpr int kThreads = 128;
    static constexpr int kItems = 4;
    static constexpr int kSortThreads = kThreads;
    static constexpr int kSortItems = kItems;
    // [Q7 ends] -----------------------------------------------------------------
};

// Q6: the merge that tile t of a sort pass belongs to (SortPass, jobs.cuh).
template <class T>
__device__ TileMerge<T> SortPass<T>::mergeOf(long long t, int tile) const {
    // [Q6 begins] ---------------------------------------------------------------
    // TODO(Q6): the merge that tile t of this pass belongs to.
    //
    // Goal: the runs of src that the merge covering outputs
    //   [t * tile, (t + 1) * tile) reads (A: the first run of the pair,
    //   B: the second, shorter or empty at the end of the array), where it
    //   writes in dst, and k0, the tile's first output counted from the
    //   start of that merge.
    // Hints: handout.md, Q6.
    (void)t;
    (void)tile;
    return {src, 0, src, 0, dst, 0};
    // [Q6 ends] -----------------------------------------------------------------
}

// ---------------------------------------------------------------- kernels

// Partition stage: splits[t] = how many of A's values precede tile t's first
// output in its merge (job.mergeOf(t, tile)), one thread per tile.
template <class Job>
__global__ void partition_k(Job job, int tile, long long numTiles, long long* splits) {
    // [Q5 begins] ---------------------------------------------------------------
    // TODO(Q5): the partition stage, one thread per tile.
    //
    // Goal: splits[t] = how many values of A precede output k0 of tile t's
    //   merge (job.mergeOf(t, tile)): the diagonal search on the arrays in
    //   global memory, with 64-bit sizes.
    // Constraints: threads with t >= numTiles do nothing.
    (void)job;
    (void)tile;
    (void)numTiles;
    (void)splits;
    // [Q5 ends] -----------------------------------------------------------------
}

// [Q5 begins] -------------------------------------------------------------------
// TODO(Q5): device helpers of the merge stage, if you want some (for example
//   one thread's share of a tile's merge, which Q6's tile sort can reuse).
// [Q5 ends] ---------------------------------------------------------------------

// Merge stage: block t merges tile t of job.mergeOf(t, THREADS * ITEMS),
// starting in A at splits[t].
template <int THREADS, int ITEMS, class T, class Job>
__global__ void __launch_bounds__(THREADS) mergeTiles_k(Job job, const long long* splits) {
    // [Q5 begins] ---------------------------------------------------------------
    // TODO(Q5): the merge stage: block t merges tile t.
    //
    // Goal: outputs [k0, min(k0 + tile, nA + nB)) of the tile's merge
    //   (job.mergeOf(t, tile)), into its M, stable.
    // Constraints: the tile's slices of A and B go through __shared__ memory,
    //   and global memory is read and written coalesced (consecutive threads,
    //   consecutive addresses); each thread produces ITEMS consecutive outputs;
    //   correct when a slice of A or B is empty, and for every job: Q6 runs
    //   this kernel on the many merges of a sort pass.
    // Hints: handout.md, Q5 (and Q6 for the sort passes).
    (void)job;
    (void)splits;
    // [Q5 ends] -----------------------------------------------------------------
}

// [Q6 begins] -------------------------------------------------------------------
// TODO(Q6): device helpers of the tile sort, if you want some.
// [Q6 ends] ---------------------------------------------------------------------

// Q6, phase 1 (tile sort): block b sorts tile b of `in` (THREADS * ITEMS
// values, fewer in the last tile) into `out`, which may be `in`.
// Tuning: __launch_bounds__ asks for 1024 / THREADS resident blocks, i.e. at
// most 64 registers per thread, so that half of a multiprocessor's threads
// can be resident; with many Tagged values per thread it otherwise takes more.
template <int THREADS, int ITEMS, class T>
__global__ void __launch_bounds__(THREADS, 1024 / THREADS) sortTiles_k(const T* in, T* out, long long n) {
    // [Q6 begins] ---------------------------------------------------------------
    // TODO(Q6): sort tile blockIdx.x of `in` into `out`, stably.
    //
    // Constraints: the tile sorted in __shared__ memory, stably, with Part 2's
    //   rounds of merges; each thread produces ITEMS outputs of a round.
    //   The last tile may be short: threads past its end sort nothing but
    //   still reach every __syncthreads(). Room for one tile: a block may
    //   declare 48 KB of __shared__ arrays, and the 512 x 17 study shape's
    //   tile of ints takes 34 KB, so a second tile-sized buffer does not fit.
    // Hints: handout.md, Q6.
    (void)in;
    (void)out;
    (void)n;
    // [Q6 ends] -----------------------------------------------------------------
}

// ---------------------------------------------------------------- host

// [Q5 begins] -------------------------------------------------------------------
// TODO(Q5): host helpers, if you want some (for example one function that
//   runs the partition stage, then the merge stage, for any job, so that Q6's
//   passes reuse it).
// [Q5 ends] ---------------------------------------------------------------------

template <int THREADS, int ITEMS, class T>
void mergeLargeImpl(const T* dA, long long nA, const T* dB, long long nB, T* dM) {
    checkMergeLarge(dA, nA, dB, nB, dM);
    // [Q5 begins] ---------------------------------------------------------------
    // TODO(Q5): run the partition stage, then the merge stage, over
    //   TwoArrays<T>{{dA, nA, dB, nB, dM, 0}}, one block of THREADS threads per
    //   tile of THREADS * ITEMS outputs. The splits live in temporary device
    //   memory that must outlast the kernels: Scratch<long long>
    //   (launch_support.cuh) does that. Nothing to launch when nA + nB == 0.
    (void)dA;
    (void)dB;
    (void)dM;
    // [Q5 ends] -----------------------------------------------------------------
}

template <int THREADS, int ITEMS, class T>
void mergeSortImpl(T* dData, long long n) {
    checkMergeSort(dData, n);
    // [Q6 begins] ---------------------------------------------------------------
    // TODO(Q6): sort dData[0, n) without recursion.
    //
    // Goal: dData sorted, stably, for any n (0, 1, odd, more than 2^31).
    // Constraints: phase 1, sortTiles_k, one block per tile; phase 2, passes that
    //   merge neighbouring sorted runs of width tile, 2 tile, 4 tile, ... with
    //   Q5's two stages over SortPass<T> jobs. Ping-pong between dData and one
    //   temporary buffer of n values (Scratch<T>), and make sure the result
    //   ends in dData.
    // Hints: handout.md, Q6.
    (void)dData;
    // [Q6 ends] -----------------------------------------------------------------
}

#include "instantiations.inc"  // the element types the graders call

}  // namespace lab
