// The k-way split of the tuned merge sort: where output `rank` of a stable
// merge of K sorted runs begins in each run. Host and device: the tests check
// it on the host against a brute-force merge, and on the device against the
// host; kwayPartition_k runs it on the GPU.
// [instructor reference: files named reference* are not in the student release]
//
// The merge path of Green, McColl and Bader (ICS 2012) splits a 2-way merge
// with one binary search on a diagonal. For K runs the split is K counts
// c_0 .. c_{K-1}, summing to `rank`: the counts of each run among the first
// `rank` outputs of the stable merge, where equal keys go out in run order.
//
// Why this search and not a hierarchical one. A 4-way merge is also
// merge(merge(R0, R1), merge(R2, R3)), and a binary search on the upper
// merge could find its split, but each of its ~log2(n) probes needs an
// element of a lower merge, itself a diagonal search of ~log2(n) loads: a
// chain of several hundred dependent loads in global memory per tile at 2^28
// keys, where Q5's 2-way partition waits on about 27. This search is a form
// of the exact multi-sequence selection of Varman et al. (1991), refined one
// bit at a time: about log2(n) levels, each waiting on one load time (its
// 2K loads are independent, refineCut), so its chain is about as long as a
// 2-way search's, and its probes (every h-th value of each run) lie on a
// lattice that all tiles of a group share in L2. Counted on the host, 4
// runs of 2^22 random keys: 23 levels and 0.25 further dependent loads per
// split on average (5 with 8 distinct keys).
//
// The order. Every value is identified by (key, run, index): it goes out
// before another when its key is smaller, or equal with a smaller run, or
// equal in the same run at a smaller index. Positions past a run's end read
// as a key larger than all ("past"), so every run is endless and all runs
// look alike.
//
// The levels. Sample h of run j is its element at index (x + 1) * h - 1 for
// x = 0, 1, ...: the last of each block of h. A "cut" takes from every run
// a prefix of its samples, b_j of them, such that every sample taken goes
// out before every sample left: it is the set of the smallest samples of its
// size. Going from block size 2h to h:
//   1. the cut of level 2h (b_j samples of run j) becomes one of level h:
//      2 b_j samples of each run, plus the run's sample 2 b_j (new at this
//      level, between its last taken and first left samples of level 2h)
//      when it goes out before theta, the largest sample taken. Every sample
//      taken is then at most theta and every one left is after it;
//   2. the cut is then moved to size floor(rank / h), dropping the largest
//      taken sample or adding the smallest left one, one at a time (each move
//      keeps the cut a cut). Step 1 made it 2 floor(rank / 2h) + m, with m the
//      number of samples that joined (0..K), so at most K drops or one add.
// At h = 1 the samples are the values, and the cut of size `rank` is the
// split. The top level, 2^bits > rank, starts from the empty cut.
#pragma once

#include "../common/hd.hpp"
#include "../common/tagged.hpp"

// Loops over the K runs are unrolled on the device, so that the per-run
// arrays below stay in registers (the host compiler has no such pragma).
#ifdef __CUDA_ARCH__
#define LAB_UNROLL_RUNS _Pragma("unroll")
#else
#define LAB_UNROLL_RUNS
#endif

namespace lab::tuned {

// A sample as the search compares it: one 64-bit word that orders samples as
// the stable merge does, so that every comparison is one instruction. From the
// top: whether it lies past its run's end (then after every value), its key
// (biased, so that unsigned order is signed order), its run (equal keys: the
// earlier run first). Two samples of one run compare by key, and a later one
// never goes first, which is what step 1 below needs.
using Sample = unsigned long long;

LAB_HD inline int keyOf(int v) { return v; }
LAB_HD inline int keyOf(const Tagged& v) { return v.key; }

LAB_HD inline Sample valueSample(int key, int run) {
    return (static_cast<Sample>(static_cast<unsigned>(key) ^ 0x80000000u) << 8) | static_cast<unsigned>(run);
}
LAB_HD inline Sample pastSample(int run) { return (1ULL << 40) | static_cast<unsigned>(run); }

// K runs of one merge: run j is run[j][0, len[j]). I, the type of indices
// and counts, is long long, or int where every run and the sum of their
// lengths are below 2^30 (then no index the search computes reaches 2^31):
// 32-bit arithmetic makes a level of the search about a third shorter
// (TUNING.md, "The split in 32-bit indices").
template <int K, class T, class I = long long>
struct Runs {
    const T* run[K];
    I len[K];

    // Sample x of run j at block size h.
    LAB_HD Sample sample(int j, I x, I h) const {
        const I at = (x + 1) * h - 1;
        return at >= len[j] ? pastSample(j) : valueSample(keyOf(run[j][at]), j);
    }

    // The same in two halves, so that a level can have all its loads in
    // flight before it uses any: load() reads without a branch (an index past
    // the run reads its last value, an empty run reads `any`, a value of some
    // run), and asSample() then says what was read.
    LAB_HD T load(int j, I x, I h, const T* any) const {
        const I at = (x + 1) * h - 1;
        return len[j] > 0 ? run[j][at < len[j] ? at : len[j] - 1] : *any;
    }
    LAB_HD Sample asSample(int j, I x, I h, const T& v) const {
        return (x + 1) * h - 1 >= len[j] ? pastSample(j) : valueSample(keyOf(v), j);
    }

    // A value of some run, for load(); null when every run is empty (then
    // the only split is rank 0, which loads nothing).
    LAB_HD const T* anyValue() const {
        const T* any = nullptr;
        LAB_UNROLL_RUNS
        for (int j = K - 1; j >= 0; --j)
            if (len[j] > 0) any = run[j];
        return any;
    }
};

// The number of bits of r: the smallest m with r < 2^m.
LAB_HD inline int bitLength(long long r) {
    int m = 0;
    while (m < 63 && (r >> m) != 0) ++m;
    return m;
}

// The cut's state at one level: b[j] samples taken from run j; top[j] is the
// last one taken (when b[j] > 0), next[j] the first one left (where step 2
// may read it: refineCut), and below[j] the one before top[j] where
// haveBelow[j] (when b[j] > 1).
template <int K, class I>
struct Cut {
    I b[K];
    Sample top[K], next[K], below[K];
    bool haveBelow[K];
    I size;

    // The run whose last taken sample goes out last (-1: nothing taken), and
    // that sample. (The loops index the arrays with constants only, so that
    // they stay in registers.)
    LAB_HD int runOfLargestTaken(Sample& largest) const {
        int r = -1;
        LAB_UNROLL_RUNS
        for (int j = 0; j < K; ++j)
            if (b[j] > 0 && (r < 0 || largest < top[j])) r = j, largest = top[j];
        return r;
    }

    // The run whose first left sample goes out first.
    LAB_HD int runOfSmallestLeft() const {
        int r = 0;
        Sample smallest = next[0];
        LAB_UNROLL_RUNS
        for (int j = 1; j < K; ++j)
            if (next[j] < smallest) r = j, smallest = next[j];
        return r;
    }
};

// Step 1 of a level (block size h, the cut of level 2h in `cut`): double it,
// and take each run's new sample that goes out before theta.
// Latency: the level's 2K loads are independent and all issued before any is
// used, so the level waits on one load time (loads behind branches, each used
// at once, made it wait on up to 2K in turn): each run's new sample (2 b) and
// the one before it (2 b - 2), which step 2 takes as the run's last one when
// it drops one.
// next[j] is set where no sample was taken: step 2 reads next[] only to add
// one, which happens only when none was taken (below).
template <int K, class T, class I>
LAB_HD void refineCut(const Runs<K, T, I>& runs, const T* any, I h, Cut<K, I>& cut) {
    T ve[K], vf[K];
    LAB_UNROLL_RUNS
    for (int j = 0; j < K; ++j) {  // the loads
        const I b = 2 * cut.b[j];
        ve[j] = runs.load(j, b, h, any);
        vf[j] = runs.load(j, b >= 2 ? b - 2 : 0, h, any);
    }
    Sample theta = 0;
    const bool taken = cut.runOfLargestTaken(theta) >= 0;
    cut.size *= 2;
    LAB_UNROLL_RUNS
    for (int j = 0; j < K; ++j) {
        cut.b[j] *= 2;
        const Sample e = runs.asSample(j, cut.b[j], h, ve[j]);
        const Sample f = cut.b[j] >= 2 ? runs.asSample(j, cut.b[j] - 2, h, vf[j]) : pastSample(j);
        if (taken && e < theta) {
            cut.below[j] = cut.top[j];  // sample 2 b - 1, the old last one taken
            cut.top[j] = e;
            ++cut.b[j];
            ++cut.size;
        } else {
            cut.below[j] = f;  // top[j] stays: sample 2 b - 1 is the old last one taken
            cut.next[j] = e;
        }
        cut.haveBelow[j] = true;
    }
}

// Step 2 of a level: move the cut to `target` samples.
template <int K, class T, class I>
LAB_HD void resizeCut(const Runs<K, T, I>& runs, I h, I target, Cut<K, I>& cut) {
    while (cut.size > target) {  // drop the largest taken sample
        Sample largest = 0;
        const int r = cut.runOfLargestTaken(largest);
        LAB_UNROLL_RUNS
        for (int j = 0; j < K; ++j)
            if (j == r) {
                cut.next[j] = cut.top[j];
                --cut.b[j];
                if (cut.b[j] > 0) cut.top[j] = cut.haveBelow[j] ? cut.below[j] : runs.sample(j, cut.b[j] - 1, h);
                cut.haveBelow[j] = false;  // a second drop from this run waits for its load
            }
        --cut.size;
    }
    // Add the smallest left sample. Step 1 made the cut 2 floor(rank / 2h) + m
    // with m samples taken, and target is 2 floor(rank / 2h) or one more: an
    // add happens only when m = 0, where step 1 set every next[j]. After it,
    // next[] is not read again before the next level's step 1.
    if (cut.size < target) {
        const int r = cut.runOfSmallestLeft();
        LAB_UNROLL_RUNS
        for (int j = 0; j < K; ++j)
            if (j == r) {
                cut.below[j] = cut.top[j];
                cut.haveBelow[j] = true;
                cut.top[j] = cut.next[j];
                ++cut.b[j];
            }
        ++cut.size;
    }
}

// The split of output `rank` (0 <= rank <= the runs' total): split[j] values
// of run j precede it in the stable merge of the runs.
template <int K, class T, class I>
LAB_HD void kwaySplit(const Runs<K, T, I>& runs, I rank, long long (&split)[K]) {
    static_assert(K <= 256, "a Sample holds the run number in 8 bits");
    Cut<K, I> cut;
    cut.size = 0;
    LAB_UNROLL_RUNS
    for (int j = 0; j < K; ++j) {
        cut.b[j] = 0;
        cut.top[j] = cut.next[j] = cut.below[j] = pastSample(j);
        cut.haveBelow[j] = false;
    }
    const T* any = runs.anyValue();
    for (int level = bitLength(rank) - 1; level >= 0; --level) {
        const I h = I(1) << level;
        refineCut(runs, any, h, cut);
        resizeCut(runs, h, rank >> level, cut);
    }
    LAB_UNROLL_RUNS
    for (int j = 0; j < K; ++j) split[j] = cut.b[j];
}

}  // namespace lab::tuned
