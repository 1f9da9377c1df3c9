// Host tests of common/: generators, checkers, the command line, the host
// merge path. These run everywhere, GPU or not.
#include "lab_test.hpp"

#include "../common/cli.hpp"
#include "../common/inputs.hpp"
#include "../common/merge_path_host.hpp"
#include "../common/merge_rule.hpp"
#include "../common/study.hpp"
#include "../common/tagged.hpp"
#include "../part1_merge_path/part1.cuh"
#include "oracle/oracle.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>
#include <stdlib.h>
#include <unistd.h>

using namespace lab;

TEST_CASE("Generators repeat for a seed and differ between seeds", "[common]") {
    for (InputKind kind : allInputKinds()) {
        INFO(inputKindName(kind));
        CHECK(makeKeys(kind, 1000, 7) == makeKeys(kind, 1000, 7));
        CHECK(makeKeys(kind, 0, 7).empty());
    }
    CHECK(randomKeys(1000, 1) != randomKeys(1000, 2));
    CHECK(caseSeed(1, 2, 3) != caseSeed(1, 3, 2));
}

TEST_CASE("Generators give the kinds of input they promise", "[common]") {
    const std::size_t n = 5000;
    const auto few = makeKeys(InputKind::FewDistinct, n, 3);
    auto distinct = few;
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    CHECK(distinct.size() <= 8);
    CHECK(distinct.size() >= 2);

    const auto equal = makeKeys(InputKind::AllEqual, n, 3);
    CHECK(std::all_of(equal.begin(), equal.end(), [&](int k) { return k == equal[0]; }));

    const auto up = makeKeys(InputKind::Ascending, n, 3);
    CHECK(std::is_sorted(up.begin(), up.end()));
    const auto down = makeKeys(InputKind::Descending, n, 3);
    CHECK(std::is_sorted(down.rbegin(), down.rend()));
    CHECK(down.front() > down.back());

    const auto ext = makeKeys(InputKind::Extremes, n, 3);
    CHECK(std::count(ext.begin(), ext.end(), INT_MIN) > 0);
    CHECK(std::count(ext.begin(), ext.end(), INT_MAX) > 0);

    const auto sorted = sortedKeys(InputKind::Random, n, 3);
    CHECK(std::is_sorted(sorted.begin(), sorted.end()));

    const auto tagged = tagKeys({5, 5, 1}, 10);
    CHECK(tagged[2].key == 1);
    CHECK(tagged[2].tag == 12);
}

TEST_CASE("Random keys cover the whole int range of negative and positive values", "[common]") {
    const auto keys = randomKeys(10000, 11);
    CHECK(*std::min_element(keys.begin(), keys.end()) < -1000000000);
    CHECK(*std::max_element(keys.begin(), keys.end()) > 1000000000);
    Rng rng(5);
    for (int i = 0; i < 1000; ++i) CHECK(rng.below(7) < 7u);
}

TEST_CASE("Checkers accept right answers and name the first wrong index", "[common]") {
    const std::vector<int> expected = {1, 2, 2, 3};
    CHECK(checkOutput(expected, expected, "ctx").ok);

    const Check wrong = checkEqual(std::vector<int>{1, 2, 9, 9}, expected, "seed=5");
    CHECK_FALSE(wrong.ok);
    CHECK(wrong.message.find("index 2: got 9, expected 2") != std::string::npos);
    CHECK(wrong.message.find("2 of 4") != std::string::npos);
    CHECK(wrong.message.find("seed=5") != std::string::npos);

    const Check unsorted = checkOutput(std::vector<int>{2, 1, 2, 3}, expected, "ctx");
    CHECK(unsorted.message.find("not sorted: index 1") != std::string::npos);

    const Check lost = checkOutput(std::vector<int>{1, 2, 3, 3}, expected, "ctx");
    CHECK(lost.message.find("not a permutation") != std::string::npos);

    const Check size = checkOutput(std::vector<int>{1, 2}, expected, "ctx");
    CHECK_FALSE(size.ok);

    int poison;
    std::memset(&poison, kPoisonByte, sizeof poison);
    const Check unwritten = checkOutput(std::vector<int>{1, 2, poison, poison}, expected, "ctx");
    CHECK(unwritten.message.find("2 of 4 outputs were never written") != std::string::npos);
    CHECK(unwritten.message.find("first at index 2") != std::string::npos);
}

TEST_CASE("Checkers tell an unstable result from a wrong one", "[common]") {
    const std::vector<Tagged> expected = {{1, 0}, {1, 1}, {2, 2}};
    const std::vector<Tagged> swapped = {{1, 1}, {1, 0}, {2, 2}};
    const Check c = checkOutput(swapped, expected, "ctx");
    CHECK_FALSE(c.ok);
    CHECK(c.message.find("not stable") != std::string::npos);
    CHECK(c.message.find("got 1#1, expected 1#0") != std::string::npos);
}

TEST_CASE("A batch's output is judged piece by piece, never across a boundary", "[common]") {
    // Two merged pairs of 3: the second starts below the first's end, as pairs do.
    const std::vector<Tagged> expected = {{4, 0}, {5, 1}, {6, 2}, {1, 3}, {1, 4}, {2, 5}};
    CHECK(checkOutput(expected, expected, "ctx", Segments{3, "pair"}).ok);

    const std::vector<Tagged> unstable = {{4, 0}, {5, 1}, {6, 2}, {1, 4}, {1, 3}, {2, 5}};
    const Check c = checkOutput(unstable, expected, "ctx", Segments{3, "pair"});
    CHECK_FALSE(c.ok);
    CHECK(c.message.find("pair 1 (outputs 3 to 5): sorted and a permutation, but not stable") == 0);
    CHECK(c.message.find("index 0: got 1#4, expected 1#3") != std::string::npos);

    const std::vector<Tagged> unsorted = {{4, 0}, {5, 1}, {6, 2}, {1, 3}, {2, 5}, {1, 4}};
    const Check d = checkOutput(unsorted, expected, "ctx", Segments{3, "segment"});
    CHECK(d.message.find("segment 1 (outputs 3 to 5): not sorted: index 2") == 0);

    // Without the pieces, the same unstable output reads as unsorted at the boundary.
    CHECK(checkOutput(unstable, expected, "ctx").message.find("not sorted: index 3") != std::string::npos);
}

TEST_CASE("The sequential merge path equals std::merge and takes A first on ties", "[common][part1]") {
    for (InputKind kind : allInputKinds()) {
        for (std::size_t nA : {0, 1, 5, 64, 300}) {
            for (std::size_t nB : {0, 1, 7, 64, 250}) {
                const std::uint64_t s = caseSeed(test::seed(), nA, nB);
                const auto A = tagKeys(sortedKeys(kind, nA, s), 0);
                const auto B = tagKeys(sortedKeys(kind, nB, s + 1), 1000);
                std::vector<Tagged> expected(nA + nB);
                std::merge(A.begin(), A.end(), B.begin(), B.end(), expected.begin());
                std::vector<Step> path;
                const auto M = mergePathSequential(A, B, &path);
                REQUIRE_OK(checkOutput(M, expected, test::context(s, inputKindName(kind))));
                REQUIRE(path.size() == nA + nB);
                const auto points = pathPoints(path);
                REQUIRE(points.back().i == static_cast<long long>(nA));
                REQUIRE(points.back().j == static_cast<long long>(nB));
            }
        }
    }
}

TEST_CASE("The trusted host's diagonal search counts A's values among the first k outputs, A first on ties",
          "[common][part1]") {
    // The graders' Q1 answers come from this function (tests/oracle/oracle_part1.cpp),
    // so it is checked against the sequential merge path on every diagonal,
    // k = 0 .. nA + nB, of many small random pairs full of equal keys.
    Rng rng(test::seed());
    for (int trial = 0; trial < 4000; ++trial) {
        const int nA = static_cast<int>(rng.below(trial < 100 ? 3 : 48));  // empty and tiny arrays first
        const int nB = static_cast<int>(rng.below(trial < 100 ? 3 : 48));
        const auto distinct = static_cast<std::uint32_t>(1 + rng.below(trial % 2 ? 4 : 64));
        const std::uint64_t s = rng.next();
        std::vector<int> keysA = randomKeys(nA, s, distinct), keysB = randomKeys(nB, s + 1, distinct);
        std::sort(keysA.begin(), keysA.end());
        std::sort(keysB.begin(), keysB.end());
        const auto A = tagKeys(keysA, 0), B = tagKeys(keysB, nA);
        std::vector<Step> path;
        mergePathSequential(A, B, &path);
        std::vector<long long> expected, found;
        long long fromA = 0;
        for (int k = 0; k <= nA + nB; ++k) {
            expected.insert(expected.end(), {fromA, fromA, fromA});
            found.insert(found.end(), {diagonalSearchOnHost(A.data(), nA, B.data(), nB, k),
                                       diagonalSearchOnHost(keysA.data(), nA, keysB.data(), nB, k),
                                       diagonalSearchOnHost(keysA.data(), static_cast<long long>(nA), keysB.data(),
                                                            static_cast<long long>(nB), static_cast<long long>(k))});
            if (k < nA + nB && path[k] == Step::Down) ++fromA;
        }
        INFO(test::context(s, "|A|=" + std::to_string(nA) + " |B|=" + std::to_string(nB) + ", " +
                                  std::to_string(distinct) + " distinct keys; each k = 0.. three times (overloads)"));
        REQUIRE(found == expected);
    }
    const int one[] = {1};
    CHECK_THROWS_AS(diagonalSearchOnHost(one, 1, one, 1, 3), Error);
    CHECK_THROWS_AS(diagonalSearchOnHost(one, 1, one, 1, -1), Error);
}

namespace {

std::vector<char*> argvOf(std::vector<std::string>& args) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    return argv;
}

Cli demoCli() {
    Cli cli("demo", "test");
    cli.option("a", "LIST", "").option("n", "N", "").option("seed", "S", "").flag("no-draw", "");
    return cli;
}

}  // namespace

TEST_CASE("The trusted host sorts and merges equal std::sort and std::merge on every size", "[common]") {
    // The [large] tier's sizes take the radix sort and the threaded merge; a
    // few million values take the same paths here.
    for (long long n : {0LL, 1LL, 1000LL, (1LL << 24) - 1, (1LL << 24) + 12345}) {
        INFO("n = " << n);
        std::vector<int> keys = randomKeys(static_cast<std::size_t>(n), 11);
        if (n > 3) keys[0] = INT_MIN, keys[1] = INT_MAX, keys[2] = -1, keys[3] = 0;
        oracle::Host<int> sorted(keys.begin(), keys.end());
        oracle::stableSort(sorted);
        std::sort(keys.begin(), keys.end());
        CHECK(std::equal(sorted.begin(), sorted.end(), keys.begin(), keys.end()));
    }
    for (long long n : {1000LL, (1LL << 22) + 7}) {
        INFO("tagged, n = " << n);
        const std::vector<Tagged> tagged = tagKeys(makeKeys(InputKind::FewDistinct, static_cast<std::size_t>(n), 5), 0);
        oracle::Host<Tagged> sorted(tagged.begin(), tagged.end());
        oracle::stableSort(sorted);
        std::vector<Tagged> expected = tagged;
        std::stable_sort(expected.begin(), expected.end());
        CHECK(std::equal(sorted.begin(), sorted.end(), expected.begin(), expected.end()));
        oracle::Host<Tagged> merged = oracle::hostArray<Tagged>(n + n / 3);
        oracle::merge(expected.begin(), n, expected.begin(), n / 3, merged.begin());
        std::vector<Tagged> mergedExpected(merged.size());
        std::merge(expected.begin(), expected.end(), expected.begin(), expected.begin() + n / 3, mergedExpected.begin());
        CHECK(std::equal(merged.begin(), merged.end(), mergedExpected.begin(), mergedExpected.end()));
    }
}

TEST_CASE("The merge rule takes A unless B is strictly smaller, and ends with the arrays", "[common]") {
    const int A[] = {1, 5, 5}, B[] = {5, 7};
    CHECK(takesA(A, 3, B, 2, 0, 0));       // 1 before 5
    CHECK(takesA(A, 3, B, 2, 1, 0));       // 5 (A) before the equal 5 (B): stable
    CHECK_FALSE(takesA(A, 3, B, 2, 3, 0)); // A used up
    CHECK(takesA(A, 3, B, 2, 1, 2));       // B used up
    CHECK_FALSE(takesA(A, 3, B, 2, 0, 0) == bGoesFirst(B[0], A[0]));
    const Tagged a{5, 0}, b{5, 1};
    CHECK_FALSE(bGoesFirst(b, a));
}

TEST_CASE("Study tables write one CSV schema, one row per peer", "[common]") {
    char name[] = "/tmp/lab-study-XXXXXX";
    const int fd = mkstemp(name);
    REQUIRE(fd >= 0);
    close(fd);
    startStudyCsv(name);
    StudyTable t("Q9", "a test", "reference");
    t.add({1000, 8, "", 2.0, {{"peer-a", 4.0}, {"peer-b", -1}}});
    t.add({2000, 0, "128x8", 1.0, {}});
    t.appendCsv(name);
    std::ifstream in(name);
    std::string header, row1, row2, extra;
    std::getline(in, header), std::getline(in, row1), std::getline(in, row2);
    CHECK(header == "study,implementation,n,d,shape,median_ms,keys_per_s,peer,peer_ms,ratio,gpu");
    CHECK(row1.rfind("Q9,reference,1000,8,,2,500000,peer-a,4,0.5,", 0) == 0);  // peer-b not measured: no row
    CHECK(row2.rfind("Q9,reference,2000,0,128x8,1,2e+06,,,,", 0) == 0);
    CHECK_FALSE(std::getline(in, extra));
    std::remove(name);
    CHECK_THROWS_AS(startStudyCsv("/nonexistent-folder/x.csv"), Error);
}

TEST_CASE("The command line takes good options and refuses bad ones clearly", "[common]") {
    std::vector<std::string> good = {"demo", "--a", "1,-3,5", "--n=12", "--no-draw", "--seed", "42"};
    auto argv = argvOf(good);
    Cli cli = demoCli();
    cli.parse(static_cast<int>(argv.size()), argv.data());
    CHECK(cli.intList("a") == std::vector<int>{1, -3, 5});
    CHECK(cli.integer("n", 0, 0, 100) == 12);
    CHECK(cli.has("no-draw"));
    CHECK(cli.seed("seed", 1) == 42u);
    CHECK(cli.integer("missing", 7, 0, 100) == 7);
    CHECK(cli.usage().find("--no-draw") != std::string::npos);

    const std::vector<std::vector<std::string>> bad = {
        {"demo", "--bogus"}, {"demo", "--n"}, {"demo", "--no-draw=1"}, {"demo", "stray"}};
    for (auto args : bad) {
        auto av = argvOf(args);
        Cli c = demoCli();
        CHECK_THROWS_AS(c.parse(static_cast<int>(av.size()), av.data()), UsageError);
    }
    const std::vector<std::vector<std::string>> badValues = {
        {"demo", "--n", "x"}, {"demo", "--n", "101"}, {"demo", "--a", "1,,2"},
        {"demo", "--a", "1,2,"}, {"demo", "--a", "99999999999"}, {"demo", "--seed", "-1"}};
    for (auto args : badValues) {
        auto av = argvOf(args);
        Cli c = demoCli();
        c.parse(static_cast<int>(av.size()), av.data());
        CHECK_THROWS_AS((c.intList("a"), c.integer("n", 0, 0, 100), c.seed("seed", 0)), UsageError);
    }
}

TEST_CASE("A device buffer poisons its memory and guards and reports writes outside the array", "[common][gpu]") {
    LAB_NEEDS_GPU();
    if (defaultGuardElements() == 0) {  // emulated or sanitized: arrays end where their allocations end
        test::skip("no guard zones here (exact allocations)");
        return;
    }
    DeviceBuffer<int> buf(100);
    const std::vector<int> values(100, 5);
    buf.upload(values);
    CHECK(buf.download() == values);
    CHECK(buf.guards().ok);

    const int oops = 1;
    CUDA_CHECK(cudaMemcpy(buf.data() + 100, &oops, sizeof oops, cudaMemcpyHostToDevice));
    buf.download();
    CHECK_FALSE(buf.guards().ok);
    CHECK(buf.guards().message.find("[n+0] after") != std::string::npos);

    buf.poison();
    CUDA_CHECK(cudaMemcpy(buf.data() - 3, &oops, sizeof oops, cudaMemcpyHostToDevice));
    const auto poisoned = buf.download();
    CHECK(buf.guards().message.find("[-3] before") != std::string::npos);
    CHECK(poisoned[0] != 5);
}

TEST_CASE("The launch trace names kernels by their own name, in any namespace", "[common]") {
    using lab::test::kernelShortName;
    CHECK(kernelShortName("void lab::mergeSmall_k<int>(int const*, int, int const*, int, int*)") == "mergeSmall_k");
    CHECK(kernelShortName("void (anonymous namespace)::sortTiles_k<256, 17, lab::Tagged>(lab::Tagged*, long long)") ==
          "sortTiles_k");
    CHECK(kernelShortName("void lab::(anonymous namespace)::partition_k(long long*)") == "partition_k");
    CHECK(kernelShortName("plainKernel") == "plainKernel");
}

// Run by the harness's own tests with LAB_CONFINE=1 (tests/confine.cpp):
// the process may start threads, but no process and no program.
TEST_CASE("A confined graders' process starts threads but no process or program", "[common][.confine]") {
    const char* confined = std::getenv("LAB_CONFINE");
    if (confined == nullptr || std::strcmp(confined, "1") != 0) {
        test::skip("run with LAB_CONFINE=1");
        return;
    }
    errno = 0;
    CHECK(fork() == -1);
    CHECK(errno == EPERM);
    char* const argv[] = {const_cast<char*>("/bin/true"), nullptr};
    char* const envp[] = {nullptr};
    errno = 0;
    CHECK(execve("/bin/true", argv, envp) == -1);
    CHECK(errno == EPERM);
    CHECK(std::system("true") != 0);  // posix_spawn: a clone without CLONE_THREAD
    int shared = 0;
    std::thread worker([&] { shared = 42; });
    worker.join();
    CHECK(shared == 42);
}
