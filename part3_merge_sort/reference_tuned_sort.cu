// Part 3 beyond the questions: a merge sort with k-way merge passes.
// [instructor reference: files named reference* are not in the student release]
//
// Q6's sort (reference.cu) sorts tiles in shared memory, then merges pairs of
// runs, one pass over memory per doubling: 16 passes for 2^28 keys. Each pass
// reads and writes every value once, so the passes set the time. This sort
// merges groups of K = 4 runs per pass, quadrupling the run length each time:
//   - sortTilesTuned_k: a block sorts a tile of SORT_TILE values (as Q6 does);
//   - kwayPartition_k: for every output tile of a pass, where it starts in
//     each of its group's K runs (the k-way split, reference_tuned_split.cuh);
//   - kwayMerge_k: a block loads its K slices into shared memory and merges
//     them as a tree of 2-way merges, log2(K) rounds with several outputs per
//     thread, then writes its tile coalesced.
// Passes over memory (the tile sort included), ints, tiles of 16896 values:
// 2^20 keys 4, 2^24 keys 6, 2^28 keys 8 (Q6's reference: 8, 12, 16).
#include "reference_tuned.cuh"
#include "reference_tuned_split.cuh"

#include "launch_support.cuh"
#include "part3.cuh"

#include "../common/cuda_check.hpp"
#include "../common/device_buffer.hpp"
#include "../part1_merge_path/reference_search.cuh"

#include <climits>
#include <type_traits>
#include <utility>
#include <vector>

namespace lab::tuned {

// The sort's configuration (measured in TUNING.md, "The tuned merge sort"):
// - ITEMS odd: a warp's r-th values lie ITEMS words apart, in 32 different
//   banks (reference.cu, Tuning 2). Ints take 33 a thread: each thread's
//   diagonal searches serve twice the outputs, and the tile sort's tile,
//   512 x 33, saves a 4-way pass at 2^24, 2^26 and 2^28. Tagged values keep
//   17 (33 cost them more than they saved).
// - The tile sort's tile may take more than the 48 KB of shared memory a
//   block gets by default, where the GPU offers it (cudaFuncSetAttribute);
//   elsewhere (a T4 offers 64 KB) it runs kFitSortThreads, which fit.
// - The merge runs 128 x 33 for ints (76 registers a thread: blocks of 128
//   waste fewer of them than blocks of 256), 256 x 17 for tagged values.
// A group of K runs must hold whole merge tiles, so the sort's tile is a
// multiple of the merge's.
template <class T>
struct TunedShape {
    static constexpr int kWays = 4;
    static constexpr bool kWide = sizeof(T) > 4;
    static constexpr int kItems = kWide ? 17 : 33;
    static constexpr int kSortThreads = kWide ? 256 : 512;
    static constexpr int kMergeThreads = kWide ? 256 : 128;
    static constexpr int kFitSortThreads = fittingThreads<kSortThreads, kItems, T>();
    static constexpr int kMergeTile = kMergeThreads * kItems;
    static_assert(kWays >= 2 && (kWays & (kWays - 1)) == 0, "the merge rounds pair runs: K a power of two");
    static_assert(kFitSortThreads % kMergeThreads == 0, "a group of K runs must hold whole merge tiles");
    static_assert(kSortThreads % kFitSortThreads == 0, "either tile sort's tile: whole merge tiles");
};

// ---------------------------------------------------------------- one pass

// One pass: the sorted runs of `width` values of src, in groups of K
// consecutive runs, are merged into runs of K * width in dst. The last group
// may have fewer runs, and its last run fewer values.
template <int K, class T>
struct KWayPass {
    const T* src;
    T* dst;
    long long n, width;

    // The group that output `first` belongs to: its start, and its K runs
    // (indices of type I: Runs).
    __device__ long long groupStart(long long first) const { return first / (K * width) * (K * width); }
    template <class I = long long>
    __device__ Runs<K, T, I> runsAt(long long start) const {
        Runs<K, T, I> r;
#pragma unroll
        for (int j = 0; j < K; ++j) {
            const long long begin = min(start + j * width, n);
            r.run[j] = src + begin;
            r.len[j] = static_cast<I>(min(width, n - begin));
        }
        return r;
    }
};

// A pair of neighbouring runs in shared memory: A = s[start, mid), B = s[mid, end).
struct Pair {
    int start, mid, end;
};

// A thread's place on the merge path of a pair: A's next value s[ia] (a),
// B's next s[ib] (b). take() returns the next output of the stable merge (A on
// ties) and loads only the successor of the value taken, from one chosen
// index; a side used up reads the slot after it, a value never used (so s
// has one spare slot after the tile).
template <class T>
struct PathCursor {
    int ia, ib, endA, endB;
    T a, b;

    // At output x of pair p (x in [p.start, p.end]), found by Part 1's search.
    __device__ static PathCursor at(const T* s, Pair p, int x) {
        const int i = diagonalSearch(s + p.start, p.mid - p.start, s + p.mid, p.end - p.mid, x - p.start);
        return start(s, p, p.start + i, p.mid + (x - p.start - i));
    }
    __device__ static PathCursor start(const T* s, Pair p, int ia, int ib) { return {ia, ib, p.mid, p.end, s[ia], s[ib]}; }

    __device__ T take(const T* s) {
        const bool fromA = ib >= endB || (ia < endA && !bGoesFirst(b, a));
        const T out = fromA ? a : b;
        const int next = (fromA ? ia : ib) + 1;
        const T value = s[next];
        ia = fromA ? next : ia;
        ib = fromA ? ib : next;
        a = fromA ? value : a;
        b = fromA ? b : value;
        return out;
    }
};

// ---------------------------------------------------------------- tiles in shared memory

// The tile's load (loadTile), store (storeTile) and sort in registers
// (sortRegisters) are Q6's reference's, the same code in this namespace.
#include "reference_tiles.cuh"

// v[r] -> s[kk + r] for the thread's count outputs, between two barriers (s
// free before, read by others after).
template <int ITEMS, class T>
__device__ void storeRegisters(T* s, const T (&v)[ITEMS], int kk, int count) {
    __syncthreads();
#pragma unroll
    for (int r = 0; r < ITEMS; ++r)
        if (r < count) s[kk + r] = v[r];
    __syncthreads();
}

// ---------------------------------------------------------------- phase 1: tile sort

// sortRegisters for a full tile of ints, whose equal values cannot be told
// apart, so that their sort need not be stable: Batcher's odd-even merge sort
// network cut to ITEMS values (the comparators of the next power of two's
// network that touch only v[0, ITEMS)), laid out at compile time. For 33
// values, 246 compare-exchanges where transposition takes 528 (TUNING.md, "A
// sorting network for ints in the tile sort").

// Comparator c of that network for n values: the index it leaves the smaller
// value at (want 0) or the larger (want 1); -1 when c is past the last.
LAB_HD constexpr int networkComparator(int n, int c, int want) {
    for (int p = 1; p < n; p *= 2)  // merge sorted blocks of p into blocks of 2p
        for (int k = p; k >= 1; k /= 2)
            for (int j = k % p; j + k < n; j += 2 * k)
                for (int i = 0; i < k && i + j + k < n; ++i)
                    if ((i + j) / (2 * p) == (i + j + k) / (2 * p) && c-- == 0)  // both in one block of 2p
                        return want == 0 ? i + j : i + j + k;
    return -1;
}
LAB_HD constexpr int comparators(int n) {
    int c = 0;
    while (networkComparator(n, c, 0) >= 0) ++c;
    return c;
}

template <int LO, int HI, int ITEMS>
__device__ void compareExchange(int (&v)[ITEMS]) {
    const int x = v[LO], y = v[HI];
    v[LO] = min(x, y);
    v[HI] = max(x, y);
}

template <int ITEMS, int... C>
__device__ void sortRegistersNetwork(int (&v)[ITEMS], std::integer_sequence<int, C...>) {
    (compareExchange<networkComparator(ITEMS, C, 0), networkComparator(ITEMS, C, 1)>(v), ...);
}
template <int ITEMS>
__device__ void sortRegistersNetwork(int (&v)[ITEMS]) {
    sortRegistersNetwork(v, std::make_integer_sequence<int, comparators(ITEMS)>{});
}

// A loaded tile of len values at s, sorted into v (outputs threadIdx.x *
// ITEMS ..). FULL: every tile but the last, compiled without bound checks.
template <int THREADS, int ITEMS, bool FULL, class T>
__device__ void sortLoadedTile(T* s, int len, T (&v)[ITEMS]) {
    if (FULL) len = THREADS * ITEMS;
    const int kk = threadIdx.x * ITEMS;
    const int mine = FULL ? ITEMS : max(0, min(ITEMS, len - kk));

    // Step 1: runs of ITEMS, each sorted by its thread in registers.
#pragma unroll
    for (int r = 0; r < ITEMS; ++r)
        if (r < mine) v[r] = s[kk + r];
    if constexpr (FULL && std::is_same_v<T, int>) sortRegistersNetwork(v);
    else sortRegisters(v, mine);

    // Step 2: rounds merge neighbouring runs of width ITEMS, 2 ITEMS, ...; a
    // pair is the work of pairThreads threads (a power of two), and no
    // thread's outputs cross a pair's end.
    for (int width = ITEMS, pairThreads = 2; width < len; width *= 2, pairThreads *= 2) {
        storeRegisters(s, v, kk, mine);
        if (mine > 0) {
            const int start = (threadIdx.x & ~(pairThreads - 1)) * ITEMS;
            const Pair p{start, min(start + width, len), min(start + 2 * width, len)};
            PathCursor<T> c = PathCursor<T>::at(s, p, kk);
#pragma unroll
            for (int r = 0; r < ITEMS; ++r)
                if (r < mine) v[r] = c.take(s);
        }
    }
}

// The tile sort's shared memory: the tile and PathCursor's spare slot.
template <int THREADS, int ITEMS, class T>
constexpr int tileSortBytes() { return (THREADS * ITEMS + 1) * static_cast<int>(sizeof(T)); }

// Blocks per multiprocessor the tile sort asks registers for: as many as its
// threads allow, one where its tile takes more than 48 KB.
template <int THREADS, int ITEMS, class T>
constexpr int tileSortMinBlocks() { return tileSortBytes<THREADS, ITEMS, T>() > 48 * 1024 ? 1 : 1024 / THREADS; }

// Block b sorts tile b of `in` (SORT_TILE values, fewer in the last) into `out`.
// Its tile is dynamic shared memory: tileSortBytes() of it.
template <int THREADS, int ITEMS, class T>
__global__ void __launch_bounds__(THREADS, tileSortMinBlocks<THREADS, ITEMS, T>())
    sortTilesTuned_k(const T* in, T* out, long long n) {
    constexpr int TILE = THREADS * ITEMS;
    extern __shared__ __align__(16) unsigned char tileSortShared[];
    T* s = reinterpret_cast<T*>(tileSortShared);
    const long long base = blockIdx.x * static_cast<long long>(TILE);
    const int len = static_cast<int>(min(static_cast<long long>(TILE), n - base));

    // Step 1: load the tile, coalesced.
    waitForPreviousKernel();
    loadTile<THREADS, ITEMS>(s, len, [&](int x) { return in[base + x]; });
    allowNextKernel();
    __syncthreads();

    // Step 2: sort it; step 3: store it, coalesced.
    T v[ITEMS];
    if (len == TILE) sortLoadedTile<THREADS, ITEMS, true>(s, len, v);
    else sortLoadedTile<THREADS, ITEMS, false>(s, len, v);
    const int kk = threadIdx.x * ITEMS;
    __syncthreads();  // everyone has read s
    storeTile<THREADS>(s, v, kk, len, out + base);
}

// ---------------------------------------------------------------- phase 2: k-way passes

// Partition: splits[t * K + j] = how many values of run j of its group
// precede output tile t's first output, one thread per tile. I: int where a
// group holds fewer than 2^30 values (Runs).
template <int K, class T, class I>
__global__ void kwayPartition_k(KWayPass<K, T> pass, int tile, long long numTiles, long long* splits) {
    waitForPreviousKernel();  // the pass before wrote the runs
    allowNextKernel();
    const long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (t >= numTiles) return;
    const long long first = t * tile;
    const long long start = pass.groupStart(first);
    long long split[K];
    kwaySplit(pass.template runsAt<I>(start), static_cast<I>(first - start), split);
#pragma unroll
    for (int j = 0; j < K; ++j) splits[t * K + j] = split[j];
}

// The pair of round W holding output x of the tile: runs of the round are W
// consecutive slices (off[] their bounds), a pair is two runs. When x ends a
// pair, the next pair that has outputs.
template <int W, int K>
__device__ Pair pairHolding(const int (&off)[K + 1], int x) {
    Pair p{off[K - 2 * W], off[K - W], off[K]};
#pragma unroll
    for (int q = K - 4 * W; q >= 0; q -= 2 * W)
        if (x < off[q + 2 * W]) p = {off[q], off[q + W], off[q + 2 * W]};
    return p;
}

// Round W of the tile's merge tree: every pair of runs (W slices each) of s
// is merged; the thread's count outputs from kk on go to v. A thread's outputs
// may cross from one pair into the next (slices have any length), except in
// the last round, which has one pair.
template <int W, int K, int ITEMS, class T>
__device__ void mergeRound(const T* s, const int (&off)[K + 1], int kk, int count, T (&v)[ITEMS]) {
    if (count <= 0) return;
    PathCursor<T> c = PathCursor<T>::at(s, pairHolding<W, K>(off, kk), kk);
#pragma unroll
    for (int r = 0; r < ITEMS; ++r) {
        if (r < count) {
            if (2 * W < K && kk + r == c.endB) {  // the pair is done: the next one from its start
                const Pair p = pairHolding<W, K>(off, kk + r);
                c = PathCursor<T>::start(s, p, p.start, p.mid);
            }
            v[r] = c.take(s);
        }
    }
}

// Rounds W, 2W, ..., K/2: each merges pairs of the round before's runs; the
// outputs go back to s between rounds.
template <int W, int K, int ITEMS, class T>
__device__ void mergeRounds(T* s, const int (&off)[K + 1], int kk, int count, T (&v)[ITEMS]) {
    mergeRound<W, K>(s, off, kk, count, v);
    if constexpr (2 * W < K) {
        storeRegisters(s, v, kk, count);
        mergeRounds<2 * W, K>(s, off, kk, count, v);
    }
}

// Merge: block t writes output tile t of the pass, merged from its K slices,
// [splits[t], splits[t + 1]) of each run (to its group's end for the last tile).
template <int THREADS, int ITEMS, int K, class T>
__global__ void __launch_bounds__(THREADS) kwayMerge_k(KWayPass<K, T> pass, const long long* splits) {
    constexpr int TILE = THREADS * ITEMS;
    __shared__ T s[TILE + 1];  // the slices, then each round's runs; + 1: PathCursor's spare slot
    const long long t = blockIdx.x;
    const long long first = t * TILE, start = pass.groupStart(first);
    const long long groupEnd = min(start + K * pass.width, pass.n);
    const Runs<K, T> runs = pass.runsAt(start);
    waitForPreviousKernel();  // for the splits

    // Step 1: the slices. Slice j, values [lo, hi) of run j, goes to
    // s[off[j], off[j + 1]); shift[j] turns a position of s into src's index.
    int off[K + 1];
    long long shift[K];
    off[0] = 0;
#pragma unroll
    for (int j = 0; j < K; ++j) {
        const long long lo = splits[t * K + j];
        const long long hi = first + TILE >= groupEnd ? runs.len[j] : splits[(t + 1) * K + j];
        off[j + 1] = off[j] + static_cast<int>(hi - lo);
        shift[j] = start + j * pass.width + lo - off[j];
    }
    const int len = off[K];

    // Step 2: load them, coalesced within each slice.
    loadTile<THREADS, ITEMS>(s, len, [&](int x) {
        long long at = shift[0] + x;
#pragma unroll
        for (int j = 1; j < K; ++j)
            if (x >= off[j]) at = shift[j] + x;
        return pass.src[at];
    });
    allowNextKernel();
    __syncthreads();

    // Step 3: the merge tree, log2(K) rounds; step 4: the tile out, coalesced.
    const int kk = min(static_cast<int>(threadIdx.x) * ITEMS, len);
    const int count = min(ITEMS, len - kk);
    T v[ITEMS];
    mergeRounds<1, K>(s, off, kk, count, v);
    __syncthreads();  // everyone has read s
    storeTile<THREADS>(s, v, kk, len, pass.dst + first);
}

// ---------------------------------------------------------------- host

// One pass: the partition, then the merge, each allowed to overlap the end of
// the kernel before it (programmatic dependent launch, launch_support.cuh).
template <class T>
void runPass(const KWayPass<TunedShape<T>::kWays, T>& pass, long long numTiles, long long* splits) {
    using S = TunedShape<T>;
    // Blocks of 64: few tiles (3972 at 2^24) then spread over 63 multiprocessors
    // rather than 16, so that fewer of the searches' warps share a scheduler
    // (H200, 2^24: partitions 44-54 -> 40-48 us; TUNING.md).
    constexpr int kPartitionThreads = 64;
    const auto partition = S::kWays * pass.width < (1LL << 30) ? kwayPartition_k<S::kWays, T, int>
                                                               : kwayPartition_k<S::kWays, T, long long>;
    launchAfterPrevious(partition, static_cast<unsigned>(ceilDiv(numTiles, kPartitionThreads)), kPartitionThreads,
                        pass, S::kMergeTile, numTiles, splits);
    launchAfterPrevious(kwayMerge_k<S::kMergeThreads, S::kItems, S::kWays, T>, static_cast<unsigned>(numTiles),
                        S::kMergeThreads, pass, static_cast<const long long*>(splits));
}

// The tile sort's threads on the current GPU: kSortThreads where their tile
// fits in the shared memory a block may take (asked for once per GPU), else
// kFitSortThreads.
template <class T>
int sortThreads() {
    using S = TunedShape<T>;
    if constexpr (S::kSortThreads == S::kFitSortThreads) {
        return S::kFitSortThreads;
    } else {
        constexpr int bytes = tileSortBytes<S::kSortThreads, S::kItems, T>();
        static int known[64] = {};  // per device: 0 not asked yet, else the threads
        int device = 0;
        CUDA_CHECK(cudaGetDevice(&device));
        LAB_REQUIRE(device >= 0 && device < 64, "device " << device << " out of range");
        if (known[device] == 0) {
            cudaDeviceProp prop{};
            CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
            const bool fits = prop.sharedMemPerBlockOptin >= static_cast<std::size_t>(bytes);
            if (fits)
                CUDA_CHECK(cudaFuncSetAttribute(sortTilesTuned_k<S::kSortThreads, S::kItems, T>,
                                                cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
            known[device] = fits ? S::kSortThreads : S::kFitSortThreads;
        }
        return known[device];
    }
}

// Tiles of threads x kItems values of in, each sorted into out.
template <class T>
void sortTiles(const T* in, T* out, long long n, int threads) {
    using S = TunedShape<T>;
    const auto blocks = static_cast<unsigned>(ceilDiv(n, static_cast<long long>(threads) * S::kItems));
    if (threads == S::kSortThreads)
        sortTilesTuned_k<S::kSortThreads, S::kItems>
            <<<blocks, S::kSortThreads, tileSortBytes<S::kSortThreads, S::kItems, T>()>>>(in, out, n);
    else
        sortTilesTuned_k<S::kFitSortThreads, S::kItems>
            <<<blocks, S::kFitSortThreads, tileSortBytes<S::kFitSortThreads, S::kItems, T>()>>>(in, out, n);
    CUDA_CHECK_LAUNCH("sortTilesTuned_k");
}

template <class T>
void mergeSort(T* dData, long long n) {
    using S = TunedShape<T>;
    checkMergeSort(dData, n);
    if (n <= 1) return;
    const int threads = sortThreads<T>();
    const long long sortTile = static_cast<long long>(threads) * S::kItems;
    const long long numSortTiles = ceilDiv(n, sortTile), mergeTiles = ceilDiv(n, S::kMergeTile);
    LAB_REQUIRE(mergeTiles <= INT_MAX, "too many tiles (" << mergeTiles << ") for one grid");
    if (numSortTiles == 1) {  // one block sorts it all, in place
        sortTiles(dData, dData, n, threads);
        return;
    }
    // The ping-pong buffer and the splits, allocated once for all passes and
    // freed in stream order on every way out (Scratch, launch_support.cuh).
    Scratch<T> temp(n);
    Scratch<long long> splits(mergeTiles * S::kWays);

    // Which buffer holds the result: each pass moves the data to the other
    // one, so with an odd number of passes the tile sort writes to temp, and
    // the last pass lands in dData either way.
    int passes = 0;
    for (long long width = sortTile; width < n; width *= S::kWays) ++passes;
    T* src = passes % 2 ? temp.get() : dData;
    T* dst = passes % 2 ? dData : temp.get();

    // Phase 1: sorted runs of one tile each; phase 2: k-way passes.
    sortTiles(dData, src, n, threads);
    for (long long width = sortTile; width < n; width *= S::kWays) {
        runPass<T>({src, dst, n, width}, mergeTiles, splits.get());
        std::swap(src, dst);
    }
}

template <class T>
int mergeSortTile() { return sortThreads<T>() * TunedShape<T>::kItems; }
template <class T>
int mergeSortMergeTile() { return TunedShape<T>::kMergeTile; }

// ---------------------------------------------------------------- for the tests

// Split r of the runs for every rank r < ranks: out[r * K + j], one thread a rank.
template <int K, class I>
__global__ void splitEveryRank_k(Runs<K, int, I> runs, long long ranks, long long* out) {
    const long long rank = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (rank >= ranks) return;
    long long split[K];
    kwaySplit(runs, static_cast<I>(rank), split);
#pragma unroll
    for (int j = 0; j < K; ++j) out[rank * K + j] = split[j];
}

template <class I>
std::vector<long long> kwaySplitsOnDevice(const std::vector<std::vector<int>>& runs) {
    constexpr int K = TunedShape<int>::kWays;
    LAB_REQUIRE(runs.size() == K, "kwaySplitsOnDevice takes " << K << " runs, not " << runs.size());
    std::vector<int> all;
    for (const auto& r : runs) all.insert(all.end(), r.begin(), r.end());
    const long long ranks = static_cast<long long>(all.size()) + 1;
    DeviceBuffer<int> values(all.size());
    values.upload(all);
    DeviceBuffer<long long> out(static_cast<std::size_t>(ranks * K));
    Runs<K, int, I> r;
    long long offset = 0;
    for (int j = 0; j < K; ++j) {
        r.run[j] = values.data() + offset;
        r.len[j] = static_cast<I>(runs[j].size());
        offset += r.len[j];
    }
    splitEveryRank_k<K, I><<<static_cast<unsigned>(ceilDiv(ranks, 256)), 256>>>(r, ranks, out.data());
    CUDA_CHECK_LAUNCH("splitEveryRank_k");
    return out.download();
}

template std::vector<long long> kwaySplitsOnDevice<int>(const std::vector<std::vector<int>>&);
template std::vector<long long> kwaySplitsOnDevice<long long>(const std::vector<std::vector<int>>&);
template void mergeSort<int>(int*, long long);
template void mergeSort<Tagged>(Tagged*, long long);
template int mergeSortTile<int>();
template int mergeSortTile<Tagged>();
template int mergeSortMergeTile<int>();
template int mergeSortMergeTile<Tagged>();

}  // namespace lab::tuned
