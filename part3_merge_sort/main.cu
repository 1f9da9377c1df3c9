// ./part3: the Part 3 demo (Q5-Q7).
//
//   1. draws the partition stage on the merge path grid of small inputs, with
//      the crossings the linked partition kernel finds (drawing.cpp);
//   2. merges and sorts a random array on the GPU and checks both;
//   3. compares with CCCL, std:: and (in the instructors' copy) the naive GPU
//      merges and the tuned merge sort (tables, ratios);
//   4. the Q7 study: time against n for every launch shape (emulated: the
//      profile of every shape, memory requests and bank conflicts);
//   --huge N sorts N keys (more than 2^31 if memory allows) and checks them.
#include "bench_peers.hpp"
#include "drawing.hpp"
#include "gpu_runs.hpp"
#include "part3.cuh"

#include "../common/cli.hpp"
#include "../common/device_buffer.hpp"
#include "../common/gpu.hpp"
#include "../common/inputs.hpp"
#include "../common/study.hpp"
#include "../common/term.hpp"
#include "../common/timer.hpp"

#if __has_include("reference_peers.hpp")
#include "reference_peers.hpp"
#define LAB_HAVE_NAIVE_PEERS 1
#endif
#if __has_include("reference_tuned.cuh")
#include "reference_tuned.cuh"
#define LAB_HAVE_TUNED 1
#endif

#include <algorithm>
#include <cstdint>
#include <optional>
#include <iostream>
#include <string>
#include <type_traits>
#include <vector>

using namespace lab;

namespace {

// The floor of a merge: A and B copied into M as they are (every value read
// and written once, as the merge must), device to device.
template <class T>
void copyBoth(const DeviceBuffer<T>& dA, const DeviceBuffer<T>& dB, DeviceBuffer<T>& dM) {
    CUDA_CHECK(cudaMemcpyAsync(dM.data(), dA.data(), dA.size() * sizeof(T), cudaMemcpyDeviceToDevice));
    CUDA_CHECK(cudaMemcpyAsync(dM.data() + dA.size(), dB.data(), dB.size() * sizeof(T), cudaMemcpyDeviceToDevice));
}

#ifdef LAB_HAVE_TUNED
// The tuned merge sort (k-way passes, instructors' copy) against Q6's
// reference and CUB's merge sort on n random keys of T; its output is checked
// against CUB's (both stable: equal, tag for tag); false when one differs.
template <class T>
bool tunedSortTable(const std::string& study, int runs, std::uint64_t seed, const std::string& csvPath) {
    StudyTable table(study, std::is_same_v<T, int> ? "the tuned merge sort (4-way passes) of n random keys against the Q6 reference and CUB's merge and radix sorts"
                                                   : "the tuned merge sort (4-way passes) of n random keys against the Q6 reference and CUB",
                     "tuned reference");
    bool ok = true;
    for (long long n : {1LL << 16, 1LL << 20, 1LL << 24, 1LL << 26, 1LL << 27, 1LL << 28}) {
        if (!table.fits(n, 8.5 * n * sizeof(T))) continue;  // 2 arrays, the four sorts' temporaries
        DeviceBuffer<T> pristine(n, 0), work(n, 0);
        if constexpr (std::is_same_v<T, int>) pristine.upload(randomKeys(n, caseSeed(seed, n, 8)));
        else pristine.upload(tagKeys(randomKeys(n, caseSeed(seed, n, 8)), 0));
        peers::CubMergeSort<T> cub(n);
        StudyRow row{n, 0, "", inPlaceSortMs(work, pristine, [&] { tuned::mergeSort(work.data(), n); }, runs), {}};
        row.peers.push_back({"Q6 reference", inPlaceSortMs(work, pristine, [&] { mergeSort(work.data(), n); }, runs)});
        row.peers.push_back({"cub::DeviceMergeSort", inPlaceSortMs(work, pristine, [&] { cub.run(work.data()); }, runs)});
        if constexpr (std::is_same_v<T, int>) {  // the non-comparison bound
            peers::CubRadixSort radix(n);
            row.peers.push_back({"cub::DeviceRadixSort", inPlaceSortMs(work, pristine, [&] { radix.run(work.data()); }, runs)});
        }
        table.add(row);
        const auto restore = [&] {
            CUDA_CHECK(cudaMemcpy(work.data(), pristine.data(), n * sizeof(T), cudaMemcpyDeviceToDevice));
        };
        restore();
        cub.run(work.data());
        const std::vector<T> expected = work.download();
        restore();
        tuned::mergeSort(work.data(), n);
        if (Check c = checkEqual(work.download(), expected, study + " n=" + std::to_string(n)); !c) {
            printCheck(c, "tuned mergeSort against CUB's");
            ok = false;
        }
    }
    table.print();
    table.appendCsv(csvPath);
    return ok;
}

// Both tuned tables, ints and tagged records; false when an output differed.
bool tunedSortTables(int runs, std::uint64_t seed, const std::string& csvPath) {
    const bool intsOk = tunedSortTable<int>("Q6 tuned", runs, seed, csvPath);
    const bool taggedOk = tunedSortTable<Tagged>("Q6 tuned tagged", runs, seed, csvPath);
    return intsOk && taggedOk;
}
#endif

// The timing tables; false when a checked output among them was wrong.
bool studies(int maxLog2, int runs, std::uint64_t seed, const std::string& csvPath) {
    bool ok = true;
    const std::string impl = part3Implementation();
    const auto cpuRuns = std::min(runs, 3);
#ifdef LAB_HAVE_NAIVE_PEERS
    StudyTable q5("Q5", "mergeLarge of |A| = |B| = n/2 random keys against CCCL, the naive GPU merges, std::, a device copy", impl);
#else
    std::cout << "(the instructors' tables also time naive GPU merges, which ship with their copy only: "
                 "these compare yours with CCCL and std::)\n";
    StudyTable q5("Q5", "mergeLarge of |A| = |B| = n/2 random keys against CCCL, std::, a device copy", impl);
#endif
    // Each row's device memory: its arrays and the peers' temporary storage.
    for (long long n : {1LL << 16, 1LL << 20, 1LL << 24, 1LL << 27}) {
        if (!q5.fits(n, 9.0 * n)) continue;  // A, B, M: 8 bytes a key
        const long long h = n / 2;
        const auto A = sortedKeys(InputKind::Random, h, caseSeed(seed, n, 1));
        const auto B = sortedKeys(InputKind::Random, h, caseSeed(seed, n, 2));
        DeviceBuffer<int> dA(h, 0), dB(h, 0), dM(n, 0);
        peers::KeptMemory thrustMemory;
        dA.upload(A);
        dB.upload(B);
        StudyRow row{n, 0, "", timeGpu([&] { mergeLarge(dA.data(), h, dB.data(), h, dM.data()); }, 2, runs).medianMs, {}};
        row.peers.push_back({"thrust::merge", timeGpu([&] { peers::thrustMerge(dA.data(), h, dB.data(), h, dM.data(), thrustMemory); }, 2, runs).medianMs});
        if (peers::CubMerge<int>::available()) {
            peers::CubMerge<int> cubMerge(h, h);
            row.peers.push_back({"cub::DeviceMerge", timeGpu([&] { cubMerge.run(dA.data(), dB.data(), dM.data()); }, 2, runs).medianMs});
        }
        row.peers.push_back({"device copy", timeGpu([&] { copyBoth(dA, dB, dM); }, 2, runs).medianMs});
#ifdef LAB_HAVE_NAIVE_PEERS
        row.peers.push_back({"rank-naive", timeGpu([&] { peers::rankMerge(dA.data(), h, dB.data(), h, dM.data()); }, 1, runs).medianMs});
        row.peers.push_back({"1-thread", n > (1 << 16) ? -1 : timeGpu([&] { peers::oneThreadMerge(dA.data(), h, dB.data(), h, dM.data()); }, 0, 1).medianMs});
#endif
        row.peers.push_back({"std::merge", timeCpu([&] {
            std::vector<int> M(n);
            std::merge(A.begin(), A.end(), B.begin(), B.end(), M.begin());
        }, 0, cpuRuns).medianMs});
        q5.add(row);
    }
    q5.print();
    StudyTable q5t("Q5 tagged", "mergeLarge of |A| = |B| = n/2 random tagged keys (8 bytes) against CCCL and a device copy", impl);
    for (long long n : {1LL << 20, 1LL << 24, 1LL << 27}) {
        if (!q5t.fits(n, 18.0 * n)) continue;
        const long long h = n / 2;
        DeviceBuffer<Tagged> dA(h, 0), dB(h, 0), dM(n, 0);
        peers::KeptMemory thrustMemory;
        dA.upload(tagKeys(sortedKeys(InputKind::Random, h, caseSeed(seed, n, 5)), 0));
        dB.upload(tagKeys(sortedKeys(InputKind::Random, h, caseSeed(seed, n, 6)), static_cast<int>(h)));
        StudyRow row{n, 0, "", timeGpu([&] { mergeLarge(dA.data(), h, dB.data(), h, dM.data()); }, 2, runs).medianMs, {}};
        row.peers.push_back({"thrust::merge", timeGpu([&] { peers::thrustMerge(dA.data(), h, dB.data(), h, dM.data(), thrustMemory); }, 2, runs).medianMs});
        if (peers::CubMerge<Tagged>::available()) {
            peers::CubMerge<Tagged> cubMerge(h, h);
            row.peers.push_back({"cub::DeviceMerge", timeGpu([&] { cubMerge.run(dA.data(), dB.data(), dM.data()); }, 2, runs).medianMs});
        }
        row.peers.push_back({"device copy", timeGpu([&] { copyBoth(dA, dB, dM); }, 2, runs).medianMs});
        q5t.add(row);
    }
    q5t.print();
#ifdef LAB_HAVE_NAIVE_PEERS
    StudyTable q6("Q6", "mergeSort of n random keys against CCCL, the naive GPU merge sort, std::sort", impl);
#else
    StudyTable q6("Q6", "mergeSort of n random keys against CCCL and std::sort", impl);
#endif
    for (long long n : {1LL << 16, 1LL << 20, 1LL << 24, 1LL << 27, 1LL << 28}) {
        // 3 arrays (the third the naive sort's), CUB's, Thrust's and mergeSort's
        // temporaries; the same rows in every copy.
        if (!q6.fits(n, 26.0 * n)) continue;
        const auto keys = randomKeys(n, caseSeed(seed, n, 3));
        DeviceBuffer<int> pristine(n, 0), work(n, 0);
#ifdef LAB_HAVE_NAIVE_PEERS
        DeviceBuffer<int> temp(n, 0);
#endif
        pristine.upload(keys);
        peers::CubMergeSort<int> cub(n);
        peers::KeptMemory thrustMemory;
        StudyRow row{n, 0, "", inPlaceSortMs(work, pristine, [&] { mergeSort(work.data(), n); }, runs), {}};
        row.peers.push_back({"cub::DeviceMergeSort", inPlaceSortMs(work, pristine, [&] { cub.run(work.data()); }, runs)});
        row.peers.push_back({"thrust::sort", inPlaceSortMs(work, pristine, [&] { peers::thrustSort(work.data(), n, thrustMemory); }, runs)});
#ifdef LAB_HAVE_NAIVE_PEERS
        row.peers.push_back({"rank-naive", inPlaceSortMs(work, pristine, [&] { peers::rankMergeSort(work.data(), temp.data(), n); }, cpuRuns)});
#endif
        row.peers.push_back({"std::sort", n > (1 << 24) ? -1 : timeCpu([&] {
            auto copy = keys;
            std::sort(copy.begin(), copy.end());
        }, 0, cpuRuns).medianMs});
        q6.add(row);
    }
    q6.print();
    StudyTable q6t("Q6 tagged", "mergeSort of n random tagged keys (8 bytes) against CCCL", impl);
    for (long long n : {1LL << 20, 1LL << 24, 1LL << 27}) {
        if (!q6t.fits(n, 34.0 * n)) continue;
        DeviceBuffer<Tagged> pristine(n, 0), work(n, 0);
        pristine.upload(tagKeys(randomKeys(n, caseSeed(seed, n, 7)), 0));
        peers::CubMergeSort<Tagged> cub(n);
        StudyRow row{n, 0, "", inPlaceSortMs(work, pristine, [&] { mergeSort(work.data(), n); }, runs), {}};
        row.peers.push_back({"cub::DeviceMergeSort", inPlaceSortMs(work, pristine, [&] { cub.run(work.data()); }, runs)});
        q6t.add(row);
    }
    q6t.print();
#ifdef LAB_HAVE_TUNED
    ok &= tunedSortTables(runs, seed, csvPath);
#endif
    std::cout << "(thrust::sort is a radix sort for int keys: the bar a comparison sort is not expected to reach)\n\n";
    StudyTable q7("Q7", "mergeSort against n for every launch shape (threads x items)", impl);
    for (int lg = 10; lg <= maxLog2; lg += 2) {
        const long long n = 1LL << lg;
        if (!q7.fits(n, 13.0 * n)) continue;  // 2 arrays and mergeSort's temporary
        DeviceBuffer<int> pristine(n, 0), work(n, 0);
        pristine.upload(randomKeys(n, caseSeed(seed, n, 4)));
        for (const LaunchShape& s : studyShapes())
            q7.add({n, 0, s.name(),
                    inPlaceSortMs(work, pristine, [&] { mergeSortShaped(work.data(), n, s); }, runs), {}});
    }
    q7.print();
    for (const StudyTable* t : {&q5, &q5t, &q6, &q6t, &q7}) t->appendCsv(csvPath);
    if (!csvPath.empty()) std::cout << "Wrote " << csvPath << "\n";
    return ok;
}

// Emulated, in place of the Q7 study's times: the profile of the sort at
// every study shape (the shared-memory wavefronts and bank conflicts that
// Q7's hint has ncu count on a GPU).
void profiledStudy(std::uint64_t seed) {
    constexpr long long n = 1 << 16;
    DeviceBuffer<int> pristine(n, 0), work(n, 0);
    pristine.upload(randomKeys(n, caseSeed(seed, n, 4)));
    std::cout << "\nIn place of the Q7 study: mergeSort of n = 2^16 random keys at every study shape, profiled\n"
                 "(compare the shared stores of mergeTiles_k and sortTiles_k at 16 and 17 items; one shape's merge\n"
                 "and sort: EMU_PROFILE=1 ./part3 --no-bench --shape TxI; --no-bench leaves this out)\n";
    printEmulatedProfile("Q7, mergeSort of 2^16 keys", [&] {
        for (const LaunchShape& s : studyShapes()) {
            CUDA_CHECK(cudaMemcpy(work.data(), pristine.data(), n * sizeof(int), cudaMemcpyDeviceToDevice));
            mergeSortShaped(work.data(), n, s);
        }
    });
}

int run(int argc, char** argv) {
    Cli cli("part3", "Part 3 of the merge sort lab: large merge (Q5), merge sort (Q6), launch-shape study (Q7).");
    cli.option("a", "LIST", "sorted array A to draw (default: a random one of 12)")
        .option("b", "LIST", "sorted array B to draw (default: a random one of 10)")
        .option("tile", "T", "tile size of the drawing, 1..64 (default 5)")
        .option("n", "N", "size of the checked random merge and sort (default 10000000; emulated 100000)")
        .option("max-log2", "L", "largest n of the Q7 study is 2^L, 10..31 (default 28)")
        .option("huge", "N", "sort N random keys and check them (e.g. 2200000000), then exit")
        .option("shape", "TxI", "run the checked merge and sort at this study shape, threads x items (for ncu)")
#ifdef LAB_HAVE_TUNED
        .flag("tuned", "with --huge: sort with the tuned merge sort instead (for ncu); alone: its timing tables only")
#endif
        .demoOptions(7, "the partition's tiles");
    if (!cli.parse(argc, argv)) return 0;
    const std::uint64_t seed = cli.seed("seed", 1);
    std::vector<int> A = sortedKeys(InputKind::FewDistinct, 12, caseSeed(seed, 10));
    std::vector<int> B = sortedKeys(InputKind::FewDistinct, 10, caseSeed(seed, 11));
    for (auto* v : {&A, &B})
        for (int& k : *v) k = static_cast<int>((static_cast<long long>(k) - INT32_MIN) >> 26);  // 0..63
    if (cli.has("a") || cli.has("b")) A = cli.intList("a"), B = cli.intList("b");
    for (const auto* v : {&A, &B})
        if (!std::is_sorted(v->begin(), v->end()))
            throw UsageError(std::string("--") + (v == &A ? "a" : "b") + " must be sorted ascending");
    const int tile = static_cast<int>(cli.integer("tile", 5, 1, 64));
    const long long n = cli.integer("n", kEmulated ? 100000 : 10000000, 0, 1LL << 40);
    const int maxLog2 = static_cast<int>(cli.integer("max-log2", 28, 10, 31));
    const long long huge = cli.integer("huge", 0, 1, 1LL << 40);
    const int runs = static_cast<int>(cli.integer("runs", 7, 1, 1000));
    const std::string csvPath = cli.string("csv", "");
    std::optional<LaunchShape> shape;
    if (cli.has("shape")) {
        const std::string text = cli.string("shape", "");
        std::string known;
        for (const LaunchShape& s : studyShapes()) {
            known += (known.empty() ? "" : ", ") + s.name();
            if (s.name() == text) shape = s;
        }
        if (!shape) throw UsageError("--shape must be one of the study shapes (" + known + "), not '" + text + "'");
    }
    startStudyCsv(csvPath);
    setStepping(cli.has("step"));

    printBanner("Part 3: merge sort of any size (Q5-Q7)", part3Implementation());
    bool ok = cli.has("no-draw") || cli.has("huge") || drawPartition(A, B, tile, detectGpu().available) == 0;
    if (!gpuReadyOrSayWhy()) return 1;
    // (The launchers' temporary memory stays in the device's pool between
    // calls: keepPoolMemory in launch_support.cuh, set by the first launch.)

#ifdef LAB_HAVE_TUNED
    if (cli.has("huge") && cli.has("tuned")) return hugeSort(huge, seed, tuned::mergeSort<int>, "tuned mergeSort") ? 0 : 1;
    if (cli.has("tuned") && !kEmulated) return tunedSortTables(runs, seed, csvPath) ? 0 : 1;
#endif
    if (cli.has("huge")) return hugeSort(huge, seed) ? 0 : 1;
    ok &= checkedRun(n, seed, shape);
    std::cout << "\n";
    if (kEmulated) {
        std::cout << "\nemulated: not timed (the timing tables need a GPU)\n";
        if (!cli.has("no-bench")) profiledStudy(seed);
    } else if (!cli.has("no-bench")) {
        ok &= studies(maxLog2, runs, seed, csvPath);
    }
    return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    return runMain("part3", [&] { return run(argc, argv); });
}
