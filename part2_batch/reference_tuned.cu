// Part 2 beyond the questions: batch merge and batch sort, several values per thread.
// [instructor reference: files named reference* are not in the student release]
//
// Q3 and Q4 give every output its own thread, so a thread of Q4 runs one
// diagonal search per round for a single value, and the block's threads
// spend most of their time searching. These kernels are the Part 2 study's
// bar instead (its "tuned" rows), built from Part 3's ideas:
//   - a group of GT threads (a power of two) serves one segment, ITEMS
//     consecutive values per thread (ITEMS odd: no bank conflicts, as in
//     Part 3's Tuning 2); small segments get one thread each (GT = 1);
//   - a thread sorts its values in registers, then rounds merge runs of
//     ITEMS, 2 ITEMS, ... in shared memory with ONE diagonal search per
//     thread and round, followed by a sequential merge of ITEMS outputs;
//   - a merge (Q3's job) is one such round on the segment's two halves;
//   - the sort pads each segment to whole threads and stores every B run
//     reversed, so its rounds need no bound checks (sortBatchTuned_k).
#include "reference_tuned.cuh"

#include "part2.cuh"

#include "../common/cuda_check.hpp"
#include "../part1_merge_path/reference_search.cuh"

#include <climits>
#include <type_traits>

namespace lab::tuned {

// Threads per block, every shape. 128 and 512 measured the same on an H100,
// and so did asking for 5 or 6 resident blocks instead of 4.
constexpr int kThreads = 256;

// ---------------------------------------------------------------- where values lie
// A block serves SEGS = kThreads / GT consecutive segments, whose d * SEGS
// values are consecutive in global memory. In shared memory segment q of the
// block starts at q * SLOT (SLOT = GT * ITEMS >= d): thread t then holds the
// words t * ITEMS + r whatever its group, so a warp's r-th values are ITEMS
// apart and fall in 32 different banks.
//
// Value x of the block lies in segment x / d, at x % d. A division by a
// number known only at run time costs tens of instructions, as much as the
// rest of the copy: instead, x / d = (x * m) >> 32 with m = ceil(2^32 / d),
// exact here because x * (m * d - 2^32) < 2^32 (x < 2^22, m * d - 2^32 < d).
struct Slots {
    int d;
    unsigned long long m;  // ceil(2^32 / d)

    __device__ int of(int x, int slot) const {
        const int q = static_cast<int>((x * m) >> 32);
        return q * slot + x - q * d;
    }
};

static Slots slotsFor(int d) { return {d, ((1ULL << 32) + d - 1) / d}; }

// Global -> shared, coalesced: value x of the block (count in all) from
// src[x] to its slot. Every thread issues all its loads before storing any,
// so they are in flight together (Part 3's Tuning 4); v only stages them.
template <int SLOT, int ITEMS, class T>
__device__ void loadSegments(T* s, const T* src, int count, Slots at, T (&v)[ITEMS]) {
    const int t = threadIdx.x;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k)
        if (t + k * kThreads < count) v[k] = src[t + k * kThreads];
#pragma unroll
    for (int k = 0; k < ITEMS; ++k)
        if (t + k * kThreads < count) s[at.of(t + k * kThreads, SLOT)] = v[k];
}

// Shared -> global, coalesced: the inverse of loadSegments.
template <int SLOT, int ITEMS, class T>
__device__ void storeSegments(const T* s, T* dst, int count, Slots at) {
    const int t = threadIdx.x;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k)
        if (t + k * kThreads < count) dst[t + k * kThreads] = s[at.of(t + k * kThreads, SLOT)];
}

// ---------------------------------------------------------------- one thread's work
// Stable odd-even transposition sort of v in registers: ITEMS phases of
// neighbour compare-and-swaps, alternately at even and odd pairs; neighbours
// swap only when the right one is strictly smaller.
template <int ITEMS, class T>
__device__ void sortInRegisters(T (&v)[ITEMS]) {
#pragma unroll
    for (int phase = 0; phase < ITEMS; ++phase)
#pragma unroll
        for (int r = phase & 1; r + 1 < ITEMS; r += 2)
            if (bGoesFirst(v[r + 1], v[r])) {
                const T left = v[r];
                v[r] = v[r + 1];
                v[r + 1] = left;
            }
}

// ---------------------------------------------------------------- the sort's rounds, unchecked
// Two ideas take every bound check out of the sort's rounds:
//   - padding: each segment is filled up to whole threads (SLOT values) with
//     a value that sorts last, so every pair of runs is whole, and widths,
//     rounds and search steps are compile-time constants;
//   - a pair of runs (A, B, W values each) is stored as A ascending, then B
//     REVERSED (largest first): the pair rises, then falls. Walking A forward
//     and B backward, the word after A's last value is B's largest and the
//     word before B's first value is A's largest, so a side that runs out
//     offers a value that never wins wrongly, and a merge step needs one
//     check (A used up) where mergeInRegisters needs three and a clamp.
//     B[x] lies at run[2W - 1 - x].

// The padding: none goes out after it (largest key), and pads start after
// the segment's values, so a stable sort keeps them last, even after real
// values of the same key.
template <class T>
__device__ T sortPadding();
template <>
__device__ inline int sortPadding<int>() { return INT_MAX; }
template <>
__device__ inline Tagged sortPadding<Tagged>() { return {INT_MAX, -1}; }

// The largest power of two <= w (w >= 1).
__host__ __device__ constexpr int floorPow2(int w) { return w & (w - 1) ? floorPow2(w & (w - 1)) : w; }

// The diagonal search of Part 1 on that layout: B[k - 1 - i] is rb[i], rb =
// run + 2W - k, so both probes move with i. The crossing lies in [lo, hi],
// at most W + 1 points: the steps P, P/2, ..., 1 (P = floorPow2(W), 2P > W)
// always find it, a fixed count for the compiler to unroll, no loop test.
template <class T>
__device__ int mirroredSearch(const T* run, int W, int k) {
    const T* rb = run + 2 * W - k;
    int lo = max(0, k - W);
    const int hi = min(k, W);
#pragma unroll
    for (int step = floorPow2(W); step > 0; step /= 2) {
        const int x = lo + step - 1;  // before the crossing: lo moves past it
        if (x < hi && !bGoesFirst(rb[x], run[x])) lo += step;
    }
    return lo;
}

// ITEMS consecutive outputs of the stable merge of A = run[0, W) and B
// (stored reversed after A) from point (i, j) of the path, into v. pa walks
// A up, pb walks B down; the one taken moves and loads its next value. When
// B runs out, pb reaches A's largest values, which never go out before A's
// own; when A runs out, pa stops at B's largest and the check sends every
// output to B. Loads stay inside the pair (W >= ITEMS).
template <int ITEMS, class T>
__device__ void mergeMirrored(const T* run, int W, int i, int j, T (&v)[ITEMS]) {
    const T* pa = run + i;
    const T* pb = run + 2 * W - 1 - j;
    const T* endA = run + W;
    T a = *pa, b = *pb;
#pragma unroll
    for (int r = 0; r < ITEMS; ++r) {
        const bool takeA = pa < endA && !bGoesFirst(b, a);
        v[r] = takeA ? a : b;
        const T* at = takeA ? pa + 1 : pb - 1;  // the next value of the side taken
        const T next = *at;
        pa = takeA ? at : pa;
        pb = takeA ? pb : at;
        a = takeA ? next : a;
        b = takeA ? b : next;
    }
}

// The rounds, for the GT threads of a group holding a padded segment of
// GT * ITEMS values at seg: thread `lane` of the group holds in v the sorted
// run [lane * ITEMS, lane * ITEMS + ITEMS) (sortInRegisters) and ends
// holding those outputs of the sorted segment. Round after round, runs of
// width ITEMS, 2 ITEMS, ... are merged pairwise: a pair is the work of
// pairThreads = 2 * width / ITEMS threads, so its first thread is ours with
// the low bits cleared, and the second half of them holds B and stores it
// reversed. Every thread of the block runs the same rounds (they depend on
// GT only), so every barrier is reached by all. While a pair's threads are
// at most a warp they are all in one warp (groups and pairs start at
// multiples of their size), and a round reads and writes only its pair's
// words: a warp barrier orders them, and the block barrier waits only where
// pairs span warps (for d = 1024, 1 round of 6; 7% faster there on an H100).
// The caller waits for every thread (a block barrier) before reusing seg.
template <int GT, int ITEMS, class T>
__device__ void sortRounds(T* seg, int lane, T (&v)[ITEMS]) {
    const int kk = lane * ITEMS;
#pragma unroll
    for (int width = ITEMS, pairThreads = 2; width < GT * ITEMS; width *= 2, pairThreads *= 2) {
        const int start = (lane & ~(pairThreads - 1)) * ITEMS;
        // v[r] goes to first + step * r: A's values in order, B's value x
        // (x = kk + r - start - width) to start + 2 width - 1 - x.
        const bool inB = lane & (pairThreads / 2);
        const int first = inB ? 2 * start + 3 * width - 1 - kk : kk;
        const int step = inB ? -1 : 1;
        pairThreads <= 32 ? __syncwarp() : __syncthreads();  // everyone has read the words
#pragma unroll
        for (int r = 0; r < ITEMS; ++r) seg[first + step * r] = v[r];
        pairThreads <= 32 ? __syncwarp() : __syncthreads();
        const int i = mirroredSearch(seg + start, width, kk - start);
        mergeMirrored(seg + start, width, i, kk - start - i, v);
    }
}

// ---------------------------------------------------------------- the merge kernel's merge
// ITEMS consecutive outputs of the stable merge of A = run[0, nA) and
// B = run[nA, nA + nB), starting at point (i, j) of the path, into v; the
// caller uses the first `count` (a segment's last thread holds fewer than
// ITEMS). The next value of each side waits in a register; the one taken is
// replaced by one load from its side. Loads stay inside the pair of runs (an
// exhausted side reads the pair's last value, never used), so the steps past
// the end are harmless and the loop needs no exit test; and a round whose
// pairs lie inside one warp touches no other warp's words (see the warp
// barrier below).
template <int ITEMS, class T>
__device__ void mergeInRegisters(const T* run, int nA, int nB, int i, int j, T (&v)[ITEMS]) {
    const int last = nA + nB - 1;
    int ia = i, ib = nA + j;
    T a = run[min(ia, last)], b = run[min(ib, last)];
#pragma unroll
    for (int r = 0; r < ITEMS; ++r) {
        const bool takeA = ib > last || (ia < nA && !bGoesFirst(b, a));
        v[r] = takeA ? a : b;
        const int next = (takeA ? ia : ib) + 1;
        const T after = run[min(next, last)];
        if (takeA) ia = next, a = after;
        else ib = next, b = after;
    }
}

// This thread's values of its segment: seg[kk, kk + mine), in registers v.
template <int ITEMS, class T>
__device__ void toShared(T* seg, int kk, int mine, const T (&v)[ITEMS]) {
#pragma unroll
    for (int r = 0; r < ITEMS; ++r)
        if (r < mine) seg[kk + r] = v[r];
}

// ---------------------------------------------------------------- kernels
// Part 3's Tuning 5 (fewer bound checks, a copy of the code for whole
// tiles) is done differently here. A copy for threads holding exactly ITEMS
// values would diverge: most segments end inside a thread's values, so a
// warp would run both copies one after the other (measured 1.4 times slower
// at d = 32). Instead, every thread runs unchecked code: the merge kernel's
// last threads run ITEMS steps whatever their count, and the sort pads every
// segment to whole threads (Part 3's Tuning 6).

// The block's segments, and which of them and which values of it a thread serves.
template <int ITEMS, int GT>
struct Place {
    long long first;  // the block's first segment
    int segments;     // how many it serves (fewer in the last block)
    int count;        // their values, segments * d
    int q;            // this thread's segment, of the block's
    int kk;           // its first value of the segment
    int mine;         // how many it holds (0 past the segment's end or the batch's)

    __device__ Place(int d, long long N) {
        constexpr int SEGS = kThreads / GT;
        first = blockIdx.x * static_cast<long long>(SEGS);
        segments = static_cast<int>(min(static_cast<long long>(SEGS), N - first));
        count = segments * d;
        q = threadIdx.x / GT;  // GT is a power of two: a shift
        kk = (threadIdx.x % GT) * ITEMS;
        mine = q < segments ? max(0, min(ITEMS, d - kk)) : 0;
    }
};

// Segment p of out = the stable merge of its two sorted halves in `in`
// (split[p] values, then d - split[p]).
template <int ITEMS, int GT, class T>
__global__ void __launch_bounds__(kThreads, 1024 / kThreads)
    mergeBatchTuned_k(const T* in, const int* split, T* out, Slots at, long long N) {
    constexpr int SLOT = GT * ITEMS;
    __shared__ T s[kThreads * ITEMS];
    const int d = at.d;
    const Place<ITEMS, GT> me(d, N);
    T* seg = s + me.q * SLOT;

    // Step 1: the block's segments into shared memory, and this thread's split.
    T v[ITEMS];
    const int nA = me.q < me.segments ? split[me.first + me.q] : 0;
    loadSegments<SLOT>(s, in + me.first * d, me.count, at, v);
    __syncthreads();

    // Step 2: this thread's outputs: one diagonal search, then a sequential merge.
    if (me.mine > 0) {
        const int i = diagonalSearch(seg, nA, seg + nA, d - nA, me.kk);
        mergeInRegisters(seg, nA, d - nA, i, me.kk - i, v);
    }
    __syncthreads();  // everyone has read s

    // Step 3: outputs back to their slots, then to global memory, coalesced.
    toShared(seg, me.kk, me.mine, v);
    __syncthreads();
    storeSegments<SLOT, ITEMS>(s, out + me.first * d, me.count, at);
}

// Segment p of out = segment p of in, sorted stably.
// Tuning: the sort pads every segment to SLOT = GT * ITEMS values and sorts
// all of them (sortRounds above). Every thread then holds exactly ITEMS
// values, every pair of runs is whole, and the rounds, their widths and the
// searches' step counts are compile-time constants: no bound checks, no loop
// tests. The pads cost nothing: their threads ran anyway, idle, in the same
// warps. Measured on an H100 against the checked rounds: d = 1024 0.171 ->
// 0.120 ms, d = 100 0.102 -> 0.074 ms.
template <int ITEMS, int GT, class T>
__global__ void __launch_bounds__(kThreads, 1024 / kThreads)
    sortBatchTuned_k(const T* in, T* out, Slots at, long long N) {
    constexpr int SLOT = GT * ITEMS;
    __shared__ T s[kThreads * ITEMS];
    const int d = at.d;
    const Place<ITEMS, GT> me(d, N);
    T* seg = s + me.q * SLOT;
    const int lane = threadIdx.x % GT;  // this thread of its group

    // Step 1: the block's segments into shared memory, coalesced.
    T v[ITEMS];
    loadSegments<SLOT>(s, in + me.first * d, me.count, at, v);
    __syncthreads();

    // Step 2: runs of ITEMS: each thread sorts its values in registers, pads
    // past its segment's end (all pads past the block's segments).
    const int end = me.q < me.segments ? d : 0;
#pragma unroll
    for (int r = 0; r < ITEMS; ++r) v[r] = me.kk + r < end ? seg[me.kk + r] : sortPadding<T>();
    sortInRegisters(v);

    // Step 3: rounds merge the runs in shared memory until one fills the
    // segment's slot (sortRounds).
    sortRounds<GT>(seg, lane, v);
    __syncthreads();  // everyone has read s

    // Step 4: the sorted segments back to shared, then their first d values
    // to global memory.
#pragma unroll
    for (int r = 0; r < ITEMS; ++r) seg[me.kk + r] = v[r];
    __syncthreads();
    storeSegments<SLOT, ITEMS>(s, out + me.first * d, me.count, at);
}

// ---------------------------------------------------------------- host
// The shape for d: one thread per segment while a segment fits in one
// thread's registers (up to 17 values), else the fewest threads, a power of
// two GT, that hold d at 17 values each. ITEMS is then the smallest of
// 3, 5, 9, 13, 17 that still covers the segment (d = 100: 8 threads of 13,
// not of 17, whose last two would hold nothing). Calls f(ITEMS, GT) with both
// as compile-time constants.
template <int N>
using Const = std::integral_constant<int, N>;

template <int GT, class F>
void withItems(int d, F f) {
    const int perThread = (d + GT - 1) / GT;
    if (GT == 1 && perThread <= 3) f(Const<3>{}, Const<GT>{});
    else if (GT == 1 && perThread <= 5) f(Const<5>{}, Const<GT>{});
    else if (perThread <= 9) f(Const<9>{}, Const<GT>{});
    else if (perThread <= 13) f(Const<13>{}, Const<GT>{});
    else f(Const<17>{}, Const<GT>{});
}

template <class F>
void withShape(int d, F f) {
    if (d <= 17) withItems<1>(d, f);
    else if (d <= 2 * 17) withItems<2>(d, f);
    else if (d <= 4 * 17) withItems<4>(d, f);
    else if (d <= 8 * 17) withItems<8>(d, f);
    else if (d <= 16 * 17) withItems<16>(d, f);
    else if (d <= 32 * 17) withItems<32>(d, f);
    else withItems<64>(d, f);  // 64 * 17 = 1088 >= kMaxBatchD
}

// Blocks for N segments of GT threads each.
static unsigned blocksFor(long long N, int groupThreads) {
    const long long perBlock = kThreads / groupThreads;
    const long long blocks = (N + perBlock - 1) / perBlock;
    LAB_REQUIRE(blocks <= INT_MAX, "N = " << N << " segments need " << blocks << " blocks, more than a grid holds");
    return static_cast<unsigned>(blocks);
}

template <class T>
void mergeSmallBatch(const T* dIn, const int* dSplit, T* dOut, int d, long long N) {
    batchShape(d, N, 0);  // Q3's checks of d and N
    checkBatchPointers(N, dIn, dOut, dSplit);
    if (N == 0) return;
    withShape(d, [&](auto items, auto group) {
        constexpr int ITEMS = decltype(items)::value, GT = decltype(group)::value;
        mergeBatchTuned_k<ITEMS, GT><<<blocksFor(N, GT), kThreads>>>(dIn, dSplit, dOut, slotsFor(d), N);
        CUDA_CHECK_LAUNCH("mergeBatchTuned_k");
    });
}

template <class T>
void sortSmall(const T* dIn, T* dOut, int d, long long N) {
    batchShape(d, N, 0);  // Q4's checks of d and N
    checkBatchPointers(N, dIn, dOut, dIn);
    if (N == 0) return;
    withShape(d, [&](auto items, auto group) {
        constexpr int ITEMS = decltype(items)::value, GT = decltype(group)::value;
        sortBatchTuned_k<ITEMS, GT><<<blocksFor(N, GT), kThreads>>>(dIn, dOut, slotsFor(d), N);
        CUDA_CHECK_LAUNCH("sortBatchTuned_k");
    });
}

// The build compiles this file twice, merges and sorts apart
// (reference_tuned_merge.cu, reference_tuned_sort.cu): together they were the
// lab's longest compile.
#ifndef LAB_TUNED_SORTS_ONLY
template void mergeSmallBatch<int>(const int*, const int*, int*, int, long long);
template void mergeSmallBatch<Tagged>(const Tagged*, const int*, Tagged*, int, long long);
#endif
#ifndef LAB_TUNED_MERGES_ONLY
template void sortSmall<int>(const int*, int*, int, long long);
template void sortSmall<Tagged>(const Tagged*, Tagged*, int, long long);
#endif

}  // namespace lab::tuned
