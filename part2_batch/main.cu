// ./part2: the Part 2 demo (Q3-Q4).
//
//   1. draws, for a tiny batch, which block and thread serve which pair and
//      output (Q3's index math) and the rounds of the small sort (Q4), traced
//      with the linked kernels (drawing.cpp);
//   2. checks both kernels on a larger random batch on the GPU;
//   3. times both kernels for d = 4..1024 against Thrust, CUB and std::
//      (and, in the instructors' copy, their own tuned kernels).
#include "bench_peers.hpp"
#include "drawing.hpp"
#include "part2.cuh"

#include "../common/checks.hpp"
#include "../common/cli.hpp"
#include "../common/device_buffer.hpp"
#include "../common/gpu.hpp"
#include "../common/inputs.hpp"
#include "../common/study.hpp"
#include "../common/term.hpp"
#include "../common/timer.hpp"

#if __has_include("reference_tuned.cuh")
#include "reference_tuned.cuh"
#define LAB_HAVE_TUNED 1
#endif

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

using namespace lab;

namespace {

// Runs Q3 and Q4 on a batch and checks both against the CPU.
bool gpuBatchChecked(const Batch& b, const std::string& what) {
    DeviceBuffer<int> dIn(b.keys.size()), dSplit(b.split.size()), dOut(b.keys.size());
    dIn.upload(b.keys);
    dSplit.upload(b.split);
    mergeSmallBatch(dIn.data(), dSplit.data(), dOut.data(), b.d, b.N);
    bool ok = printCheck(checkDeviceOutput(dOut, cpuMerges(b), what), "GPU mergeSmallBatch, " + what);
    dOut.poison();
    sortSmall(dIn.data(), dOut.data(), b.d, b.N);
    ok &= printCheck(checkDeviceOutput(dOut, cpuSorts(b.keys, b.d), what), "GPU sortSmall,      " + what);
    return ok;
}

bool timingStudy(long long total, int runs, std::uint64_t seed, const std::string& csvPath) {
    std::cout << "Timing: about " << total << " keys per row, N = total / d, random splits;\n"
              << "median of " << runs << " runs (CUDA events, after warm-up); CPU columns on one core.\n\n";
    StudyTable merges("Q3", "mergeSmallBatch against thrust::merge of (pair, key) tuples and std::merge",
                      part2Implementation());
    StudyTable sorts("Q4", "sortSmall against cub::DeviceSegmentedSort::StableSortKeys and std::sort",
                     part2Implementation());
#ifdef LAB_HAVE_TUNED
    StudyTable tunedMerges("Q3 tuned", "the tuned batch merge, same peers",
                           "tuned reference");
    StudyTable tunedSorts("Q4 tuned", "the tuned batch sort, same peers", "tuned reference");
#endif
    bool ok = true;
    for (int d : {4, 8, 16, 32, 64, 100, 128, 256, 500, 512, 1000, 1024}) {
        const long long N = total / d;
        // In, split, out, the tuple merge's five arrays, CUB's temporary.
        // (`&`, not `&&`: both tables list a row they leave out.)
        if (!(merges.fits(N * d, 48.0 * N * d) & sorts.fits(N * d, 48.0 * N * d))) continue;
        const Batch b = randomPairs(d, N, caseSeed(seed, d), false);
        const std::size_t n = b.keys.size();
        DeviceBuffer<int> dIn(n), dSplit(N), dOut(n);
        dIn.upload(b.keys);
        dSplit.upload(b.split);

        // Q3 and its peers: all pairs as one Thrust merge of (pair, key) tuples.
        const Timing q3 = timeGpu([&] { mergeSmallBatch(dIn.data(), dSplit.data(), dOut.data(), d, N); }, 2, runs);
        std::vector<int> expected;
        const Timing cpuMerge = timeCpu([&] { expected = cpuMerges(b); }, 0, std::min(runs, 3));
        Check c = checkEqual(dOut.download(), expected, "mergeSmallBatch d=" + std::to_string(d));
        std::vector<int> aPair, aKey, bPair, bKey;
        for (long long p = 0; p < N; ++p)
            for (int i = 0; i < d; ++i) {
                const int key = b.keys[p * d + i];
                if (i < b.split[p]) aPair.push_back(int(p)), aKey.push_back(key);
                else bPair.push_back(int(p)), bKey.push_back(key);
            }
        DeviceBuffer<int> dAp(aPair.size()), dAk(aKey.size()), dBp(bPair.size()), dBk(bKey.size()), dOutPair(n);
        dAp.upload(aPair), dAk.upload(aKey), dBp.upload(bPair), dBk.upload(bKey);
        peers::KeptMemory thrustMemory;
        const Timing thrust = timeGpu([&] {
            peers::thrustMergeTuples(dAp.data(), dAk.data(), aKey.size(), dBp.data(), dBk.data(), bKey.size(),
                                     dOutPair.data(), dOut.data(), thrustMemory);
        }, 2, runs);
        if (c) c = checkEqual(dOut.download(), expected, "thrust d=" + std::to_string(d));
        merges.add({N * d, d, "", q3.medianMs, {{"thrust::merge", thrust.medianMs}, {"std::merge", cpuMerge.medianMs}}});
#ifdef LAB_HAVE_TUNED
        dOut.poison();
        const Timing q3t = timeGpu([&] { tuned::mergeSmallBatch(dIn.data(), dSplit.data(), dOut.data(), d, N); }, 2, runs);
        if (c) c = checkEqual(dOut.download(), expected, "tuned mergeSmallBatch d=" + std::to_string(d));
        tunedMerges.add({N * d, d, "", q3t.medianMs, {{"thrust::merge", thrust.medianMs}, {"std::merge", cpuMerge.medianMs}}});
#endif

        // Q4 and its peers.
        const Timing q4 = timeGpu([&] { sortSmall(dIn.data(), dOut.data(), d, N); }, 2, runs);
        const Timing cpuSort = timeCpu([&] { expected = cpuSorts(b.keys, d); }, 0, std::min(runs, 3));
        if (c) c = checkEqual(dOut.download(), expected, "sortSmall d=" + std::to_string(d));
        peers::CubSegmentedSort cub(d, N);
        const Timing cubT = timeGpu([&] { cub.run(dIn.data(), dOut.data()); }, 2, runs);
        if (c) c = checkEqual(dOut.download(), expected, "cub d=" + std::to_string(d));
        sorts.add({N * d, d, "", q4.medianMs, {{"cub::DeviceSegmentedSort", cubT.medianMs}, {"std::sort", cpuSort.medianMs}}});
#ifdef LAB_HAVE_TUNED
        dOut.poison();
        const Timing q4t = timeGpu([&] { tuned::sortSmall(dIn.data(), dOut.data(), d, N); }, 2, runs);
        if (c) c = checkEqual(dOut.download(), expected, "tuned sortSmall d=" + std::to_string(d));
        tunedSorts.add({N * d, d, "", q4t.medianMs, {{"cub::DeviceSegmentedSort", cubT.medianMs}, {"std::sort", cpuSort.medianMs}}});
#endif
        if (!c) ok = printCheck(c, "timing run");
    }
    for (const StudyTable* t : {&merges, &sorts}) t->print(), t->appendCsv(csvPath);
#ifdef LAB_HAVE_TUNED
    for (const StudyTable* t : {&tunedMerges, &tunedSorts}) t->print(), t->appendCsv(csvPath);
#endif
    if (!csvPath.empty()) std::cout << "Wrote " << csvPath << "\n";
    return ok;
}

int run(int argc, char** argv) {
    Cli cli("part2", "Part 2 of the merge sort lab: batch merge (Q3) and batch sort (Q4) of small arrays.");
    cli.option("d", "D", "size of each pair / array in the drawn batch, 1..32 (default 8)")
        .option("n", "N", "number of pairs / arrays in the drawn batch, 1..64 (default 5)")
        .option("tpb", "T", "threads per block of the drawn batch, a multiple of d (default 3*d)")
        .option("total", "N", "keys per row of the timing tables (default 16777216)")
        .demoOptions(9, "the sort's rounds");
    if (!cli.parse(argc, argv)) return 0;
    const int d = static_cast<int>(cli.integer("d", 8, 1, 32));
    const long long N = cli.integer("n", 5, 1, 64);
    const int tpb = static_cast<int>(cli.integer("tpb", 3 * d, 1, kMaxBatchD));
    if (tpb % d != 0)
        throw UsageError("--tpb = " + std::to_string(tpb) + " must be a multiple of --d = " + std::to_string(d));
    const std::uint64_t seed = cli.seed("seed", 1);
    const long long total = cli.integer("total", 1LL << 24, 1024, 1LL << 30);
    const int runs = static_cast<int>(cli.integer("runs", 9, 1, 1000));
    const std::string csvPath = cli.string("csv", "");
    startStudyCsv(csvPath);
    setStepping(cli.has("step"));

    printBanner("Part 2: batch merge and batch sort (Q3-Q4)", part2Implementation());
    const bool gpu = detectGpu().available;
    bool ok = true;
    if (!cli.has("no-draw")) {
        ok &= drawIndexMath(randomPairs(d, N, caseSeed(seed, 1), true), tpb, gpu) == 0;
        Rng rng(caseSeed(seed, 2));
        std::vector<int> unsorted(d);
        for (int& k : unsorted) k = static_cast<int>(rng.below(100));
        ok &= drawSortRounds(unsorted, gpu) == 0;
    }
    if (!gpuReadyOrSayWhy()) return 1;
    const long long checkedN = kEmulated ? 300 : 10000;  // emulated: a smaller batch, same shape
    ok &= gpuBatchChecked(randomPairs(300, checkedN, caseSeed(seed, 3), false),
                          "random batch, d=300 N=" + std::to_string(checkedN) + " seed=" + std::to_string(seed));
    std::cout << "\n";
    if (kEmulated) std::cout << "\nemulated: not timed (the timing tables need a GPU)\n";
    else if (!cli.has("no-bench")) ok &= timingStudy(total, runs, seed, csvPath);
    return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    return runMain("part2", [&] { return run(argc, argv); });
}
