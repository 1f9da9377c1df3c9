// Tests of the tuned Part 2 kernels (part2_batch/reference_tuned.cu), which
// set the bar of the Part 2 study. Instructor-only, like the kernels; no points.
// Run: ./build/<impl>/test_tuned
#include "batch_cases.hpp"
#include "lab_test.hpp"
#include "large_tier.hpp"

#include "../part2_batch/part2.cuh"
#include "../part2_batch/reference_tuned.cuh"

#include <string>

using namespace lab;
using test::Batch;
using test::keysOf;
using test::makeBatch;

namespace {

template <class T>
Check tunedMergeCase(const Batch& b, const std::vector<T>& in, int d, long long N, const std::string& ctx) {
    return test::runMergeCase(
        in, b.split, in.size(), [&] { return test::expectedMerges(in, b.split, d); },
        [&](const T* dIn, const int* dSplit, T* dOut) { tuned::mergeSmallBatch(dIn, dSplit, dOut, d, N); }, ctx,
        {{"mergeBatchTuned_k", 0, 0, N > 0}}, "split", Segments{static_cast<std::size_t>(d), "pair"});
}

template <class T>
Check tunedSortCase(const std::vector<T>& in, int d, long long N, const std::string& ctx) {
    return test::runMergeCase(
        in, std::vector<int>{}, in.size(), [&] { return test::expectedSorts(in, d); },
        [&](const T* dIn, const int*, T* dOut) { tuned::sortSmall(dIn, dOut, d, N); }, ctx,
        {{"sortBatchTuned_k", 0, 0, N > 0}}, "(none)", Segments{static_cast<std::size_t>(d), "segment"});
}

std::string shape(int d, long long N, const char* kind) {
    return "d=" + std::to_string(d) + " N=" + std::to_string(N) + " " + kind;
}

// A block holds 256 / GT segments, a power of two from 4 to 256: these
// counts end blocks one short of and one past full for every shape.
const long long kCounts[] = {1, 3, 5, 15, 17, 255, 257};

// Every d from 1 to 1024 (the hidden [every-d] test), or where something
// changes (make test: quick mode's sample, and the shape edges below; under
// compute-sanitizer, sizesUpTo's thinner one).
std::vector<int> sizes(bool everyD) {
    std::vector<int> d;
    if (everyD)
        for (int n = 0; n <= kMaxBatchD; ++n) d.push_back(n);
    else
        d = test::sanitized() ? test::sizesUpTo(kMaxBatchD) : test::edgeSizesUpTo(kMaxBatchD);
    d.erase(d.begin());  // d = 0 is refused
    for (int edge : {3, 4, 5, 6, 9, 10, 17, 18, 34, 35, 68, 69, 136, 137, 272, 273, 544, 545})
        d.push_back(edge);  // the shape changes after each of 3, 5, 9, 17, 34, ... (withShape)
    return d;
}

// `check(d, N, case seed)` at each d and each N at the block edges (up to 2^20
// values); `salt` keeps the merge's and the sort's inputs apart.
template <class Check>
void forEachShape(bool everyD, long long salt, Check check) {
    for (int d : sizes(everyD))
        for (long long N : kCounts)
            if (N * d <= (1 << 20)) check(d, N, caseSeed(test::seed(), d, N + salt));
}

// Random input at each shape, merged.
void mergeShapes(bool everyD) {
    forEachShape(everyD, 0, [](int d, long long N, std::uint64_t s) {
        const Batch b = makeBatch(InputKind::Random, d, N, s, true);
        REQUIRE_OK(tunedMergeCase(b, keysOf(b.values), d, N, test::context(s, shape(d, N, "random"))));
    });
}

// Likewise, sorted.
void sortShapes(bool everyD) {
    forEachShape(everyD, 5, [](int d, long long N, std::uint64_t s) {
        const Batch b = makeBatch(InputKind::Random, d, N, s, false);
        REQUIRE_OK(tunedSortCase(keysOf(b.values), d, N, test::context(s, shape(d, N, "random"))));
    });
}

}  // namespace

TEST_CASE("Tuned batch launchers refuse bad d and N", "[tuned]") {
    Tagged t{};
    int i = 0;
    CHECK_THROWS_AS(tuned::mergeSmallBatch(&t, &i, &t, 0, 1), Error);
    CHECK_THROWS_AS(tuned::mergeSmallBatch(&t, &i, &t, 1025, 1), Error);
    CHECK_THROWS_AS(tuned::mergeSmallBatch(&t, &i, &t, 8, -1), Error);
    CHECK_THROWS_AS(tuned::mergeSmallBatch<Tagged>(nullptr, &i, &t, 8, 1), Error);
    CHECK_THROWS_AS(tuned::sortSmall(&t, &t, 0, 1), Error);
    CHECK_THROWS_AS(tuned::sortSmall(&t, &t, 2000, 1), Error);
    CHECK_THROWS_AS(tuned::sortSmall(&t, &t, 8, -5), Error);
    CHECK_THROWS_AS(tuned::sortSmall<Tagged>(&t, nullptr, 8, 1), Error);
}

TEST_CASE("Tuned batch merge: every shape, N at block edges, stable for every input kind", "[tuned][gpu]") {
    LAB_NEEDS_GPU();
    mergeShapes(false);
    for (InputKind kind : allInputKinds())
        for (int d : {1, 2, 5, 8, 17, 33, 100, 257, 640, 1024}) {
            const std::uint64_t s = caseSeed(test::seed(), d, 100 + int(kind));
            const Batch b = makeBatch(kind, d, 37, s, true);
            REQUIRE_OK(tunedMergeCase(b, b.values, d, 37, test::context(s, shape(d, 37, inputKindName(kind)))));
        }
}

TEST_CASE("Tuned batch sort: every shape, N at block edges, stable for every input kind", "[tuned][gpu]") {
    LAB_NEEDS_GPU();
    sortShapes(false);
    for (InputKind kind : allInputKinds())
        for (int d : {1, 2, 3, 6, 16, 31, 100, 256, 600, 1000, 1024}) {
            const std::uint64_t s = caseSeed(test::seed(), d, 200 + int(kind));
            const Batch b = makeBatch(kind, d, 37, s, false);
            REQUIRE_OK(tunedSortCase(b.values, d, 37, test::context(s, shape(d, 37, inputKindName(kind)))));
        }
}

TEST_CASE("Tuned batch merge and sort: a large batch, and N = 0", "[tuned][gpu]") {
    LAB_NEEDS_GPU();
    for (int d : {4, 100, 1024}) {
        const long long N = (test::quick() ? 1 << 16 : 1 << 22) / d + 3;
        const std::uint64_t s = caseSeed(test::seed(), d, 9);
        const Batch pairs = makeBatch(InputKind::Random, d, N, s, true);
        REQUIRE_OK(tunedMergeCase(pairs, keysOf(pairs.values), d, N, test::context(s, shape(d, N, "random"))));
        const Batch b = makeBatch(InputKind::Random, d, N, s, false);
        REQUIRE_OK(tunedSortCase(keysOf(b.values), d, N, test::context(s, shape(d, N, "random"))));
    }
    REQUIRE_OK(tunedMergeCase(Batch{}, std::vector<int>{}, 16, 0, "d=16 N=0"));
    REQUIRE_OK(tunedSortCase(std::vector<int>{}, 16, 0, "d=16 N=0"));
}

// Every d from 1 to 1024, not only where the shape or a power of two changes
// (about 13 times as long): ./build/test_tuned "[every-d]" after a change to
// the tuned kernels.
TEST_CASE("Tuned batch merge and sort: every d from 1 to 1024", "[tuned][gpu][every-d][.]") {
    LAB_NEEDS_GPU();
    mergeShapes(true);
    sortShapes(true);
}

TEST_CASE("Tuned batch merge past 2^31 values", "[tuned][gpu][large][.]") {
    const int d = 1024;
    const long long N = test::large::kPast31 / d + 1;
    if (!test::large::canRun(2.0 * N * d * sizeof(int))) return;
    REQUIRE_OK(test::largeBatchCase(d, N, true, caseSeed(test::seed(), 31, 3), {{"mergeBatchTuned_k", 0, 0, true}},
                                    [&](const int* in, const int* split, int* out) { tuned::mergeSmallBatch(in, split, out, d, N); }));
}

TEST_CASE("Tuned batch sort past 2^31 values", "[tuned][gpu][large][.]") {
    const int d = 1000;
    const long long N = test::large::kPast31 / d + 1;
    if (!test::large::canRun(2.0 * N * d * sizeof(int))) return;
    REQUIRE_OK(test::largeBatchCase(d, N, false, caseSeed(test::seed(), 31, 4), {{"sortBatchTuned_k", 0, 0, true}},
                                    [&](const int* in, const int*, int* out) { tuned::sortSmall(in, out, d, N); }));
}
