// Part 3 reference (Q5-Q7): merge path on many blocks, and a merge sort built on it.
// [instructor reference: files named reference* are not in the student release]
//
// Layers: a "job" says where tile t of a merge reads and writes (two arrays
// for Q5, a pass of the sort for Q6) -> partition_k finds where each tile
// starts on the merge path -> mergeTiles_k merges one tile per block ->
// host launchers pick the shape and run the stages.
#include "part3.cuh"
#include "launch_support.cuh"

#include "../common/cuda_check.hpp"
#include "../part1_merge_path/reference_search.cuh"

#include <climits>
#include <utility>

namespace lab {

const char* part3Implementation() { return "reference"; }

// The launch shape of mergeLarge and mergeSort: kThreads threads per block,
// kItems consecutive outputs per thread, a tile of kThreads * kItems outputs
// per block. It must be one of studyShapes() (study_shapes.hpp).
// [Q7 begins] -------------------------------------------------------------------
// 256 threads x 16 items, a tile of 4096 outputs. Measured on an H200 (./part3's
// study): with bank-conflict-free stores and one shared load per output, the
// 16-item shapes sort 2^24..2^28 keys in 15-22% less time than the 8-item
// ones (fewer passes over memory: one per doubling of the run, from 4096 on),
// and the 256-thread one merges fastest. 128 x 16 is almost as good.
constexpr int kThreads = 256;
constexpr int kItems = 16;
// [Q7 ends] ---------------------------------------------------------------------

// ---------------------------------------------------------------- jobs

// The merge that tile t belongs to (inputs A, B, output M) and k0, the
// tile's first output (its first diagonal) counted from that merge's start.
template <class T>
struct TileMerge {
    const T* A;
    long long nA;
    const T* B;
    long long nB;
    T* M;
    long long k0;
};

// Q5: one merge of two arrays; tile t starts at diagonal t * tile.
template <class T>
struct TwoArrays {
    TileMerge<T> whole;  // k0 unused
    __device__ TileMerge<T> mergeOf(long long t, int tile) const {
        TileMerge<T> m = whole;
        m.k0 = t * tile;
        return m;
    }
};

// Q6: one pass of the sort: neighbouring sorted runs of `width` values of src
// are merged pairwise into dst. 2 * width is a multiple of the tile, so no
// tile straddles two merges: mergeOf(t) is the merge that tile t belongs to.
template <class T>
struct SortPass {
    const T* src;
    T* dst;
    long long n, width;
    __device__ TileMerge<T> mergeOf(long long t, int tile) const {
        // [Q6 begins] -----------------------------------------------------------
        const long long first = t * tile;
        const long long start = first / (2 * width) * (2 * width);
        const long long nA = min(width, n - start);
        const long long nB = min(width, n - start - nA);
        return {src + start, nA, src + start + nA, nB, dst + start, first - start};
        // [Q6 ends] -------------------------------------------------------------
    }
};

// ---------------------------------------------------------------- kernels

// Partition stage: splits[t] = how many of A's values precede tile t's first
// output in its merge (job.mergeOf(t, tile)), one thread per tile.
template <class Job>
__global__ void partition_k(Job job, int tile, long long numTiles, long long* splits) {
    // [Q5 begins] ---------------------------------------------------------------
    const long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (t >= numTiles) return;
    const auto m = job.mergeOf(t, tile);
    splits[t] = diagonalSearch(m.A, m.nA, m.B, m.nB, m.k0);
    // [Q5 ends] -----------------------------------------------------------------
}

// [Q5 begins] -------------------------------------------------------------------
// Tuning 1, shared-memory banks. Thread t holds outputs [t * ITEMS, t * ITEMS
// + ITEMS). Stored as they are, the 32 stores of a warp's r-th output land
// ITEMS words apart: on only 32 / ITEMS of the 32 banks, an ITEMS-way bank
// conflict. One spare word after every 32 shifts each group of 32 words by
// one bank, and the same stores hit 32 different banks: value x lives at
// padded(x). The searches read the plain layout; values moving between a
// thread's registers and shared memory go through the padded one.
__host__ __device__ constexpr int padded(int x) { return x + x / 32; }

// Thread-level merge: `count` (<= ITEMS) consecutive outputs of the merge of
// sA[0, nA) and sB[0, nB) from point (i, j) on, into v. Stable: A on ties.
// Tuning 2, one shared load per output: the next values of A and of B wait in
// registers (a, b); taking one loads only its successor. When a side runs out
// that load reads one past its end (sA[nA] is sB[0]; the caller leaves a
// spare slot after sB[nB - 1]), and the value read is never used.
template <int ITEMS, class T>
__device__ void mergeRun(const T* sA, int nA, const T* sB, int nB, int i, int j, int count, T (&v)[ITEMS]) {
    T a = sA[i], b = sB[j];
#pragma unroll
    for (int r = 0; r < ITEMS; ++r) {
        if (r < count) {
            const bool fromA = j >= nB || (i < nA && !bGoesFirst(b, a));
            v[r] = fromA ? a : b;
            if (fromA) a = sA[++i];
            else b = sB[++j];
        }
    }
}

// Outputs to global memory, coalesced: v holds outputs [kk, kk + ITEMS) of
// the tile (len outputs in all), written to dst[0, len) through s, in the
// padded layout. s must be free (a barrier after its last reads).
template <int THREADS, int ITEMS, class T>
__device__ void storeTile(T* s, const T (&v)[ITEMS], int kk, int len, T* dst) {
#pragma unroll
    for (int r = 0; r < ITEMS; ++r)
        if (kk + r < len) s[padded(kk + r)] = v[r];
    __syncthreads();
    for (int x = threadIdx.x; x < len; x += THREADS) dst[x] = s[padded(x)];
}
// [Q5 ends] ---------------------------------------------------------------------

// Merge stage: block t merges tile t of job.mergeOf(t, THREADS * ITEMS). Its
// slice of A begins at splits[t] and ends at splits[t + 1], unless the tile
// ends its merge.
template <int THREADS, int ITEMS, class T, class Job>
__global__ void __launch_bounds__(THREADS) mergeTiles_k(Job job, const long long* splits) {
    // [Q5 begins] ---------------------------------------------------------------
    constexpr int TILE = THREADS * ITEMS;
    __shared__ T s[padded(TILE) + 1];  // the slices, then the outputs (padded); + 1: mergeRun's spare slot
    const long long t = blockIdx.x;
    const TileMerge<T> m = job.mergeOf(t, TILE);

    // Step 1: the tile's outputs [k0, k1) of its merge come from its slices
    // a of A and b of B. The next tile's split ends ours, unless ours ends
    // its merge.
    const long long n = m.nA + m.nB;
    const long long k1 = min(m.k0 + TILE, n);
    const Range a{splits[t], k1 == n ? m.nA : splits[t + 1]};
    const Range b{m.k0 - a.begin, k1 - a.end};
    const int lenA = static_cast<int>(a.size());
    const int len = lenA + static_cast<int>(b.size());
    const int lenB = len - lenA;

    // Step 2: load both slices into shared memory: s[0, lenA) from A,
    // s[lenA, len) from B, consecutive threads at consecutive addresses.
    for (int x = threadIdx.x; x < len; x += THREADS) s[x] = x < lenA ? m.A[a.begin + x] : m.B[b.begin + x - lenA];
    __syncthreads();

    // Step 3: this thread's outputs [kk, kk + ITEMS) of the tile, from the
    // point where its diagonal crosses the path (Part 1's search, in shared).
    const int kk = min(static_cast<int>(threadIdx.x) * ITEMS, len);
    const int i = diagonalSearch(s, lenA, s + lenA, lenB, kk);
    T v[ITEMS];
    mergeRun(s, lenA, s + lenA, lenB, i, kk - i, min(ITEMS, len - kk), v);
    __syncthreads();  // everyone has read s: it can take the outputs

    // Step 4: outputs to shared (padded), then to global memory coalesced.
    storeTile<THREADS>(s, v, kk, len, m.M + m.k0);
    // [Q5 ends] -----------------------------------------------------------------
}

// Q6, phase 1 (tile sort): block b sorts tile b of `in` (THREADS * ITEMS
// values, fewer in the last tile) into `out`, which may be `in`.
// Tuning: __launch_bounds__ asks for 1024 / THREADS resident blocks, i.e. at
// most 64 registers per thread, so that half of a multiprocessor's threads
// can be resident; with 16 values a thread otherwise takes 80 registers,
// and fewer than 40% of the threads fit.
template <int THREADS, int ITEMS, class T>
__global__ void __launch_bounds__(THREADS, 1024 / THREADS) sortTiles_k(const T* in, T* out, long long n) {
    // [Q6 begins] ---------------------------------------------------------------
    constexpr int TILE = THREADS * ITEMS;
    __shared__ T s[padded(TILE) + 1];  // the tile, plain or padded (see storeTile); + 1: mergeRun's spare slot
    const long long base = blockIdx.x * static_cast<long long>(TILE);
    const int len = static_cast<int>(min(static_cast<long long>(TILE), n - base));
    const int kk = threadIdx.x * ITEMS;  // this thread's first position in the tile

    // Step 1: load the tile, coalesced, into the padded layout: each thread
    // then reads its ITEMS consecutive values free of bank conflicts.
    for (int x = threadIdx.x; x < len; x += THREADS) s[padded(x)] = in[base + x];
    __syncthreads();

    // Step 2: runs of ITEMS: each thread sorts its own values in registers,
    // by odd-even transposition (stable: neighbours swap only when the right
    // one is strictly smaller). Threads past the end hold nothing.
    const int mine = max(0, min(ITEMS, len - kk));
    T v[ITEMS];
#pragma unroll
    for (int r = 0; r < ITEMS; ++r)
        if (r < mine) v[r] = s[padded(kk + r)];
#pragma unroll
    for (int phase = 0; phase < ITEMS; ++phase) {
#pragma unroll
        for (int r = phase % 2; r + 1 < ITEMS; r += 2) {
            if (r + 1 < mine && bGoesFirst(v[r + 1], v[r])) {
                const T x = v[r];
                v[r] = v[r + 1];
                v[r + 1] = x;
            }
        }
    }

    // Step 3: rounds merge neighbouring runs of width = ITEMS, 2 ITEMS, ...:
    // the runs in v go back to s (through the padded layout, to avoid bank
    // conflicts, then to the plain layout the search reads), and each thread
    // merges the ITEMS outputs at kk of its pair of runs. A pair of runs is
    // the work of 2 * width / ITEMS threads, a power of two: the pair's first
    // thread is threadIdx.x with its low bits cleared, no division needed.
    for (int width = ITEMS, pairThreads = 2; width < len; width *= 2, pairThreads *= 2) {
        __syncthreads();  // everyone has read s
#pragma unroll
        for (int r = 0; r < ITEMS; ++r)
            if (kk + r < len) s[padded(kk + r)] = v[r];
        __syncthreads();
        // Padded -> plain, through v (free until the merge refills it), in
        // striped order: free of bank conflicts both ways.
#pragma unroll
        for (int q = 0; q < ITEMS; ++q)
            if (threadIdx.x + q * THREADS < len) v[q] = s[padded(threadIdx.x + q * THREADS)];
        __syncthreads();
#pragma unroll
        for (int q = 0; q < ITEMS; ++q)
            if (threadIdx.x + q * THREADS < len) s[threadIdx.x + q * THREADS] = v[q];
        __syncthreads();
        if (kk < len) {
            const int start = (threadIdx.x & ~(pairThreads - 1)) * ITEMS;
            const int nA = min(width, len - start);
            const int nB = min(width, len - start - nA);
            const int i = diagonalSearch(s + start, nA, s + start + nA, nB, kk - start);
            mergeRun(s + start, nA, s + start + nA, nB, i, kk - start - i, min(ITEMS, len - kk), v);
        }
    }

    // Step 4: store the sorted tile, coalesced (as mergeTiles_k does).
    __syncthreads();
    storeTile<THREADS>(s, v, kk, len, out + base);
    // [Q6 ends] -----------------------------------------------------------------
}

// ---------------------------------------------------------------- host

// [Q5 begins] -------------------------------------------------------------------
// Partition, then merge, for any job covering numTiles tiles.
template <int THREADS, int ITEMS, class T, class Job>
void runMerge(const Job& job, long long numTiles) {
    constexpr int TILE = THREADS * ITEMS;
    LAB_REQUIRE(numTiles <= INT_MAX, "too many tiles (" << numTiles << ") for one grid");
    Scratch<long long> splits(numTiles);
    constexpr int kPartitionThreads = 256;
    partition_k<<<static_cast<unsigned>(ceilDiv(numTiles, kPartitionThreads)), kPartitionThreads>>>(
        job, TILE, numTiles, splits.get());
    CUDA_CHECK_LAUNCH("partition_k");
    mergeTiles_k<THREADS, ITEMS, T><<<static_cast<unsigned>(numTiles), THREADS>>>(job, splits.get());
    CUDA_CHECK_LAUNCH("mergeTiles_k");
}
// [Q5 ends] ---------------------------------------------------------------------

template <int THREADS, int ITEMS, class T>
void mergeLargeImpl(const T* dA, long long nA, const T* dB, long long nB, T* dM) {
    checkMergeLarge(dA, nA, dB, nB, dM);
    // [Q5 begins] ---------------------------------------------------------------
    const long long n = nA + nB;
    if (n == 0) return;
    runMerge<THREADS, ITEMS, T>(TwoArrays<T>{{dA, nA, dB, nB, dM, 0}}, ceilDiv(n, THREADS * ITEMS));
    // [Q5 ends] -----------------------------------------------------------------
}

template <int THREADS, int ITEMS, class T>
void mergeSortImpl(T* dData, long long n) {
    checkMergeSort(dData, n);
    // [Q6 begins] ---------------------------------------------------------------
    constexpr int TILE = THREADS * ITEMS;
    if (n <= 1) return;
    const long long numTiles = ceilDiv(n, TILE);
    LAB_REQUIRE(numTiles <= INT_MAX, "too many tiles (" << numTiles << ") for one grid");
    if (numTiles == 1) {  // one block sorts it all, in place
        sortTiles_k<THREADS, ITEMS><<<1, THREADS>>>(dData, dData, n);
        CUDA_CHECK_LAUNCH("sortTiles_k");
        return;
    }
    Scratch<T> temp(n);

    // Which buffer holds the result: each pass moves the data to the other
    // buffer, so with an odd number of passes phase 1 writes its sorted tiles
    // to temp, and the last pass lands in dData either way.
    int passes = 0;
    for (long long width = TILE; width < n; width *= 2) ++passes;
    T* src = passes % 2 ? temp.get() : dData;
    T* dst = passes % 2 ? dData : temp.get();

    // Phase 1: sorted runs of one tile each.
    sortTiles_k<THREADS, ITEMS><<<static_cast<unsigned>(numTiles), THREADS>>>(dData, src, n);
    CUDA_CHECK_LAUNCH("sortTiles_k");
    // Phase 2: passes of the large merge, runs of TILE, 2*TILE, ... until one run.
    for (long long width = TILE; width < n; width *= 2) {
        runMerge<THREADS, ITEMS, T>(SortPass<T>{src, dst, n, width}, numTiles);
        std::swap(src, dst);
    }
    // [Q6 ends] -----------------------------------------------------------------
}

// ---------------------------------------------------------------- launchers (given)

namespace {

struct MergeLargeInt {
    const int* dA;
    long long nA;
    const int* dB;
    long long nB;
    int* dM;
    template <int THREADS, int ITEMS>
    void operator()() const { mergeLargeImpl<THREADS, ITEMS>(dA, nA, dB, nB, dM); }
};

struct MergeSortInt {
    int* dData;
    long long n;
    template <int THREADS, int ITEMS>
    void operator()() const { mergeSortImpl<THREADS, ITEMS>(dData, n); }
};

}  // namespace

template <class T>
void mergeLarge(const T* dA, long long nA, const T* dB, long long nB, T* dM) {
    mergeLargeImpl<kThreads, kItems>(dA, nA, dB, nB, dM);
}

template <class T>
void mergeSort(T* dData, long long n) {
    mergeSortImpl<kThreads, kItems>(dData, n);
}

void mergeLargeShaped(const int* dA, long long nA, const int* dB, long long nB, int* dM, LaunchShape shape) {
    withShape(shape, MergeLargeInt{dA, nA, dB, nB, dM});
}

void mergeSortShaped(int* dData, long long n, LaunchShape shape) { withShape(shape, MergeSortInt{dData, n}); }

void mergePartition(const int* dA, long long nA, const int* dB, long long nB, int tile, long long* dSplits) {
    checkMergeLarge(dA, nA, dB, nB, dSplits);
    LAB_REQUIRE(tile > 0, "tile must be positive, not " << tile);
    const long long numTiles = ceilDiv(nA + nB, tile);
    if (numTiles == 0) return;
    LAB_REQUIRE(numTiles <= INT_MAX, "too many tiles (" << numTiles << ") for one grid");
    partition_k<<<static_cast<unsigned>(ceilDiv(numTiles, 256)), 256>>>(TwoArrays<int>{{dA, nA, dB, nB, nullptr, 0}},
                                                                         tile, numTiles, dSplits);
    CUDA_CHECK_LAUNCH("partition_k");
}

// The graders call these element types.
template void mergeLarge<int>(const int*, long long, const int*, long long, int*);
template void mergeLarge<Tagged>(const Tagged*, long long, const Tagged*, long long, Tagged*);
template void mergeSort<int>(int*, long long);
template void mergeSort<Tagged>(Tagged*, long long);

}  // namespace lab
