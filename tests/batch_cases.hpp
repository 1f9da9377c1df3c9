// Batches for the Part 2 graders (and the tuned kernels' tests): inputs of
// N segments of d values, and what a batch merge or sort must make of them.
#pragma once

#include "lab_test.hpp"
#include "large_tier.hpp"

#include "../common/inputs.hpp"
#include "../common/tagged.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace lab::test {

struct Batch {
    std::vector<Tagged> values;  // N segments of d
    std::vector<int> split;      // Q3: |A_p| of each segment
};

// N segments of d values of the given kind, tagged by position. With
// `sortedHalves`, each segment is a pair: split chosen per pair (0 and d
// included), both halves sorted.
inline Batch makeBatch(InputKind kind, int d, long long N, std::uint64_t s, bool sortedHalves) {
    Batch b;
    Rng rng(s);
    std::vector<int> keys;
    keys.reserve(static_cast<std::size_t>(N) * d);
    for (long long p = 0; p < N; ++p) {
        std::vector<int> seg = makeKeys(kind, d, caseSeed(s, p));
        if (sortedHalves) {
            const int split = p % 5 == 0 ? 0 : p % 5 == 1 ? d : static_cast<int>(rng.below(d + 1));
            std::sort(seg.begin(), seg.begin() + split);
            std::sort(seg.begin() + split, seg.end());
            b.split.push_back(split);
        }
        keys.insert(keys.end(), seg.begin(), seg.end());
    }
    b.values = tagKeys(keys, 0);
    return b;
}

template <class T>
std::vector<T> expectedMerges(const std::vector<T>& in, const std::vector<int>& split, int d) {
    std::vector<T> out(in.size());
    for (std::size_t p = 0; p < split.size(); ++p) {
        const auto seg = in.begin() + p * d;
        std::merge(seg, seg + split[p], seg + split[p], seg + d, out.begin() + p * d);
    }
    return out;
}

template <class T>
std::vector<T> expectedSorts(std::vector<T> in, int d) {
    for (std::size_t p = 0; p * d < in.size(); ++p) std::stable_sort(in.begin() + p * d, in.begin() + (p + 1) * d);
    return in;
}

// The [large] tier of a batch launcher: N segments of d values (past 2^31
// values in all), made and checked on the GPU (large_tier.hpp). With `pairs`
// each segment is two sorted halves and `split` their splits (a merge), else
// random values (a sort). run(in, split, out) calls the launcher, whose trace
// must obey `rules`. The caller checks large::canRun first.
template <class Run>
Check largeBatchCase(int d, long long N, bool pairs, std::uint64_t s, const std::vector<KernelRule>& rules, Run run) {
    large::Array in(N * d), split(pairs ? N : 1), out(N * d);
    if (pairs) large::fillPairs(in, split, d, s);
    else large::fillRandom(in, s);
    const std::uint64_t hashIn = large::segmentHash(in, d);
    const std::string ctx =
        context(s, "d=" + std::to_string(d) + " N=" + std::to_string(N) + (pairs ? " sorted pairs" : " random"));
    if (Check c = tracedCall([&] { run(in.data(), split.data(), out.data()); }, rules, ctx); !c) return c;
    if (Check c = large::checkOutput(out, d, hashIn, ctx); !c) return c;
    return large::checkInput(in, d, hashIn, "in", ctx);
}

}  // namespace lab::test
