// ./part1: the Part 1 demo (Q1-Q2).
//
//   1. draws the merge path grid of the example (or --a/--b), one thread's
//      diagonal and binary search, which thread writes which output, and
//      where the linked diagonalSearch agrees with the path (drawing.cpp);
//   2. merges the same arrays on the GPU with mergeSmall and checks the result;
//   3. checks a random merge of --na + --nb values;
//   4. times mergeSmallMany against |A| + |B| (Q2), against std::merge.
#include "drawing.hpp"
#include "part1.cuh"

#include "../common/checks.hpp"
#include "../common/cli.hpp"
#include "../common/device_buffer.hpp"
#include "../common/gpu.hpp"
#include "../common/inputs.hpp"
#include "../common/merge_path_host.hpp"
#include "../common/study.hpp"
#include "../common/term.hpp"
#include "../common/timer.hpp"

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

using namespace lab;

namespace {

// One merge on the GPU, checked against the sequential merge path.
bool gpuMergeChecked(const std::vector<int>& A, const std::vector<int>& B, const std::string& what) {
    DeviceBuffer<int> dA(A.size()), dB(B.size()), dM(A.size() + B.size());
    dA.upload(A);
    dB.upload(B);
    mergeSmall(dA.data(), static_cast<int>(A.size()), dB.data(), static_cast<int>(B.size()), dM.data());
    return printCheck(checkDeviceOutput(dM, mergePathSequential(A, B), what), "GPU mergeSmall, " + what);
}

// `count` sorted runs of n random keys each, back to back.
std::vector<int> sortedRuns(std::size_t n, std::size_t count, std::uint64_t seed) {
    std::vector<int> keys = randomKeys(n * count, seed);
    for (std::size_t p = 0; p < count; ++p) std::sort(keys.begin() + p * n, keys.begin() + (p + 1) * n);
    return keys;
}

// Q2: mergeSmallMany for each d = |A| + |B|, about `total` elements in all.
bool timingStudy(long long total, int runs, std::uint64_t seed, const std::string& csvPath) {
    // The floor: a device-to-device copy reads and writes every key once, as a merge does.
    const std::size_t bytes = static_cast<std::size_t>(total) * sizeof(int);
    const double bandwidth = copyBandwidth(bytes);
    std::cout << "Timing, about " << total << " elements per row, |A| = |B| = d/2; median of " << runs
              << " runs (CUDA events, after warm-up);\nstd::merge on one CPU core. Device copy bandwidth (read + "
              << "write): " << bandwidth / 1e9 << " GB/s.\n\n";
    StudyTable copy("copy", "device-to-device copy of n ints (the floor)", "cudaMemcpy");
    copy.add({total, 0, "", 2.0 * bytes / bandwidth * 1e3, {}});
    copy.appendCsv(csvPath);
    StudyTable table("Q2", "mergeSmallMany, one block per merge, against std::merge", part1Implementation());
    bool ok = true;
    for (int d : {2, 4, 8, 16, 32, 64, 100, 128, 256, 500, 512, 1000, 1024}) {
        const int nA = d / 2, nB = d - nA;
        const long long count = std::max(1LL, total / d);
        if (!table.fits(count * d, 8.0 * count * d)) continue;  // A, B, M
        const std::vector<int> A = sortedRuns(nA, count, caseSeed(seed, d, 1));
        const std::vector<int> B = sortedRuns(nB, count, caseSeed(seed, d, 2));
        DeviceBuffer<int> dA(A.size()), dB(B.size()), dM(A.size() + B.size());
        dA.upload(A);
        dB.upload(B);
        const Timing gpu = timeGpu([&] { mergeSmallMany(dA.data(), nA, dB.data(), nB, dM.data(), count); }, 2, runs);
        std::vector<int> M(A.size() + B.size());
        const Timing cpu = timeCpu([&] {
            for (long long p = 0; p < count; ++p)
                std::merge(A.begin() + p * nA, A.begin() + (p + 1) * nA, B.begin() + p * nB,
                           B.begin() + (p + 1) * nB, M.begin() + p * d);
        }, 1, std::min(runs, 3));
        const Check c = checkEqual(dM.download(), M, "d=" + std::to_string(d));
        if (!c) ok = printCheck(c, "timing run");
        table.add({count * d, d, "", gpu.medianMs, {{"std::merge", cpu.medianMs}}});
    }
    table.print();
    table.appendCsv(csvPath);
    std::cout << "Small d wastes the GPU: a block of d threads leaves most of each multiprocessor idle.\n"
              << "Part 2 (Q3) packs several merges into one block.\n";
    if (!csvPath.empty()) std::cout << "Wrote " << csvPath << "\n";
    return ok;
}

int run(int argc, char** argv) {
    Cli cli("part1", "Part 1 of the merge sort lab: merge path in one block (Q1), many merges (Q2).");
    cli.option("a", "LIST", "sorted array A to draw and merge, e.g. 1,3,5 (default: the handout's)")
        .option("b", "LIST", "sorted array B, e.g. 2,4 (default: the handout's)")
        .option("thread", "K", "whose diagonal and binary search to show (default: the middle one)")
        .option("na", "N", "|A| of the random GPU check (default 300)")
        .option("nb", "N", "|B| of the random GPU check (default 700)")
        .option("total", "N", "elements per row of the timing table (default 16777216)")
        .demoOptions(9, "the search's probes");
    if (!cli.parse(argc, argv)) return 0;

    std::vector<int> A = {1, 2, 5, 6, 6, 9, 11, 15, 16}, B = {4, 7, 8, 10, 12, 13, 14};
    if (cli.has("a") || cli.has("b")) A = cli.intList("a"), B = cli.intList("b");
    for (const auto* v : {&A, &B})
        if (!std::is_sorted(v->begin(), v->end()))
            throw UsageError(std::string("--") + (v == &A ? "a" : "b") + " must be sorted ascending");
    const long long d = static_cast<long long>(A.size() + B.size());
    const long long thread = cli.integer("thread", d / 2, 0, std::max(0LL, d - 1));
    const int na = static_cast<int>(cli.integer("na", 300, 0, kMaxSmallMerge));
    const int nb = static_cast<int>(cli.integer("nb", 700, 0, kMaxSmallMerge));
    if (na + nb > kMaxSmallMerge)
        throw UsageError("--na + --nb = " + std::to_string(na + nb) + " exceeds " + std::to_string(kMaxSmallMerge) +
                         ", the most one block merges");
    const std::uint64_t seed = cli.seed("seed", 1);
    const long long total = cli.integer("total", 1LL << 24, 1024, 1LL << 30);
    const int runs = static_cast<int>(cli.integer("runs", 9, 1, 1000));
    const std::string csvPath = cli.string("csv", "");
    startStudyCsv(csvPath);
    setStepping(cli.has("step"));

    printBanner("Part 1: merge path (Q1-Q2)", part1Implementation());
    bool ok = cli.has("no-draw") || drawMergePath(A, B, thread) == 0;

    if (!gpuReadyOrSayWhy()) return 1;
    if (d > kMaxSmallMerge)
        throw UsageError("|A| + |B| = " + std::to_string(d) + " exceeds 1024, the most one block merges");
    ok &= gpuMergeChecked(A, B, "|A|=" + std::to_string(A.size()) + " |B|=" + std::to_string(B.size()));
    const std::vector<int> RA = sortedKeys(InputKind::Random, na, caseSeed(seed, 1));
    const std::vector<int> RB = sortedKeys(InputKind::Random, nb, caseSeed(seed, 2));
    ok &= gpuMergeChecked(RA, RB, "random |A|=" + std::to_string(na) + " |B|=" + std::to_string(nb) +
                                      " seed=" + std::to_string(seed));
    std::cout << "\n";
    if (kEmulated) std::cout << "\nemulated: not timed (the timing tables need a GPU)\n";
    else if (!cli.has("no-bench")) ok &= timingStudy(total, runs, seed, csvPath);
    return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    return runMain("part1", [&] { return run(argc, argv); });
}
