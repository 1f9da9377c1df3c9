// ./part1: the Part 1 demo (Q1-Q2).
//
//   1. draws the merge path grid of the example (or --a/--b), one thread's
//      diagonal and its binary search, and which thread writes which output;
//   2. merges the same arrays on the GPU with mergeSmall and checks the result;
//   3. checks a random merge of --na + --nb values;
//   4. times mergeSmallMany against |A| + |B| (Q2), against std::merge.
#include "part1.cuh"

#include "../common/checks.hpp"
#include "../common/cli.hpp"
#include "../common/device_buffer.hpp"
#include "../common/gpu.hpp"
#include "../common/inputs.hpp"
#include "../common/merge_grid.hpp"
#include "../common/merge_path_host.hpp"
#include "../common/term.hpp"
#include "../common/timer.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

using namespace lab;

namespace {

std::string join(const std::vector<int>& v) {
    std::string s;
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return "[" + s + "]";
}

void requireSorted(const std::vector<int>& v, const char* name) {
    for (std::size_t i = 1; i < v.size(); ++i)
        if (v[i] < v[i - 1])
            throw UsageError(std::string("--") + name + " must be sorted ascending, but " + name + "[" +
                             std::to_string(i - 1) + "] = " + std::to_string(v[i - 1]) + " > " + name + "[" +
                             std::to_string(i) + "] = " + std::to_string(v[i]));
}

// Thread k's binary search on its diagonal, step by step (mirrors the kernel's search).
void traceSearch(const std::vector<int>& A, const std::vector<int>& B, long long k) {
    const long long nA = static_cast<long long>(A.size()), nB = static_cast<long long>(B.size());
    long long lo = k > nB ? k - nB : 0, hi = k < nA ? k : nA;
    std::cout << "Thread " << k << " searches diagonal i + j = " << k << " for i in [" << lo << ", " << hi
              << "]:\n";
    while (lo < hi) {
        const long long mid = lo + (hi - lo) / 2;
        const bool after = B[k - 1 - mid] < A[mid];
        std::cout << "  i = " << mid << ": B[" << k - 1 - mid << "] = " << B[k - 1 - mid]
                  << (after ? " <  " : " >= ") << "A[" << mid << "] = " << A[mid] << "  -> "
                  << (after ? "A[i] is not among the first k: look lower" : "A[i] is among the first k: look higher")
                  << "\n";
        (after ? hi : lo) = after ? mid : mid + 1;
    }
    std::cout << "  crossing at (i, j) = (" << lo << ", " << k - lo << ")\n";
    const int linked = diagonalSearchOnHost(A.data(), static_cast<int>(nA), B.data(), static_cast<int>(nB),
                                            static_cast<int>(k));
    std::cout << "  the linked diagonalSearch (" << part1Implementation() << ") returns i = " << linked
              << (linked == lo ? ": the same crossing\n"
                               : paint(": a different crossing, so this thread would write a wrong value",
                                       Colour::Red) + "\n");
}

// Each thread's crossing by the linked diagonalSearch (the student's, in a
// student build), next to the merge path's: a wrong search shows here first.
// Returns how many diagonals disagree.
int compareSearch(const std::vector<int>& A, const std::vector<int>& B, const std::vector<GridPoint>& points) {
    std::vector<long long> wrong;
    for (std::size_t k = 0; k < points.size(); ++k) {
        const int i = diagonalSearchOnHost(A.data(), static_cast<int>(A.size()), B.data(), static_cast<int>(B.size()),
                                           static_cast<int>(k));
        if (i != points[k].i) wrong.push_back(static_cast<long long>(k));
    }
    if (wrong.empty()) {
        std::cout << paint("The linked diagonalSearch finds every one of these crossings.", Colour::Green) << "\n";
        return 0;
    }
    std::cout << paint("The linked diagonalSearch (" + std::string(part1Implementation()) + ") disagrees with the "
                       "merge path on " + std::to_string(wrong.size()) + " of " + std::to_string(points.size()) +
                       " diagonals", Colour::Red) << ", first at k = " << wrong[0] << ":\n";
    for (std::size_t w = 0; w < wrong.size() && w < 8; ++w) {
        const long long k = wrong[w];
        const int i = diagonalSearchOnHost(A.data(), static_cast<int>(A.size()), B.data(), static_cast<int>(B.size()),
                                           static_cast<int>(k));
        std::cout << "  k = " << k << ": path (" << points[k].i << ", " << points[k].j << "), search (" << i << ", "
                  << k - i << ")\n";
    }
    return static_cast<int>(wrong.size());
}

void drawExample(const std::vector<int>& A, const std::vector<int>& B, long long thread) {
    std::cout << "A = " << join(A) << "\nB = " << join(B) << "\n\n";
    if (A.size() > kMaxDrawnSide || B.size() > kMaxDrawnSide) {
        std::cout << "(the grid is drawn for inputs up to " << kMaxDrawnSide << " x " << kMaxDrawnSide
                  << "; use smaller --a/--b to see it)\n\n";
        return;
    }
    std::cout << "The merge path grid: cell (i, j) is 1 when A[i] <= B[j]. The path ("
              << paint("o", Colour::Yellow) << ") separates the 1s from the 0s;\nthread " << thread
              << "'s diagonal is drawn " << paint("/", Colour::Cyan) << ", and "
              << paint("@", Colour::Magenta) << " is where it crosses the path.\n\n";
    drawMergeGrid(std::cout, A, B, {thread});
    std::cout << "\n";
    if (!A.empty() || !B.empty()) traceSearch(A, B, thread);

    std::vector<Step> steps;
    const std::vector<int> M = mergePathSequential(A, B, &steps);
    const std::vector<GridPoint> points = pathPoints(steps);
    std::cout << "\nEach thread k finds where the path crosses its diagonal i + j = k, then writes M[k]:\n";
    std::string line;
    for (std::size_t k = 0; k < M.size(); ++k) {
        const GridPoint p = points[k];
        char out[48], buf[96];
        std::snprintf(out, sizeof out, "M[%zu]=%s[%lld]=%d", k, steps[k] == Step::Down ? "A" : "B",
                      steps[k] == Step::Down ? p.i : p.j, M[k]);
        std::snprintf(buf, sizeof buf, "  t%-3zu (%2lld,%2lld) %-18s", k, p.i, p.j, out);
        line += buf;
        if (k % 3 == 2 || k + 1 == M.size()) {
            std::cout << line.erase(line.find_last_not_of(' ') + 1) << "\n";
            line.clear();
        }
    }
    std::cout << "\nM = " << join(M) << "\n\n";
    compareSearch(A, B, points);
    std::cout << "\n";
}

// One merge on the GPU, checked against the sequential merge path.
bool gpuMergeChecked(const std::vector<int>& A, const std::vector<int>& B, const std::string& what) {
    DeviceBuffer<int> dA(A.size()), dB(B.size()), dM(A.size() + B.size());
    dA.upload(A);
    dB.upload(B);
    mergeSmall(dA.data(), static_cast<int>(A.size()), dB.data(), static_cast<int>(B.size()), dM.data());
    return printCheck(checkDeviceOutput(dM, mergePathSequential(A, B), what), "GPU mergeSmall, " + what);
}

// count sorted runs of n random keys each, back to back.
std::vector<int> sortedRuns(std::size_t n, std::size_t count, std::uint64_t seed) {
    std::vector<int> keys = randomKeys(n * count, seed);
    for (std::size_t p = 0; p < count; ++p) std::sort(keys.begin() + p * n, keys.begin() + (p + 1) * n);
    return keys;
}

// Q2: time mergeSmallMany for each |A| + |B|, the total number of elements fixed.
bool timingStudy(long long total, int runs, std::uint64_t seed, const std::string& csvPath) {
    const std::vector<int> sizes = {2, 4, 8, 16, 32, 64, 100, 128, 256, 500, 512, 1000, 1024};
    const double floorBw = copyBandwidth(static_cast<std::size_t>(total) * sizeof(int));
    std::cout << "Q2 timing: mergeSmallMany, one block per merge, about " << total
              << " elements in all, |A| = |B| = d/2;\nmedian of " << runs
              << " runs (CUDA events, after warm-up) against std::merge on one CPU core.\n"
              << "Device copy bandwidth (read + write): " << floorBw / 1e9 << " GB/s.\n\n";
    std::printf("%6s %10s %11s %11s %12s %9s %10s\n", "d", "merges", "GPU ms", "CPU ms", "GPU Melem/s",
                "CPU/GPU", "% of copy");
    std::ofstream csv;
    if (!csvPath.empty()) {
        csv.open(csvPath);
        if (!csv) throw Error("cannot write " + csvPath);
        csv << "d,merges,gpu_ms,cpu_ms,gpu_elements_per_s,cpu_over_gpu,percent_of_copy_bandwidth\n";
    }
    bool allOk = true;
    for (int d : sizes) {
        const int nA = d / 2, nB = d - nA;
        const long long count = std::max(1LL, total / d);
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
        if (!c) allOk = printCheck(c, "timing run");
        const double elems = static_cast<double>(count) * d;
        const double rate = elems / (gpu.medianMs * 1e-3);
        const double pct = 100.0 * (2.0 * elems * sizeof(int)) / (gpu.medianMs * 1e-3) / floorBw;
        std::printf("%6d %10lld %11.3f %11.3f %12.1f %9.1f %9.1f%%\n", d, count, gpu.medianMs, cpu.medianMs,
                    rate / 1e6, cpu.medianMs / gpu.medianMs, pct);
        if (csv) csv << d << "," << count << "," << gpu.medianMs << "," << cpu.medianMs << "," << rate << ","
                     << cpu.medianMs / gpu.medianMs << "," << pct << "\n";
    }
    std::cout << "\nSmall d wastes the GPU: a block of d threads leaves most of each multiprocessor idle.\n"
              << "Part 2 (Q3) packs several merges into one block.\n";
    if (!csvPath.empty()) std::cout << "Wrote " << csvPath << "\n";
    return allOk;
}

int run(int argc, char** argv) {
    Cli cli("part1", "Part 1 of the merge sort lab: merge path in one block (Q1), many merges (Q2).");
    cli.option("a", "LIST", "sorted array A to draw and merge, e.g. 1,3,5 (default: the handout's)")
        .option("b", "LIST", "sorted array B, e.g. 2,4 (default: the handout's)")
        .option("thread", "K", "whose diagonal and binary search to show (default: the middle one)")
        .option("na", "N", "|A| of the random GPU check (default 300)")
        .option("nb", "N", "|B| of the random GPU check (default 700)")
        .option("seed", "S", "seed of the random inputs (default 1)")
        .option("total", "N", "elements per row of the timing table (default 16777216)")
        .option("runs", "N", "timed runs per row, median reported (default 9)")
        .option("csv", "FILE", "also write the timing table to FILE")
        .flag("no-draw", "skip the drawing")
        .flag("no-bench", "skip the timing table");
    if (!cli.parse(argc, argv)) return 0;

    std::vector<int> A = {1, 2, 5, 6, 6, 9, 11, 15, 16}, B = {4, 7, 8, 10, 12, 13, 14};
    if (cli.has("a") || cli.has("b")) {
        A = cli.intList("a");
        B = cli.intList("b");
    }
    requireSorted(A, "a");
    requireSorted(B, "b");
    const long long d = static_cast<long long>(A.size() + B.size());
    const long long thread = cli.integer("thread", d / 2, 0, std::max(0LL, d - 1));
    const int na = static_cast<int>(cli.integer("na", 300, 0, kMaxSmallMerge));
    const int nb = static_cast<int>(cli.integer("nb", 700, 0, kMaxSmallMerge));
    if (na + nb > kMaxSmallMerge)
        throw UsageError("--na + --nb = " + std::to_string(na + nb) + " exceeds " +
                         std::to_string(kMaxSmallMerge) + ", the most one block merges");
    const std::uint64_t seed = cli.seed("seed", 1);
    const long long total = cli.integer("total", 1LL << 24, 1024, 1LL << 30);
    const int runs = static_cast<int>(cli.integer("runs", 9, 1, 1000));
    const std::string csvPath = cli.string("csv", "");

    printBanner("Part 1: merge path (Q1-Q2)", part1Implementation());
    if (!cli.has("no-draw")) drawExample(A, B, thread);

    if (!gpuReadyOrSayWhy()) return 1;
    if (d > kMaxSmallMerge) throw UsageError("|A| + |B| = " + std::to_string(d) + " exceeds 1024, the most one block merges");

    bool ok = gpuMergeChecked(A, B, "|A|=" + std::to_string(A.size()) + " |B|=" + std::to_string(B.size()));
    const std::vector<int> RA = sortedKeys(InputKind::Random, na, caseSeed(seed, 1));
    const std::vector<int> RB = sortedKeys(InputKind::Random, nb, caseSeed(seed, 2));
    ok &= gpuMergeChecked(RA, RB, "random |A|=" + std::to_string(na) + " |B|=" + std::to_string(nb) +
                                      " seed=" + std::to_string(seed));
    std::cout << "\n";
    if (!cli.has("no-bench")) ok &= timingStudy(total, runs, seed, csvPath);
    return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    return runMain("part1", [&] { return run(argc, argv); });
}
