// Graders for the extras (bonus): X1 odd-even transposition sort in one block,
// X2 on many blocks, X3 bitonic sort in one block, X4 on many blocks.
// Points: tests/course.ini. Run one question: ./build/<impl>/test_extras "[X1]"
//
// Odd-even transposition is stable: its output must equal std::stable_sort,
// tag for tag. Bitonic sort is not: its output must be sorted by key and a
// permutation of the input (tags included), in any order among equal keys.
#include "lab_test.hpp"
#include "large_tier.hpp"

#include "../common/inputs.hpp"
#include "../extras_oddeven_bitonic/extras.cuh"

#include <algorithm>
#include <string>

using namespace lab;

namespace {

constexpr long long kTile = kMaxBlockSort;

// The kernels the handout names, per question.
std::vector<test::KernelRule> rules(const std::string& question, long long n) {
    if (question == "X1") return {{"oddEvenBlock_k", 0, 1, n > 1}};
    if (question == "X2") return {{"oddEvenPhase_k", 0, 0, n > 1}};
    if (question == "X3") return {{"bitonicBlock_k", 0, 1, n > 1}};
    const long long tiles = (n + kTile - 1) / kTile;
    return {{"bitonicTiles_k", 0, tiles, n > 1},
            {"bitonicGlobalStep_k", 0, 0, n > kTile},
            {"bitonicSharedSteps_k", 0, tiles, n > kTile}};
}

// Sorts `in` in place on the device with `sort(dData, n)` under the trace and
// checks it: equal to std::stable_sort when `stable`, else sorted and a
// permutation of the input. An unstable sort's output is recorded twice for
// the harness: its keys in order, and the values sorted by key and tag (equal
// for every correct sort of the same input).
template <class T, class Sort>
Check sortCase(const std::vector<T>& in, Sort sort, bool stable, const std::string& question, const std::string& ctx) {
    DeviceBuffer<T> d(in.size());
    d.upload(in);
    const long long n = static_cast<long long>(in.size());
    if (Check c = test::tracedCall([&] { sort(d.data(), n); }, rules(question, n), ctx); !c) return c;
    const auto expected = [&] {
        std::vector<T> sorted = in;
        std::stable_sort(sorted.begin(), sorted.end());
        return sorted;
    };
    if (stable) return test::checkRecordedOutput(d, expected, ctx);
    const std::vector<T> got = d.download();
    test::record("output keys [" + ctx + "]", test::keysOf(got));
    std::vector<T> canonical = got;
    std::sort(canonical.begin(), canonical.end(), [](const T& x, const T& y) { return identityLess(x, y); });
    test::record("output sorted by key and tag [" + ctx + "]", canonical);
    test::record("guards of the output intact", static_cast<std::uint64_t>(d.guards().ok));
    if (!d.guards()) return failCheck(d.guards().message + " [" + ctx + "]");
    if (Check c = checkSorted(got, ctx); !c) return c;
    return checkPermutation(got, in, ctx);
}

// Keys with many repeats, tagged with their input position.
std::vector<Tagged> taggedKeys(InputKind kind, long long n, std::uint64_t seed) {
    return tagKeys(makeKeys(kind, static_cast<std::size_t>(n), seed), 0);
}

const auto oddEvenBlockT = [](Tagged* d, long long n) { oddEvenSortBlock(d, static_cast<int>(n)); };
const auto oddEvenT = [](Tagged* d, long long n) { oddEvenSort(d, n); };
const auto bitonicBlockT = [](Tagged* d, long long n) { bitonicSortBlock(d, static_cast<int>(n)); };
const auto bitonicT = [](Tagged* d, long long n) { bitonicSort(d, n); };
const auto oddEvenBlockI = [](int* d, long long n) { oddEvenSortBlock(d, static_cast<int>(n)); };
const auto oddEvenI = [](int* d, long long n) { oddEvenSort(d, n); };
const auto bitonicBlockI = [](int* d, long long n) { bitonicSortBlock(d, static_cast<int>(n)); };
const auto bitonicI = [](int* d, long long n) { bitonicSort(d, n); };

std::string sizeKind(long long n, InputKind kind) { return "n=" + std::to_string(n) + " " + inputKindName(kind); }

// Every size up to one block's limit (in quick mode the edges and two odd
// sizes between: under compute-sanitizer a 2048-value odd-even sort is
// thousands of barriers), few distinct tagged keys, so that equal keys meet
// everywhere.
template <class Sort>
void everyBlockSize(Sort sort, bool stable, const std::string& question) {
    std::vector<int> sizes = test::quick() ? std::vector<int>{0, 1, 2, 3, 31, 32, 33, 257, 1025, 2048}
                                           : test::sizesUpTo(kMaxBlockSort);
    if (test::sanitized()) {  // X1: 2048 barriers of 1024 threads each at 2048
        sizes = {0, 1, 3, 33, 257, 1025};
        if (question != "X1") sizes.push_back(2048);
    }
    for (int n : sizes) {
        const std::uint64_t s = caseSeed(test::seed(), n);
        REQUIRE_OK(sortCase(taggedKeys(InputKind::FewDistinct, n, s), sort, stable, question,
                            test::context(s, sizeKind(n, InputKind::FewDistinct))));
    }
}

template <class SortT, class SortI>
void everyKind(SortT sortT, SortI sortI, bool stable, const std::string& question, std::vector<long long> sizes) {
    for (long long n : sizes)
        for (InputKind kind : allInputKinds()) {
            const std::uint64_t s = caseSeed(test::seed(), n, static_cast<int>(kind));
            const std::string ctx = test::context(s, sizeKind(n, kind));
            REQUIRE_OK(sortCase(taggedKeys(kind, n, s), sortT, stable, question, ctx));
            if (test::sanitized() && kind != InputKind::Random) continue;  // the same launches again
            REQUIRE_OK(sortCase(makeKeys(kind, static_cast<std::size_t>(n), s), sortI, stable, question, ctx));
        }
}

// Sizes for the many-block sorts; `slow` (odd-even: n launches) stops early.
// Quick mode keeps small sizes and the tile edges, and only one tile edge for
// the slow sort; under compute-sanitizer the slow sort stays within a tile
// (each of its n launches costs the sanitizer milliseconds). Emulated, the
// fast sort also runs the first size past 2^16 of the full list (those past
// 2^20 would take minutes there), so that one of its graded sizes runs.
std::vector<long long> manyBlockSizes(bool slow) {
    if (test::sanitized() && slow) return {0, 1, 2, 3, 7, 257};
    if (test::quick()) {
        if (slow) return {0, 1, 2, 3, 7, kTile + 1};
        if (kEmulated) return {0, 1, 2, 3, 7, kTile + 1, 2 * kTile + 1, 65537};
        return {0, 1, 2, 3, 7, kTile + 1, 2 * kTile + 1};
    }
    std::vector<long long> n = {0, 1, 2, 3, 7, kTile - 1, kTile, kTile + 1, 2 * kTile - 1, 2 * kTile + 1,
                                3 * kTile + 5, 4099, 10007};
    if (!slow) n.insert(n.end(), {65537, (1 << 20) + 3, 3000017});
    return n;
}

}  // namespace

// ---------------------------------------------------------------- X1

TEST_CASE("oddEvenSortBlock refuses sizes one block cannot sort", "[extras][X1]") {
    int x = 0;
    CHECK_THROWS_AS(oddEvenSortBlock<int>(&x, -1), Error);
    CHECK_THROWS_AS(oddEvenSortBlock<int>(&x, kMaxBlockSort + 1), Error);
    CHECK_THROWS_AS(oddEvenSortBlock<int>(nullptr, 5), Error);
}

TEST_CASE("oddEvenSortBlock sorts every size up to one block's limit stably", "[extras][X1][gpu]") {
    LAB_NEEDS_GPU();
    everyBlockSize(oddEvenBlockT, true, "X1");
}

TEST_CASE("oddEvenSortBlock handles every input kind", "[extras][X1][gpu]") {
    LAB_NEEDS_GPU();
    // A sort of 2047 values is 2047 barriers: under compute-sanitizer (quick
    // mode) every kind is sorted at a smaller size of several warps instead.
    everyKind(oddEvenBlockT, oddEvenBlockI, true, "X1",
              test::quick() ? std::vector<long long>{257} : std::vector<long long>{kMaxBlockSort, kMaxBlockSort - 1, 1000, 33});
}

// ---------------------------------------------------------------- X2

TEST_CASE("oddEvenSort refuses a negative size", "[extras][X2]") {
    int x = 0;
    CHECK_THROWS_AS(oddEvenSort<int>(&x, -1), Error);
    CHECK_THROWS_AS(oddEvenSort<int>(nullptr, 3), Error);
}

TEST_CASE("oddEvenSort sorts sizes around one block and beyond stably", "[extras][X2][gpu]") {
    LAB_NEEDS_GPU();
    for (long long n : manyBlockSizes(true)) {
        const std::uint64_t s = caseSeed(test::seed(), n);
        REQUIRE_OK(sortCase(taggedKeys(InputKind::FewDistinct, n, s), oddEvenT, true, "X2",
                            test::context(s, sizeKind(n, InputKind::FewDistinct))));
    }
}

TEST_CASE("oddEvenSort handles every input kind", "[extras][X2][gpu]") {
    LAB_NEEDS_GPU();
    // n launches per sort: smaller in quick mode, smaller still under compute-sanitizer.
    everyKind(oddEvenT, oddEvenI, true, "X2",
              test::sanitized() ? std::vector<long long>{65}
              : test::quick()   ? std::vector<long long>{129}
                                : std::vector<long long>{3001, 2 * kTile + 1});
}

// ---------------------------------------------------------------- X3

TEST_CASE("bitonicSortBlock refuses sizes one block cannot sort", "[extras][X3]") {
    int x = 0;
    CHECK_THROWS_AS(bitonicSortBlock<int>(&x, -1), Error);
    CHECK_THROWS_AS(bitonicSortBlock<int>(&x, kMaxBlockSort + 1), Error);
    CHECK_THROWS_AS(bitonicSortBlock<int>(nullptr, 5), Error);
}

TEST_CASE("bitonicSortBlock sorts every size up to one block's limit whether a power of two or not", "[extras][X3][gpu]") {
    LAB_NEEDS_GPU();
    everyBlockSize(bitonicBlockT, false, "X3");
}

TEST_CASE("bitonicSortBlock handles every input kind", "[extras][X3][gpu]") {
    LAB_NEEDS_GPU();
    everyKind(bitonicBlockT, bitonicBlockI, false, "X3",
              test::quick() ? std::vector<long long>{kMaxBlockSort - 1} : std::vector<long long>{kMaxBlockSort, kMaxBlockSort - 1, 1000, 33});
}

// ---------------------------------------------------------------- X4

TEST_CASE("bitonicSort refuses a negative size", "[extras][X4]") {
    int x = 0;
    CHECK_THROWS_AS(bitonicSort<int>(&x, -1), Error);
    CHECK_THROWS_AS(bitonicSort<int>(nullptr, 3), Error);
}

TEST_CASE("bitonicSort sorts sizes around tiles and primes and powers of two", "[extras][X4][gpu]") {
    LAB_NEEDS_GPU();
    for (long long n : manyBlockSizes(false)) {
        const std::uint64_t s = caseSeed(test::seed(), n);
        REQUIRE_OK(sortCase(taggedKeys(InputKind::FewDistinct, n, s), bitonicT, false, "X4",
                            test::context(s, sizeKind(n, InputKind::FewDistinct))));
        if (test::sanitized() && n < kTile) continue;  // the same launches again
        REQUIRE_OK(sortCase(randomKeys(static_cast<std::size_t>(n), s + 1), bitonicI, false, "X4",
                            test::context(s + 1, sizeKind(n, InputKind::Random))));
    }
}

#ifdef LAB_EMULATED
// The case below on the emulator, without its memory (emu::SparseRun): the
// keys are mapped, never filled (they read as zero), and each launch runs only
// its first, middle and last blocks. What it checks is that no access leaves
// the array: an index kept in 32 bits lands 2^32 elements before it, and the
// emulator names the line.
TEST_CASE("bitonicSort keeps its indices past 2^31 on a few emulated blocks", "[extras][X4][emulated]") {
    const long long n = test::large::kPast31;
    const emu::SparseRun sparse;
    int* data = nullptr;
    if (cudaMalloc(reinterpret_cast<void**>(&data), static_cast<std::size_t>(n) * sizeof(int)) != cudaSuccess) {
        test::skip("this machine would not map the keys' 8 GB of address space");
        return;
    }
    const std::string ctx = "n=" + std::to_string(n) + ", emulated: each launch's first, middle and last blocks alone";
    const Check c = test::tracedCall([&] { bitonicSort(data, n); }, rules("X4", n), ctx);
    cudaFree(data);  // after a fault it frees and returns its error: c says why
    REQUIRE_OK(c);
}
#endif

// X2 has no such case: its launcher runs n phases, 2^31 launches past 2^31.
TEST_CASE("bitonicSort sorts past 2^31 keys", "[extras][X4][gpu][large][.]") {
    const long long n = test::large::kPast31;
    if (!test::large::canRun(double(n) * sizeof(int))) return;  // in place: the keys alone
    test::large::Array data(n);
    const std::uint64_t s = caseSeed(test::seed(), 31, 4);
    test::large::fillRandom(data, s);
    const std::uint64_t hashIn = test::large::segmentHash(data, n);
    const std::string ctx = test::context(s, "n=" + std::to_string(n) + " random");
    REQUIRE_OK(test::tracedCall([&] { bitonicSort(data.data(), n); }, rules("X4", n), ctx));
    REQUIRE_OK(test::large::checkOutput(data, n, hashIn, ctx));
}

TEST_CASE("bitonicSort handles every input kind", "[extras][X4][gpu]") {
    LAB_NEEDS_GPU();
    everyKind(bitonicT, bitonicI, false, "X4",
              test::sanitized() ? std::vector<long long>{kTile + 1}
              : test::quick()   ? std::vector<long long>{2 * kTile + 1}
                                : std::vector<long long>{10007, 4 * kTile, 2 * kTile + 1});
}
