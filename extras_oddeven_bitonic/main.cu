// ./extras: the extras' demo (X1-X4, bonus).
//
//   1. draws the odd-even transposition and bitonic networks for a few values
//      (--n, --step), checked against the linked one-block kernels (drawing.cpp);
//   2. checks every kernel on random inputs on the GPU;
//   3. times them against Part 3's mergeSort, cub::DeviceMergeSort, std::sort;
//   --bug NAME runs a known-buggy variant many times (bug_gallery.hpp; the
//   instructors' copy only).
#include "bug_gallery.hpp"
#include "drawing.hpp"
#include "extras.cuh"

#include "../common/checks.hpp"
#include "../common/cli.hpp"
#include "../common/device_buffer.hpp"
#include "../common/gpu.hpp"
#include "../common/inputs.hpp"
#include "../common/study.hpp"
#include "../common/term.hpp"
#include "../common/timer.hpp"
#include "../part3_merge_sort/bench_peers.hpp"
#include "../part3_merge_sort/part3.cuh"

#include <algorithm>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

using namespace lab;

namespace {

using Sort = std::function<void(int*, long long)>;

struct Kernel {
    const char* name;
    Sort sort;
    long long maxN;  // the largest n it is timed at
};

std::vector<Kernel> kernels() {
    return {{"X1 oddEvenSortBlock", [](int* d, long long n) { oddEvenSortBlock(d, static_cast<int>(n)); }, kMaxBlockSort},
            {"X2 oddEvenSort", [](int* d, long long n) { oddEvenSort(d, n); }, 1 << 16},
            {"X3 bitonicSortBlock", [](int* d, long long n) { bitonicSortBlock(d, static_cast<int>(n)); }, kMaxBlockSort},
            {"X4 bitonicSort", [](int* d, long long n) { bitonicSort(d, n); }, 1LL << 40}};
}

bool gpuChecks(std::uint64_t seed) {
    bool ok = true;
    for (const Kernel& k : kernels())
        // emulated: sizes past one block, but few (the many-block odd-even sort is n launches)
        for (long long n : {1000LL, static_cast<long long>(kMaxBlockSort), kEmulated ? 2500LL : 5001LL,
                            kEmulated ? 0LL : 1000003LL}) {
            if (n == 0) continue;
            if (n > k.maxN) continue;
            const std::vector<int> in = randomKeys(static_cast<std::size_t>(n), caseSeed(seed, n), 1000);
            DeviceBuffer<int> d(in.size());
            d.upload(in);
            k.sort(d.data(), n);
            std::vector<int> expected = in;
            std::sort(expected.begin(), expected.end());
            ok &= printCheck(checkDeviceOutput(d, expected, "n=" + std::to_string(n)),
                             std::string("GPU ") + k.name + ", random n=" + std::to_string(n));
        }
    return ok;
}

void timingStudy(int maxLog2, int runs, std::uint64_t seed, const std::string& csvPath) {
    const std::vector<Kernel> ks = kernels();
    StudyTable block("X1-X3", "one block, n = 2048: bitonic (X3) against odd-even (X1) and Part 3's mergeSort",
                     extrasImplementation());
    StudyTable many("X2-X4", "bitonicSort (X4) against odd-even on many blocks (X2), Part 3's mergeSort, CUB, std::sort",
                    extrasImplementation());
    for (long long n = kMaxBlockSort; n <= (1LL << maxLog2); n *= 4) {
        if (!many.fits(n, 17.0 * n)) continue;  // 2 arrays, CUB's and mergeSort's temporaries
        const std::vector<int> keys = randomKeys(static_cast<std::size_t>(n), caseSeed(seed, n, 9));
        DeviceBuffer<int> pristine(n, 0), work(n, 0);
        pristine.upload(keys);
        const auto time = [&](const Sort& s) { return inPlaceSortMs(work, pristine, [&] { s(work.data(), n); }, runs); };
        const double merge = time([](int* d, long long m) { mergeSort(d, m); });
        peers::CubMergeSort<int> cub(n);
        const double cubMs = time([&](int* d, long long) { cub.run(d); });
        const double cpu = n > (1 << 24) ? -1 : timeCpu([&] {
            auto copy = keys;
            std::sort(copy.begin(), copy.end());
        }, 0, std::min(runs, 3)).medianMs;
        if (n == kMaxBlockSort)
            block.add({n, 0, "", time(ks[2].sort), {{"X1 odd-even", time(ks[0].sort)}, {"mergeSort", merge}}});
        many.add({n, 0, "", time(ks[3].sort),
                  {{"X2 odd-even", n > ks[1].maxN ? -1 : time(ks[1].sort)}, {"mergeSort", merge},
                   {"cub::DeviceMergeSort", cubMs}, {"std::sort", cpu}}});
    }
    block.print();
    many.print();
    std::cout << "Odd-even transposition does n phases of n/2 comparisons: O(n^2) work. Bitonic does\n"
              << "O(n log^2 n), merge sort O(n log n): the step counts, not the GPU, set these curves apart.\n";
    for (const StudyTable* t : {&block, &many}) t->appendCsv(csvPath);
    if (!csvPath.empty()) std::cout << "Wrote " << csvPath << "\n";
}

int run(int argc, char** argv) {
    Cli cli("extras", "Extras (bonus): odd-even transposition sort (X1-X2) and bitonic sort (X3-X4).");
    cli.option("n", "N", "values in the drawn networks, 2..16 (default 8)")
        .option("max-log2", "L", "largest n of the timing table is 2^L, 11..28 (default 24)");
    if (!bugGallery().empty())  // the gallery is instructor material: a student's copy has no --bug
        cli.option("bug", "NAME", "run a known-buggy variant many times (--bug list names them)")
            .option("trials", "N", "runs of the --bug variant (default 100)")
            .option("timeout", "S", "seconds before a --bug trial counts as hung (default 5)")
            .flag("in-process", "run the --bug trials in this process (for compute-sanitizer; no hang timeout)");
    cli.demoOptions(5, "the networks' steps");
    if (!cli.parse(argc, argv)) return 0;
    const int n = static_cast<int>(cli.integer("n", 8, 2, 16));
    const std::uint64_t seed = cli.seed("seed", 1);
    const int maxLog2 = static_cast<int>(cli.integer("max-log2", 24, 11, 28));
    const int runs = static_cast<int>(cli.integer("runs", 5, 1, 1000));
    const std::string csvPath = cli.string("csv", "");
    if (cli.has("bug"))  // before anything touches CUDA: the gallery forks
        return runBugGallery(cli.string("bug", ""), static_cast<int>(cli.integer("trials", 100, 1, 100000)),
                             static_cast<double>(cli.integer("timeout", 5, 1, 600)), cli.has("in-process"), seed);
    startStudyCsv(csvPath);
    setStepping(cli.has("step"));

    printBanner("Extras: odd-even transposition and bitonic sort (X1-X4, bonus)", extrasImplementation());
    const bool gpu = detectGpu().available;
    bool ok = true;
    if (!cli.has("no-draw")) {
        Rng rng(caseSeed(seed, 1));
        std::vector<int> values(n);
        for (int& v : values) v = static_cast<int>(rng.below(100));
        ok &= drawOddEvenNetwork(values, gpu) == 0;
        ok &= drawBitonicNetwork(values, gpu) == 0;
    }
    if (!gpuReadyOrSayWhy()) return 1;
    ok &= gpuChecks(seed);
    std::cout << "\n";
    if (kEmulated) std::cout << "\nemulated: not timed (the timing tables need a GPU)\n";
    else if (!cli.has("no-bench")) timingStudy(maxLog2, runs, seed, csvPath);
    return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    return runMain("extras", [&] { return run(argc, argv); });
}
