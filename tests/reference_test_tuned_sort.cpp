// Tests of the tuned Part 3 merge sort (part3_merge_sort/reference_tuned_sort.cu,
// k-way merge passes), which sets the bar of the Part 3 study. Instructor-only,
// like the kernels; no points. Part of ./build/<impl>/test_tuned ("[part3]").
#include "lab_test.hpp"
#include "large_tier.hpp"

#include "../common/inputs.hpp"
#include "../part3_merge_sort/reference_tuned.cuh"
#include "../part3_merge_sort/reference_tuned_split.cuh"

#include <algorithm>
#include <climits>
#include <array>
#include <string>
#include <vector>

using namespace lab;

namespace {

// The kernels the tuned sort launches: one tile sort, then a partition and a
// merge per pass (none for a single tile).
std::vector<test::KernelRule> tunedSortRules(long long n) {
    return {{"sortTilesTuned_k", 0, 0, n > 1}, {"kwayPartition_k", 0, 0, false}, {"kwayMerge_k", 0, 0, false}};
}

// Sorts `in` in place on the device with tuned::mergeSort and checks it
// against std::stable_sort (order, permutation and, for Tagged, stability).
template <class T>
Check tunedSortCase(const std::vector<T>& in, const std::string& ctx) {
    DeviceBuffer<T> d(in.size());
    d.upload(in);
    const long long n = static_cast<long long>(in.size());
    if (Check c = test::tracedCall([&] { tuned::mergeSort(d.data(), n); }, tunedSortRules(n), ctx); !c) return c;
    return test::checkRecordedOutput(d, [&] {
        std::vector<T> expected = in;
        std::stable_sort(expected.begin(), expected.end());
        return expected;
    }, ctx);
}

std::string sized(long long n, const std::string& kind) { return "n=" + std::to_string(n) + " " + kind; }

// Sizes where the tuned sort changes what it does, for values of type T:
// around its tile and merge tile, and for each pass level (runs of L = tile,
// 4 tile, 16 tile, ...) sizes making 1 to 5 runs, whole or with a short last
// run. Quick mode (emulated too) stops at runs of 4 tiles.
template <class T>
std::vector<long long> tunedEdgeSizes() {
    const long long tile = tuned::mergeSortTile<T>(), mergeTile = tuned::mergeSortMergeTile<T>();
    std::vector<long long> n = {0, 1, 2, 3, 17, 1000, tile - 1, tile, tile + 1, mergeTile - 1, mergeTile + 1};
    const int levels = test::sanitized() ? 1 : test::quick() ? 2 : 3;
    long long L = tile;
    for (int level = 0; level < levels; ++level, L *= 4)
        for (long long runs = 1; runs <= 5; ++runs) {
            if (test::sanitized() && runs % 2 == 0) continue;
            n.push_back(runs * L);
            n.push_back((runs - 1) * L + L / 3 + 1);
        }
    std::sort(n.begin(), n.end());
    n.erase(std::unique(n.begin(), n.end()), n.end());
    return n;
}

// K sorted runs for the split's tests: lengths up to `width` (a quarter of
// them exactly `width`, some empty), keys 0 .. distinct - 1, or with
// `extremes` as many keys from both ends of int (the split packs keys into
// words).
template <int K>
std::vector<std::vector<int>> randomRuns(Rng& rng, std::uint64_t width, std::uint64_t distinct, bool extremes) {
    static constexpr int kExtremes[10] = {INT_MIN, INT_MIN + 1, -1000, -1, 0, 1, 77, INT_MAX - 1, INT_MAX, 3};
    std::vector<std::vector<int>> run(K);
    for (std::vector<int>& r : run) {
        r.resize(rng.below(4) == 0 ? width : rng.below(width + 1));
        for (int& x : r) {
            const std::uint64_t k = rng.below(distinct);
            x = extremes ? kExtremes[k % 10] : static_cast<int>(k);
        }
        std::sort(r.begin(), r.end());
    }
    return run;
}

template <int K, class I>
tuned::Runs<K, int, I> runsOf(const std::vector<std::vector<int>>& run) {
    tuned::Runs<K, int, I> runs;
    for (int j = 0; j < K; ++j) {
        runs.run[j] = run[j].data();
        runs.len[j] = static_cast<I>(run[j].size());
    }
    return runs;
}

// The k-way split on the host against a brute-force stable merge of K runs:
// every rank of random runs with many equal keys, keys at int's ends (odd
// cases), and empty runs; indices of type I.
template <int K, class I>
void checkSplits(std::uint64_t seed, int cases) {
    Rng rng(seed);
    for (int c = 0; c < cases; ++c) {
        const std::uint64_t width = 1 + rng.below(40), distinct = 1 + rng.below(10);
        const std::vector<std::vector<int>> run = randomRuns<K>(rng, width, distinct, c % 2);
        const tuned::Runs<K, int, I> runs = runsOf<K, I>(run);
        std::vector<std::array<int, 3>> all;  // (key, run, index): the stable merge's order
        for (int j = 0; j < K; ++j)
            for (int p = 0; p < static_cast<int>(run[j].size()); ++p) all.push_back({run[j][p], j, p});
        std::sort(all.begin(), all.end());
        std::array<long long, K> expected{};
        for (std::size_t rank = 0; rank <= all.size(); ++rank) {
            long long split[K];
            tuned::kwaySplit(runs, static_cast<I>(rank), split);
            for (int j = 0; j < K; ++j)
                if (split[j] != expected[j])
                    FAIL("K=" << K << " (" << sizeof(I) * 8 << "-bit indices) case " << c << " rank " << rank
                              << " seed=" << seed << ": run " << j << " gives " << split[j] << ", expected "
                              << expected[j]);
            if (rank < all.size()) ++expected[all[rank][1]];
        }
    }
    SUCCEED();
}

}  // namespace

TEST_CASE("Tuned k-way split equals a brute-force stable merge's at every rank", "[tuned][part3]") {
    const int cases = test::quick() ? 300 : 3000;
    checkSplits<4, long long>(caseSeed(test::seed(), 4, 40), cases);
    checkSplits<4, int>(caseSeed(test::seed(), 4, 41), cases);
    checkSplits<2, long long>(caseSeed(test::seed(), 2, 40), cases);
    checkSplits<8, int>(caseSeed(test::seed(), 8, 40), cases / 4);
}

// The split as the device computes it (nvcc's code for kwayPartition_k, with
// 32- and 64-bit indices) against the host's, checked above, at every rank:
// runs of up to 40 values as above, and runs of thousands with few distinct
// keys (more levels).
TEST_CASE("Tuned k-way split on the device equals the host's at every rank", "[tuned][part3][gpu]") {
    LAB_NEEDS_GPU();
    static constexpr int K = 4;
    const std::uint64_t seed = caseSeed(test::seed(), 4, 42);
    Rng rng(seed);
    const int cases = test::sanitized() ? 20 : test::quick() ? 60 : 200;
    for (int c = 0; c < cases; ++c) {
        const std::uint64_t width = c % 10 == 9 ? 1 + rng.below(5000) : 1 + rng.below(40);
        const std::uint64_t distinct = 1 + rng.below(c % 3 == 0 ? 6 : 1000);
        const std::vector<std::vector<int>> run = randomRuns<K>(rng, width, distinct, c % 2);
        const tuned::Runs<K, int, long long> runs = runsOf<K, long long>(run);
        const long long total = runs.len[0] + runs.len[1] + runs.len[2] + runs.len[3];
        const bool narrow = c / 2 % 2 == 0;  // either index type with both kinds of keys (c % 2)
        const std::vector<long long> device =
            narrow ? tuned::kwaySplitsOnDevice<int>(run) : tuned::kwaySplitsOnDevice<long long>(run);
        REQUIRE(device.size() == static_cast<std::size_t>((total + 1) * K));
        for (long long rank = 0; rank <= total; ++rank) {
            long long split[K];
            tuned::kwaySplit(runs, rank, split);
            for (int j = 0; j < K; ++j)
                if (device[rank * K + j] != split[j])
                    FAIL("case " << c << " (" << (narrow ? 32 : 64) << "-bit indices) rank " << rank << " seed="
                                 << seed << ": run " << j << " gives " << device[rank * K + j] << " on the device, "
                                 << split[j] << " on the host");
        }
    }
    SUCCEED();
}

TEST_CASE("Tuned mergeSort refuses a negative size and a null pointer", "[tuned][part3]") {
    int x = 0;
    CHECK_THROWS_AS(tuned::mergeSort<int>(&x, -1), Error);
    CHECK_THROWS_AS(tuned::mergeSort<int>(nullptr, 5), Error);
    CHECK_THROWS_AS(tuned::mergeSort<Tagged>(nullptr, 2), Error);
    CHECK_NOTHROW(tuned::mergeSort<int>(nullptr, 0));
}

TEST_CASE("Tuned mergeSort sorts a fixed example stably", "[tuned][part3][gpu]") {
    LAB_NEEDS_GPU();
    const std::vector<int> keys = {5, 3, 9, 3, 1, 7, 5, 5, 0, 9, 2, 3, -4, 8, 3, 5, 1};
    REQUIRE_OK(tunedSortCase(keys, "fixed example (ints)"));
    REQUIRE_OK(tunedSortCase(tagKeys(keys, 0), "fixed example (tagged)"));
}

TEST_CASE("Tuned mergeSort sorts sizes around its tiles and 1 to 5 runs of every pass", "[tuned][part3][gpu]") {
    LAB_NEEDS_GPU();
    for (long long n : tunedEdgeSizes<int>()) {
        const std::uint64_t s = caseSeed(test::seed(), n, 70);
        REQUIRE_OK(tunedSortCase(randomKeys(n, s), test::context(s, sized(n, "random"))));
    }
    for (long long n : tunedEdgeSizes<Tagged>()) {  // few distinct keys: stability at every pass
        const std::uint64_t s = caseSeed(test::seed(), n, 71);
        REQUIRE_OK(tunedSortCase(tagKeys(makeKeys(InputKind::FewDistinct, n, s), 0),
                                 test::context(s, sized(n, "few-distinct, tagged"))));
    }
}

TEST_CASE("Tuned mergeSort sorts primes and powers of two", "[tuned][part3][gpu]") {
    LAB_NEEDS_GPU();
    std::vector<long long> sizes = {7, 4093, 10007, 65521, 1 << 12, 1 << 16, (1 << 16) + 1};
    if (!test::sanitized()) sizes.insert(sizes.end(), {131071, 1 << 18});
    if (!test::quick()) sizes.insert(sizes.end(), {1 << 20, 3000017, 1 << 22});
    for (long long n : sizes) {
        const std::uint64_t s = caseSeed(test::seed(), n, 72);
        REQUIRE_OK(tunedSortCase(randomKeys(n, s), test::context(s, sized(n, "random"))));
    }
}

TEST_CASE("Tuned mergeSort is stable and sorts every input kind", "[tuned][part3][gpu]") {
    LAB_NEEDS_GPU();
    const std::vector<long long> sizes = test::sanitized() ? std::vector<long long>{4099, 77777}
                                       : test::quick()     ? std::vector<long long>{4099, 77777, 150001}
                                                           : std::vector<long long>{4099, 77777, 600011, 2500000};
    for (InputKind kind : allInputKinds())
        for (long long n : sizes) {
            const std::uint64_t s = caseSeed(test::seed(), n, 80 + int(kind));
            const std::vector<int> keys = makeKeys(kind, n, s);
            REQUIRE_OK(tunedSortCase(tagKeys(keys, 0), test::context(s, sized(n, std::string(inputKindName(kind)) + ", tagged"))));
            REQUIRE_OK(tunedSortCase(keys, test::context(s, sized(n, inputKindName(kind)))));
        }
}

TEST_CASE("Tuned mergeSort sorts past 2^31 keys", "[tuned][part3][gpu][large][.]") {
    if (!test::large::canRun(test::kLargeSortBytes)) return;
    REQUIRE_OK(test::largeSortCase(caseSeed(test::seed(), 31, 7), tunedSortRules(test::large::kPast31),
                                   [](int* d, long long n) { tuned::mergeSort(d, n); }));
}
