// Graders for Part 2: Q3 (batch merge) and Q4 (batch sort of small arrays).
// Points: tests/course.ini. Run one question: ./build/<impl>/test_part2 "[Q3]"
#include "batch_cases.hpp"
#include "lab_test.hpp"
#include "large_tier.hpp"

#include "../common/inputs.hpp"
#include "../part2_batch/part2.cuh"

#include <string>
#include <utility>

using namespace lab;

namespace {

using test::Batch;
using test::expectedMerges;
using test::expectedSorts;
using test::keysOf;
using test::makeBatch;

// A batch launcher runs its one kernel with the threads per block asked for.
std::vector<test::KernelRule> batchRules(const char* kernel, int d, long long N, int tpb) {
    return {{kernel, batchThreadsPerBlock(d, tpb), 0, N > 0}};
}

template <class T>
Check mergeBatchCase(const std::vector<T>& in, const std::vector<int>& split, int d, long long N, int tpb,
                     const std::string& ctx) {
    return test::runMergeCase(
        in, split, in.size(), [&] { return expectedMerges(in, split, d); },
        [&](const T* dIn, const int* dSplit, T* dOut) { mergeSmallBatch(dIn, dSplit, dOut, d, N, tpb); }, ctx,
        batchRules("mergeSmallBatch_k", d, N, tpb), "split", Segments{static_cast<std::size_t>(d), "pair"});
}

template <class T>
Check sortBatchCase(const std::vector<T>& in, int d, long long N, int tpb, const std::string& ctx) {
    const std::vector<int> none;
    return test::runMergeCase(
        in, none, in.size(), [&] { return expectedSorts(in, d); },
        [&](const T* dIn, const int*, T* dOut) { sortSmall(dIn, dOut, d, N, tpb); }, ctx,
        batchRules("sortSmall_k", d, N, tpb), "(none)", Segments{static_cast<std::size_t>(d), "segment"});
}

std::string shape(int d, long long N, int tpb, const char* kind) {
    return "d=" + std::to_string(d) + " N=" + std::to_string(N) + " threadsPerBlock=" +
           (tpb ? std::to_string(tpb) : "default") + " " + kind;
}

// N at the edges of a block: one pair, a block minus one, a block plus one, several blocks.
std::vector<long long> batchCounts(int d) {
    const long long perBlock = batchThreadsPerBlock(d) / d;
    std::vector<long long> counts = {1, perBlock + 1, 3 * perBlock + 2};
    if (perBlock > 1 && !test::sanitized()) counts.push_back(perBlock - 1);
    return counts;
}

std::vector<int> batchSizes() {
    std::vector<int> sizes = test::sizesUpTo(kMaxBatchD);
    sizes.erase(sizes.begin());  // d = 0 is refused, tested separately
    return sizes;
}

}  // namespace

// ---------------------------------------------------------------- shape (both questions)

TEST_CASE("Batch launchers refuse bad d and N and threads per block", "[part2][Q3][Q4]") {
    CHECK(batchThreadsPerBlock(1) == 256);
    CHECK(batchThreadsPerBlock(3) == 255);
    CHECK(batchThreadsPerBlock(256) == 256);
    CHECK(batchThreadsPerBlock(300) == 300);
    CHECK(batchThreadsPerBlock(1000) == 1000);
    CHECK(batchThreadsPerBlock(8, 24) == 24);
    for (int d : {0, -1, 1025}) CHECK_THROWS_AS(batchThreadsPerBlock(d), Error);
    for (int tpb : {-8, 12, 1032, 2048}) CHECK_THROWS_AS(batchThreadsPerBlock(8, tpb), Error);
    Tagged t{};
    int i = 0;
    CHECK_THROWS_AS(mergeSmallBatch(&t, &i, &t, 0, 1), Error);
    CHECK_THROWS_AS(mergeSmallBatch(&t, &i, &t, 1025, 1), Error);
    CHECK_THROWS_AS(mergeSmallBatch(&t, &i, &t, 8, -1), Error);
    CHECK_THROWS_AS(mergeSmallBatch(&t, &i, &t, 8, 10, 20), Error);
    CHECK_THROWS_AS(sortSmall(&t, &t, 0, 1), Error);
    CHECK_THROWS_AS(sortSmall(&t, &t, 2000, 1), Error);
    CHECK_THROWS_AS(sortSmall(&t, &t, 8, -5), Error);
    CHECK_THROWS_AS(sortSmall(&t, &t, 8, 10, 1030), Error);
}

// ---------------------------------------------------------------- Q3

TEST_CASE("mergeSmallBatch merges every d from 1 to 1024 with N around a block's worth", "[part2][Q3][gpu]") {
    LAB_NEEDS_GPU();
    for (int d : batchSizes()) {
        for (long long N : batchCounts(d)) {
            if (test::sanitized() && N == 1 && d > 3) continue;
            const std::uint64_t s = caseSeed(test::seed(), d, N);
            const Batch b = makeBatch(InputKind::Random, d, N, s, true);
            REQUIRE_OK(mergeBatchCase(keysOf(b.values), b.split, d, N, 0, test::context(s, shape(d, N, 0, "random"))));
        }
    }
}

TEST_CASE("mergeSmallBatch keeps equal keys in order with A's first for every input kind", "[part2][Q3][gpu]") {
    LAB_NEEDS_GPU();
    for (InputKind kind : allInputKinds()) {
        for (int d : {1, 2, 5, 8, 33, 128, 257, 640, 1023, 1024}) {
            const long long N = batchCounts(d)[2];
            const std::uint64_t s = caseSeed(test::seed(), d, 100 + int(kind));
            const Batch b = makeBatch(kind, d, N, s, true);
            REQUIRE_OK(mergeBatchCase(b.values, b.split, d, N, 0, test::context(s, shape(d, N, 0, inputKindName(kind)))));
        }
    }
}

TEST_CASE("mergeSmallBatch works with any threads per block that is a multiple of d", "[part2][Q3][gpu]") {
    LAB_NEEDS_GPU();
    for (auto [d, tpb] : {std::pair{8, 8}, {8, 16}, {8, 24}, {8, 1000}, {3, 3}, {3, 30}, {100, 300}, {511, 511},
                          {1, 1}, {1, 37}}) {
        const long long N = 1000 / d + 7;
        const std::uint64_t s = caseSeed(test::seed(), d, tpb);
        const Batch b = makeBatch(InputKind::FewDistinct, d, N, s, true);
        REQUIRE_OK(mergeBatchCase(b.values, b.split, d, N, tpb, test::context(s, shape(d, N, tpb, "few-distinct"))));
    }
}

TEST_CASE("mergeSmallBatch merges a large batch", "[part2][Q3][gpu]") {
    LAB_NEEDS_GPU();
    for (int d : {4, 96, 1024}) {
        const long long N = (test::sanitized() ? 1 << 14 : test::quick() ? 1 << 16 : 1 << 22) / d + 1;
        const std::uint64_t s = caseSeed(test::seed(), d, 7);
        const Batch b = makeBatch(InputKind::Random, d, N, s, true);
        REQUIRE_OK(mergeBatchCase(keysOf(b.values), b.split, d, N, 0, test::context(s, shape(d, N, 0, "random"))));
    }
}

TEST_CASE("mergeSmallBatch writes nothing when N is 0", "[part2][Q3][gpu]") {
    LAB_NEEDS_GPU();
    REQUIRE_OK(mergeBatchCase(std::vector<int>{}, std::vector<int>{}, 16, 0, 0, "d=16 N=0"));
}

// ---------------------------------------------------------------- Q4

TEST_CASE("sortSmall sorts every d from 1 to 1024 with N around a block's worth", "[part2][Q4][gpu]") {
    LAB_NEEDS_GPU();
    for (int d : batchSizes()) {
        for (long long N : batchCounts(d)) {
            if (test::sanitized() && N == 1 && d > 3) continue;
            const std::uint64_t s = caseSeed(test::seed(), d, N + 5);
            const Batch b = makeBatch(InputKind::Random, d, N, s, false);
            REQUIRE_OK(sortBatchCase(keysOf(b.values), d, N, 0, test::context(s, shape(d, N, 0, "random"))));
        }
    }
}

TEST_CASE("sortSmall is stable and sorts every input kind", "[part2][Q4][gpu]") {
    LAB_NEEDS_GPU();
    const std::vector<int> ds = test::sanitized() ? std::vector<int>{1, 31, 1000}
                                                  : std::vector<int>{1, 2, 3, 6, 8, 31, 100, 256, 600, 1000, 1024};
    for (InputKind kind : allInputKinds()) {
        for (int d : ds) {
            const long long N = batchCounts(d)[2];
            const std::uint64_t s = caseSeed(test::seed(), d, 200 + int(kind));
            const Batch b = makeBatch(kind, d, N, s, false);
            REQUIRE_OK(sortBatchCase(b.values, d, N, 0, test::context(s, shape(d, N, 0, inputKindName(kind)))));
        }
    }
}

TEST_CASE("sortSmall works with any threads per block that is a multiple of d", "[part2][Q4][gpu]") {
    LAB_NEEDS_GPU();
    for (auto [d, tpb] : {std::pair{8, 8}, {8, 24}, {8, 1000}, {6, 18}, {100, 900}, {1, 5}}) {
        const long long N = 1000 / d + 5;
        const std::uint64_t s = caseSeed(test::seed(), d, tpb + 1);
        const Batch b = makeBatch(InputKind::FewDistinct, d, N, s, false);
        REQUIRE_OK(sortBatchCase(b.values, d, N, tpb, test::context(s, shape(d, N, tpb, "few-distinct"))));
    }
}

TEST_CASE("sortSmall sorts a large batch", "[part2][Q4][gpu]") {
    LAB_NEEDS_GPU();
    for (int d : {4, 100, 1024}) {
        const long long N = (test::sanitized() ? 1 << 14 : test::quick() ? 1 << 16 : 1 << 22) / d + 3;
        const std::uint64_t s = caseSeed(test::seed(), d, 9);
        const Batch b = makeBatch(InputKind::Random, d, N, s, false);
        REQUIRE_OK(sortBatchCase(keysOf(b.values), d, N, 0, test::context(s, shape(d, N, 0, "random"))));
    }
}

TEST_CASE("sortSmall writes nothing when N is 0", "[part2][Q4][gpu]") {
    LAB_NEEDS_GPU();
    REQUIRE_OK(sortBatchCase(std::vector<int>{}, 16, 0, 0, "d=16 N=0"));
}

TEST_CASE("mergeSmallBatch merges past 2^31 values", "[part2][Q3][gpu][large][.]") {
    const int d = 1024;
    const long long N = test::large::kPast31 / d + 1;
    if (!test::large::canRun(2.0 * N * d * sizeof(int))) return;
    REQUIRE_OK(test::largeBatchCase(d, N, true, caseSeed(test::seed(), 31, 3), batchRules("mergeSmallBatch_k", d, N, 0),
                                    [&](const int* in, const int* split, int* out) { mergeSmallBatch(in, split, out, d, N); }));
}

TEST_CASE("sortSmall sorts past 2^31 values", "[part2][Q4][gpu][large][.]") {
    const int d = 1000;
    const long long N = test::large::kPast31 / d + 1;
    if (!test::large::canRun(2.0 * N * d * sizeof(int))) return;
    REQUIRE_OK(test::largeBatchCase(d, N, false, caseSeed(test::seed(), 31, 4), batchRules("sortSmall_k", d, N, 0),
                                    [&](const int* in, const int*, int* out) { sortSmall(in, out, d, N); }));
}
