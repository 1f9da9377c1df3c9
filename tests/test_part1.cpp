// Graders for Part 1: Q1 (merge path in one block) and Q2 (many merges).
// Points: tests/course.ini. Run one question: ./build/<impl>/test_part1 "[Q1]"
#include "lab_test.hpp"
#include "large_tier.hpp"

#include "../common/inputs.hpp"
#include "../common/merge_path_host.hpp"
#include "../part1_merge_path/part1.cuh"

#include <algorithm>
#include <string>

using namespace lab;

namespace {

template <class T>
std::vector<T> stdMerge(const std::vector<T>& A, const std::vector<T>& B) {
    std::vector<T> M(A.size() + B.size());
    std::merge(A.begin(), A.end(), B.begin(), B.end(), M.begin());
    return M;
}

// What a Part 1 launcher may launch: mergeSmall_k alone, on one block per
// merge (required when there is output to write).
std::vector<test::KernelRule> mergeSmallRules(long long merges, int d) {
    return {{"mergeSmall_k", 0, merges, merges > 0 && d > 0}};
}

// Merges A and B with mergeSmall on the GPU and checks everything.
template <class T>
Check mergeSmallCase(const std::vector<T>& A, const std::vector<T>& B, const std::string& ctx) {
    const int nA = static_cast<int>(A.size()), nB = static_cast<int>(B.size());
    return test::runMergeCase(
        A, B, A.size() + B.size(), [&] { return stdMerge(A, B); },
        [&](const T* dA, const T* dB, T* dM) { mergeSmall(dA, nA, dB, nB, dM); }, ctx, mergeSmallRules(1, nA + nB));
}

// Sorted, tagged inputs: A's tags count from 0, B's from 1'000'000.
std::pair<std::vector<Tagged>, std::vector<Tagged>> taggedPair(InputKind kind, int nA, int nB,
                                                               std::uint64_t s) {
    return {tagKeys(sortedKeys(kind, nA, s), 0), tagKeys(sortedKeys(kind, nB, s ^ 1), 1000000)};
}

std::string sizes(int nA, int nB, const char* kind) {
    return "|A|=" + std::to_string(nA) + " |B|=" + std::to_string(nB) + " " + kind;
}

}  // namespace

// ---------------------------------------------------------------- Q1, host

TEST_CASE("The diagonal search finds where the path crosses every diagonal", "[part1][Q1]") {
    for (InputKind kind : {InputKind::Random, InputKind::FewDistinct, InputKind::AllEqual,
                           InputKind::Extremes}) {
        for (int nA : {0, 1, 2, 9, 33, 200}) {
            for (int nB : {0, 1, 3, 7, 64, 150}) {
                const std::uint64_t s = caseSeed(test::seed(), nA * 1000 + nB, int(kind));
                const auto [A, B] = taggedPair(kind, nA, nB, s);
                std::vector<int> keysA, keysB;
                for (auto t : A) keysA.push_back(t.key);
                for (auto t : B) keysB.push_back(t.key);
                // Every diagonal's answer, recorded; make test's builds also
                // compare it with the sequential path's steps down among the first k.
                std::vector<long long> found;
                for (int k = 0; k <= nA + nB; ++k)
                    found.insert(found.end(), {diagonalSearchOnHost(A.data(), nA, B.data(), nB, k),
                                               diagonalSearchOnHost(keysA.data(), nA, keysB.data(), nB, k),
                                               diagonalSearchOnHost(keysA.data(), (long long)nA, keysB.data(),
                                                                    (long long)nB, (long long)k)});
                const std::string ctx = test::context(s, sizes(nA, nB, inputKindName(kind)));
                test::record("the search's answers on every diagonal, three overloads each [" + ctx + "]", found);
                if constexpr (!test::kGraded) {
                    std::vector<Step> path;
                    mergePathSequential(A, B, &path);
                    long long fromA = 0;
                    for (int k = 0; k <= nA + nB; ++k) {
                        INFO(ctx + " diagonal k=" + std::to_string(k));
                        for (int overload = 0; overload < 3; ++overload) REQUIRE(found[3 * k + overload] == fromA);
                        if (k < nA + nB && path[k] == Step::Down) ++fromA;
                    }
                }
            }
        }
    }
}

TEST_CASE("mergeSmall refuses sizes one block cannot merge", "[part1][Q1]") {
    int dummy = 0;
    CHECK_THROWS_AS(mergeSmall<int>(&dummy, 1000, &dummy, 25, &dummy), Error);
    CHECK_THROWS_AS(mergeSmall<int>(&dummy, 1025, &dummy, 0, &dummy), Error);
    CHECK_THROWS_AS(mergeSmall<int>(&dummy, -1, &dummy, 3, &dummy), Error);
    CHECK_THROWS_AS(mergeSmall<int>(&dummy, 3, &dummy, -1, &dummy), Error);
    CHECK_THROWS_AS(mergeSmall<int>(&dummy, 2147483647, &dummy, 2, &dummy), Error);
    try {
        mergeSmall<int>(&dummy, 1000, &dummy, 25, &dummy);
    } catch (const Error& e) {
        CHECK(std::string(e.what()).find("1024") != std::string::npos);
    }
}

// ---------------------------------------------------------------- Q1, GPU

TEST_CASE("mergeSmall merges the handout's example", "[part1][Q1][gpu]") {
    LAB_NEEDS_GPU();
    const std::vector<int> A = {1, 2, 5, 6, 6, 9, 11, 15, 16};
    const std::vector<int> B = {4, 7, 8, 10, 12, 13, 14};
    const std::vector<int> M = {1, 2, 4, 5, 6, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    if constexpr (!test::kGraded) REQUIRE(stdMerge(A, B) == M);  // the handout's answer
    REQUIRE_OK(mergeSmallCase(A, B, "handout example"));
    REQUIRE_OK(mergeSmallCase(B, A, "handout example, A and B swapped"));
}

TEST_CASE("mergeSmall merges every size from 0 to 1024 at several splits", "[part1][Q1][gpu]") {
    LAB_NEEDS_GPU();
    for (int d : test::sizesUpTo(kMaxSmallMerge)) {
        const std::uint64_t s = caseSeed(test::seed(), d);
        Rng rng(s);
        // Empty A, empty B, one element on a side, half and half, a random split.
        for (int nA : {0, d, 1, d - 1, d / 2, static_cast<int>(rng.below(d + 1))}) {
            if (nA < 0 || nA > d || (test::sanitized() && (nA == 1 || nA == d - 1) && d > 3)) continue;
            const auto A = sortedKeys(InputKind::Random, nA, s + 1);
            const auto B = sortedKeys(InputKind::Random, d - nA, s + 2);
            REQUIRE_OK(mergeSmallCase(A, B, test::context(s, sizes(nA, d - nA, "random"))));
        }
    }
}

TEST_CASE("mergeSmall keeps equal keys in order with A's first", "[part1][Q1][gpu]") {
    LAB_NEEDS_GPU();
    for (InputKind kind : {InputKind::FewDistinct, InputKind::AllEqual, InputKind::Ascending}) {
        for (int d : test::sanitized() ? std::vector<int>{3, 17, 512, 1000}
                                       : std::vector<int>{2, 3, 16, 17, 100, 511, 512, 1000, 1024}) {
            for (int nA : {1, d / 3, d / 2, d - 1}) {
                const std::uint64_t s = caseSeed(test::seed(), d * 7 + nA, int(kind));
                const auto [A, B] = taggedPair(kind, nA, d - nA, s);
                REQUIRE_OK(mergeSmallCase(A, B, test::context(s, sizes(nA, d - nA, inputKindName(kind)))));
            }
        }
    }
}

TEST_CASE("mergeSmall handles INT_MIN and INT_MAX and lopsided sizes", "[part1][Q1][gpu]") {
    LAB_NEEDS_GPU();
    for (InputKind kind : allInputKinds()) {
        for (auto [nA, nB] : {std::pair{1, 1023}, {1023, 1}, {1000, 24}, {24, 1000}, {512, 512}, {7, 5}}) {
            const std::uint64_t s = caseSeed(test::seed(), nA, nB + 100 * int(kind));
            const auto [A, B] = taggedPair(kind, nA, nB, s);
            REQUIRE_OK(mergeSmallCase(A, B, test::context(s, sizes(nA, nB, inputKindName(kind)))));
        }
    }
}

// ---------------------------------------------------------------- Q2

namespace {

// `count` pairs of sizes nA, nB, merged on the GPU by mergeSmallMany.
template <class T>
Check mergeManyCase(const std::vector<T>& A, int nA, const std::vector<T>& B, int nB, long long count,
                    const std::string& ctx) {
    const auto expected = [&] {
        std::vector<T> all;
        for (long long p = 0; p < count; ++p) {
            const std::vector<T> a(A.begin() + p * nA, A.begin() + (p + 1) * nA);
            const std::vector<T> b(B.begin() + p * nB, B.begin() + (p + 1) * nB);
            const auto m = stdMerge(a, b);
            all.insert(all.end(), m.begin(), m.end());
        }
        return all;
    };
    return test::runMergeCase(
        A, B, A.size() + B.size(), expected,
        [&](const T* dA, const T* dB, T* dM) { mergeSmallMany(dA, nA, dB, nB, dM, count); }, ctx,
        mergeSmallRules(count, nA + nB), "B", Segments{static_cast<std::size_t>(nA + nB), "pair"});
}

// `count` sorted runs of n keys each, concatenated; tags number the whole array.
std::vector<Tagged> sortedRuns(InputKind kind, int n, long long count, std::uint64_t s, int firstTag) {
    std::vector<int> keys;
    for (long long p = 0; p < count; ++p) {
        const auto run = sortedKeys(kind, n, caseSeed(s, p));
        keys.insert(keys.end(), run.begin(), run.end());
    }
    return tagKeys(keys, firstTag);
}

}  // namespace

TEST_CASE("mergeSmallMany merges many pairs with one block each", "[part1][Q2][gpu]") {
    LAB_NEEDS_GPU();
    const std::vector<int> ds = test::sanitized()
                                    ? std::vector<int>{1, 3, 33, 257, 1000, 1024}
                                    : std::vector<int>{1, 2, 3, 7, 31, 32, 33, 100, 255, 256, 257, 511, 512, 513,
                                                       1000, 1023, 1024};
    for (int d : ds) {
        for (int nA : {0, d, d / 2, d / 3}) {
            for (long long count : {1LL, 2LL, 37LL, 1000LL}) {
                if ((test::quick() && count > 37) || (test::sanitized() && count == 2)) continue;
                const std::uint64_t s = caseSeed(test::seed(), d * 5 + nA, count);
                const auto A = sortedRuns(InputKind::Random, nA, count, s, 0);
                const auto B = sortedRuns(InputKind::Random, d - nA, count, s + 1, 1 << 29);
                REQUIRE_OK(mergeManyCase(A, nA, B, d - nA, count,
                                         test::context(s, sizes(nA, d - nA, "random") +
                                                              " merges=" + std::to_string(count))));
            }
        }
    }
}

TEST_CASE("mergeSmallMany is stable in every pair", "[part1][Q2][gpu]") {
    LAB_NEEDS_GPU();
    for (InputKind kind : {InputKind::FewDistinct, InputKind::AllEqual, InputKind::Extremes}) {
        for (auto [nA, nB] : {std::pair{5, 3}, {64, 64}, {300, 700}, {1, 1023}}) {
            const std::uint64_t s = caseSeed(test::seed(), nA, nB + 10 * int(kind));
            const auto A = sortedRuns(kind, nA, 300, s, 0);
            const auto B = sortedRuns(kind, nB, 300, s + 1, 1 << 29);
            REQUIRE_OK(mergeManyCase(A, nA, B, nB, 300,
                                     test::context(s, sizes(nA, nB, inputKindName(kind)) + " merges=300")));
        }
    }
}

TEST_CASE("mergeSmallMany merges 70001 pairs (more blocks than a grid's y dimension allows)", "[part1][Q2][gpu]") {
    LAB_NEEDS_GPU();
    const long long count = 70001;
    const std::uint64_t s = caseSeed(test::seed(), 70001);
    const auto A = sortedRuns(InputKind::FewDistinct, 3, count, s, 0);
    const auto B = sortedRuns(InputKind::FewDistinct, 2, count, s + 1, 1 << 29);
    REQUIRE_OK(mergeManyCase(A, 3, B, 2, count, test::context(s, "|A|=3 |B|=2 merges=70001")));
}

TEST_CASE("mergeSmallMany writes nothing for zero merges or empty pairs", "[part1][Q2][gpu]") {
    LAB_NEEDS_GPU();
    const std::vector<int> none;
    REQUIRE_OK(mergeManyCase(none, 4, none, 4, 0, "merges=0"));
    REQUIRE_OK(mergeManyCase(none, 0, none, 0, 5, "|A|=|B|=0 merges=5"));
}

TEST_CASE("mergeSmallMany refuses bad sizes and counts", "[part1][Q2]") {
    int dummy = 0;
    CHECK_THROWS_AS(mergeSmallMany<int>(&dummy, 600, &dummy, 600, &dummy, 10), Error);
    CHECK_THROWS_AS(mergeSmallMany<int>(&dummy, 4, &dummy, 4, &dummy, -1), Error);
    CHECK_THROWS_AS(mergeSmallMany<int>(&dummy, 4, &dummy, 4, &dummy, 1LL << 31), Error);
}

#ifdef LAB_EMULATED
// The case below on the emulator, without its memory (emu::SparseRun): the
// arrays are mapped, not filled, and only the blocks of the first, middle and
// last pairs run, on inputs written where they read. A pair offset kept in 32
// bits then reads or writes outside the arrays, and the emulator names the line.
TEST_CASE("mergeSmallMany keeps its pair offsets past 2^31 on a few emulated pairs", "[part1][Q2][emulated]") {
    const int nA = 300, nB = 724, d = nA + nB;
    const long long count = test::large::kPast31 / d + 1;
    const emu::SparseRun sparse;
    int *A = nullptr, *B = nullptr, *M = nullptr;
    const auto map = [](int** p, long long n) {
        return cudaMalloc(reinterpret_cast<void**>(p), static_cast<std::size_t>(n) * sizeof(int)) == cudaSuccess;
    };
    if (!map(&A, count * nA) || !map(&B, count * nB) || !map(&M, count * d)) {
        cudaFree(A), cudaFree(B), cudaFree(M);
        test::skip("this machine would not map the arrays' 17 GB of address space");
        return;
    }
    const std::uint64_t s = caseSeed(test::seed(), 31, 3);
    const std::vector<long long> pairs = emu::sparseBlocks(count);
    std::vector<std::vector<int>> expected;
    for (long long p : pairs) {
        const auto a = sortedKeys(InputKind::FewDistinct, nA, caseSeed(s, p));
        const auto b = sortedKeys(InputKind::FewDistinct, nB, caseSeed(s + 1, p));
        CUDA_CHECK(cudaMemcpy(A + p * nA, a.data(), nA * sizeof(int), cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(B + p * nB, b.data(), nB * sizeof(int), cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemset(M + p * d, kPoisonByte, d * sizeof(int)));
        expected.push_back(stdMerge(a, b));
    }
    const std::string ctx = test::context(s, sizes(nA, nB, "few-distinct") + " merges=" + std::to_string(count) +
                                                 ", emulated: the pairs' blocks " + std::to_string(pairs.front()) +
                                                 " ... " + std::to_string(pairs.back()) + " alone");
    Check c = test::tracedCall([&] { mergeSmallMany(A, nA, B, nB, M, count); }, mergeSmallRules(count, d), ctx);
    for (std::size_t i = 0; i < pairs.size() && c; ++i) {
        std::vector<int> got(d);
        CUDA_CHECK(cudaMemcpy(got.data(), M + pairs[i] * d, d * sizeof(int), cudaMemcpyDeviceToHost));
        c = checkOutput(got, expected[i], ctx + ", pair " + std::to_string(pairs[i]));
    }
    cudaFree(A), cudaFree(B), cudaFree(M);  // after a fault they free and return its error: c says why
    REQUIRE_OK(c);
}
#endif

TEST_CASE("mergeSmallMany merges past 2^31 outputs", "[part1][Q2][gpu][large][.]") {
    const int nA = 300, nB = 724, d = nA + nB;
    const long long count = test::large::kPast31 / d + 1;
    if (!test::large::canRun(2.0 * count * d * sizeof(int))) return;
    test::large::Array A(count * nA), B(count * nB), M(count * d);
    const std::uint64_t s = caseSeed(test::seed(), 31, 2);
    test::large::fillSorted(A, nA, 3, s);
    test::large::fillSorted(B, nB, 4, s + 1);
    const std::uint64_t hashA = test::large::segmentHash(A, nA), hashB = test::large::segmentHash(B, nB);
    const std::string ctx = test::context(s, sizes(nA, nB, "sorted runs") + " merges=" + std::to_string(count));
    REQUIRE_OK(test::tracedCall([&] { mergeSmallMany(A.data(), nA, B.data(), nB, M.data(), count); },
                                mergeSmallRules(count, d), ctx));
    REQUIRE_OK(test::large::checkOutput(M, d, hashA + hashB, ctx));
    REQUIRE_OK(test::large::checkInput(A, nA, hashA, "A", ctx));
    REQUIRE_OK(test::large::checkInput(B, nB, hashB, "B", ctx));
}
