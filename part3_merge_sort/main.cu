// ./part3: the Part 3 demo (Q5-Q7).
//
//   1. draws the partition stage on the merge path grid of small inputs: the
//      tile boundaries (diagonals) and where each meets the path;
//   2. merges and sorts a random array on the GPU and checks both;
//   3. compares with CCCL, std:: and the naive GPU merges (tables, ratios);
//   4. the Q7 study: time against n for every launch shape;
//   --huge N sorts N keys (more than 2^31 if memory allows) and checks them.
#include "bench_peers.hpp"
#include "part3.cuh"

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
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

using namespace lab;

namespace {

void requireSorted(const std::vector<int>& v, const char* name) {
    if (!std::is_sorted(v.begin(), v.end()))
        throw UsageError(std::string("--") + name + " must be sorted ascending");
}

// The partition stage, drawn: tile boundaries every `tile` outputs.
void drawPartition(const std::vector<int>& A, const std::vector<int>& B, int tile) {
    const long long n = static_cast<long long>(A.size() + B.size());
    std::vector<long long> bounds;
    for (long long k = 0; k <= n; k += tile) bounds.push_back(k);
    std::cout << "The partition stage with tiles of " << tile << " outputs: each tile boundary is a diagonal ("
              << paint("/", Colour::Cyan) << "),\nand one diagonal search per boundary finds where it meets the path ("
              << paint("@", Colour::Magenta) << "). Block t then merges only what lies between its two crossings.\n\n";
    if (A.size() > kMaxDrawnSide || B.size() > kMaxDrawnSide) {
        std::cout << "(the grid is drawn for inputs up to " << kMaxDrawnSide << " x " << kMaxDrawnSide << ")\n\n";
        return;
    }
    drawMergeGrid(std::cout, A, B, bounds);
    std::vector<Step> steps;
    mergePathSequential(A, B, &steps);
    const std::vector<GridPoint> points = pathPoints(steps);
    std::cout << "\n";
    for (std::size_t t = 0; t + 1 < bounds.size() || (t < bounds.size() && bounds[t] < n); ++t) {
        const GridPoint p = points[bounds[t]];
        const GridPoint q = points[std::min(bounds[t] + tile, n)];
        std::cout << "  block " << t << ": outputs [" << bounds[t] << ", " << std::min(bounds[t] + tile, n)
                  << ")  from A[" << p.i << ", " << q.i << ") and B[" << p.j << ", " << q.j << ")\n";
    }
    std::cout << "\n";
}

bool checkedRun(long long n, std::uint64_t seed) {
    const std::vector<int> A = sortedKeys(InputKind::Random, n / 2, caseSeed(seed, 5));
    const std::vector<int> B = sortedKeys(InputKind::Random, n - n / 2, caseSeed(seed, 6));
    DeviceBuffer<int> dA(A.size()), dB(B.size()), dM(n);
    dA.upload(A);
    dB.upload(B);
    mergeLarge(dA.data(), (long long)A.size(), dB.data(), (long long)B.size(), dM.data());
    std::vector<int> expected(n);
    std::merge(A.begin(), A.end(), B.begin(), B.end(), expected.begin());
    const std::string what = "n=" + std::to_string(n) + " seed=" + std::to_string(seed);
    bool ok = printCheck(checkDeviceOutput(dM, expected, what), "GPU mergeLarge, random " + what);

    const std::vector<int> keys = randomKeys(n, caseSeed(seed, 7));
    DeviceBuffer<int> d(n);
    d.upload(keys);
    mergeSort(d.data(), n);
    expected = keys;
    std::sort(expected.begin(), expected.end());
    ok &= printCheck(checkDeviceOutput(d, expected, what), "GPU mergeSort,  random " + what);
    return ok;
}

// --huge: sort n keys, check order and an order-independent fingerprint.
std::pair<std::uint64_t, std::uint64_t> fingerprint(const std::vector<int>& v) {
    std::uint64_t sum = 0, mix = 0;
    for (int k : v) {
        std::uint64_t z = static_cast<std::uint32_t>(k) * 0x9E3779B97F4A7C15ull;
        z ^= z >> 29;
        sum += static_cast<std::uint32_t>(k);
        mix += z * 0xBF58476D1CE4E5B9ull;
    }
    return {sum, mix};
}

bool hugeSort(long long n, std::uint64_t seed) {
    const std::size_t need = 2 * static_cast<std::size_t>(n) * sizeof(int);
    const std::size_t have = freeDeviceBytes();
    if (need > have)
        throw Error("sorting " + std::to_string(n) + " keys needs " + formatBytes(double(need)) +
                    " of device memory (keys + temporary), the device has " + formatBytes(double(have)) + " free");
    std::cout << "Sorting " << n << " random keys (" << formatBytes(double(n) * sizeof(int)) << ")...\n";
    std::vector<int> keys = randomKeys(n, caseSeed(seed, 99));
    const auto before = fingerprint(keys);
    DeviceBuffer<int> d(n, 0);
    d.upload(keys);
    const Timing t = timeGpu([&] { mergeSort(d.data(), n); }, 0, 1);
    keys = d.download();
    const bool sorted = std::is_sorted(keys.begin(), keys.end());
    const bool same = fingerprint(keys) == before;
    std::printf("mergeSort of %lld keys: %.1f ms (%.2f Gkeys/s); sorted: %s; same keys (fingerprint): %s\n", n,
                t.medianMs, n / (t.medianMs * 1e6), sorted ? "yes" : "NO", same ? "yes" : "NO");
    return sorted && same;
}

struct Column {
    std::string name;
    double ms;  // < 0: not run
};

void printRow(long long n, const std::vector<Column>& cols, bool header) {
    if (header) {
        std::printf("%11s", "n");
        for (const auto& c : cols) std::printf(" %12s", c.name.c_str());
        std::printf("\n");
    }
    std::printf("%11lld", n);
    for (const auto& c : cols) {
        if (c.ms < 0) std::printf(" %12s", "-");
        else std::printf(" %12.3f", c.ms);
    }
    std::printf("   ours: %.2f Gkeys/s;", n / (cols[0].ms * 1e6));
    for (std::size_t i = 1; i < cols.size(); ++i)
        if (cols[i].ms >= 0) std::printf(" %s %.2fx", cols[i].name.c_str(), cols[i].ms / cols[0].ms);
    std::printf("\n");
}

// Time of an in-place sort: (restore input + sort) minus (restore input).
double sortMs(DeviceBuffer<int>& work, const DeviceBuffer<int>& pristine, long long n, int runs,
              const std::function<void()>& sort) {
    const auto restore = [&] {
        CUDA_CHECK(cudaMemcpyAsync(work.data(), pristine.data(), n * sizeof(int), cudaMemcpyDeviceToDevice));
    };
    const Timing both = timeGpu([&] { restore(); sort(); }, 2, runs);
    const Timing copy = timeGpu(restore, 2, runs);
    return std::max(both.medianMs - copy.medianMs, 1e-3);
}

void comparisons(int runs, std::uint64_t seed, std::ofstream& csv) {
    std::cout << "Q5: merging |A| = |B| = n/2 random keys (ms, median of " << runs << "; ratios = peer time / ours)\n";
    bool header = true;
    for (long long n : {1LL << 16, 1LL << 20, 1LL << 24, 1LL << 27}) {
        const auto A = sortedKeys(InputKind::Random, n / 2, caseSeed(seed, n, 1));
        const auto B = sortedKeys(InputKind::Random, n / 2, caseSeed(seed, n, 2));
        DeviceBuffer<int> dA(n / 2, 0), dB(n / 2, 0), dM(n, 0);
        dA.upload(A);
        dB.upload(B);
        const long long h = n / 2;
        std::vector<Column> cols = {
            {"ours", timeGpu([&] { mergeLarge(dA.data(), h, dB.data(), h, dM.data()); }, 2, runs).medianMs},
            {"thrust", timeGpu([&] { peers::thrustMerge(dA.data(), h, dB.data(), h, dM.data()); }, 2, runs).medianMs},
            {"rank-naive", timeGpu([&] { peers::rankMerge(dA.data(), h, dB.data(), h, dM.data()); }, 1, runs).medianMs},
            {"1-thread", n <= (1 << 16) ? timeGpu([&] { peers::oneThreadMerge(dA.data(), h, dB.data(), h, dM.data()); }, 0, 1).medianMs : -1},
            {"std::merge", timeCpu([&] {
                 std::vector<int> M(n);
                 std::merge(A.begin(), A.end(), B.begin(), B.end(), M.begin());
             }, 0, std::min(runs, 3)).medianMs}};
        printRow(n, cols, header);
        header = false;
        if (csv) for (const auto& c : cols) if (c.ms >= 0) csv << "Q5," << c.name << ",-,-," << n << "," << c.ms << "," << n / (c.ms * 1e-3) << "\n";
    }
    std::cout << "\nQ6: sorting n random keys\n";
    header = true;
    for (long long n : {1LL << 16, 1LL << 20, 1LL << 24, 1LL << 27}) {
        const auto keys = randomKeys(n, caseSeed(seed, n, 3));
        DeviceBuffer<int> pristine(n, 0), work(n, 0), temp(n, 0);
        pristine.upload(keys);
        peers::CubMergeSort cub(n);
        std::vector<Column> cols = {
            {"ours", sortMs(work, pristine, n, runs, [&] { mergeSort(work.data(), n); })},
            {"cub-merge", sortMs(work, pristine, n, runs, [&] { cub.run(work.data()); })},
            {"thrust-sort", sortMs(work, pristine, n, runs, [&] { peers::thrustSort(work.data(), n); })},
            {"rank-naive", sortMs(work, pristine, n, std::min(runs, 3), [&] { peers::rankMergeSort(work.data(), temp.data(), n); })},
            {"std::sort", n <= (1 << 24) ? timeCpu([&] {
                 auto copy = keys;
                 std::sort(copy.begin(), copy.end());
             }, 0, std::min(runs, 3)).medianMs : -1}};
        printRow(n, cols, header);
        header = false;
        if (csv) for (const auto& c : cols) if (c.ms >= 0) csv << "Q6," << c.name << ",-,-," << n << "," << c.ms << "," << n / (c.ms * 1e-3) << "\n";
    }
    std::cout << "(thrust::sort is a radix sort for int keys: the bar a comparison sort is not expected to reach)\n\n";
}

void shapeStudy(int maxLog2, int runs, std::uint64_t seed, std::ofstream& csv) {
    std::cout << "Q7: mergeSort time (ms) and Gkeys/s against n, for every launch shape (threads x items)\n";
    std::printf("%11s", "n");
    for (const auto& s : studyShapes()) std::printf(" %14s", (std::to_string(s.threads) + "x" + std::to_string(s.itemsPerThread)).c_str());
    std::printf("\n");
    for (int lg = 10; lg <= maxLog2; lg += 2) {
        const long long n = 1LL << lg;
        const auto keys = randomKeys(n, caseSeed(seed, n, 4));
        DeviceBuffer<int> pristine(n, 0), work(n, 0);
        pristine.upload(keys);
        std::printf("%11lld", n);
        for (const auto& s : studyShapes()) {
            const double ms = sortMs(work, pristine, n, runs, [&] { mergeSortShaped(work.data(), n, s); });
            char cell[32];
            std::snprintf(cell, sizeof cell, "%.3f/%.2f", ms, n / (ms * 1e6));
            std::printf(" %14s", cell);
            if (csv) csv << "Q7,mergeSort," << s.threads << "," << s.itemsPerThread << "," << n << "," << ms << "," << n / (ms * 1e-3) << "\n";
        }
        std::printf("\n");
    }
    std::cout << "\n";
}

int run(int argc, char** argv) {
    Cli cli("part3", "Part 3 of the merge sort lab: large merge (Q5), merge sort (Q6), launch-shape study (Q7).");
    cli.option("a", "LIST", "sorted array A to draw (default: a random one of 12)")
        .option("b", "LIST", "sorted array B to draw (default: a random one of 10)")
        .option("tile", "T", "tile size of the drawing, 1..64 (default 5)")
        .option("n", "N", "size of the checked random merge and sort (default 10000000)")
        .option("max-log2", "L", "largest n of the Q7 study is 2^L, 10..31 (default 28)")
        .option("huge", "N", "sort N random keys and check them (e.g. 2200000000), then exit")
        .option("seed", "S", "seed of the random inputs (default 1)")
        .option("runs", "N", "timed runs per measurement, median reported (default 7)")
        .option("csv", "FILE", "also write every timing to FILE")
        .flag("no-draw", "skip the drawing")
        .flag("no-bench", "skip the tables");
    if (!cli.parse(argc, argv)) return 0;
    const std::uint64_t seed = cli.seed("seed", 1);
    std::vector<int> A = sortedKeys(InputKind::FewDistinct, 12, caseSeed(seed, 10)), B;
    B = sortedKeys(InputKind::FewDistinct, 10, caseSeed(seed, 11));
    for (int& k : A) k = static_cast<int>((static_cast<long long>(k) - INT32_MIN) >> 26);
    for (int& k : B) k = static_cast<int>((static_cast<long long>(k) - INT32_MIN) >> 26);
    if (cli.has("a") || cli.has("b")) {
        A = cli.intList("a");
        B = cli.intList("b");
    }
    requireSorted(A, "a");
    requireSorted(B, "b");
    const int tile = static_cast<int>(cli.integer("tile", 5, 1, 64));
    const long long n = cli.integer("n", 10000000, 0, 1LL << 40);
    const int maxLog2 = static_cast<int>(cli.integer("max-log2", 28, 10, 31));
    const long long huge = cli.integer("huge", 0, 1, 1LL << 40);
    const int runs = static_cast<int>(cli.integer("runs", 7, 1, 1000));
    const std::string csvPath = cli.string("csv", "");

    printBanner("Part 3: merge sort of any size (Q5-Q7)", part3Implementation());
    if (!cli.has("no-draw") && !cli.has("huge")) drawPartition(A, B, tile);

    if (!gpuReadyOrSayWhy()) return 1;
    // Keep freed temporary memory in the pool between launches, so timings
    // do not include the driver handing memory back and forth.
    cudaMemPool_t pool;
    CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
    std::uint64_t keep = UINT64_MAX;
    CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));

    if (cli.has("huge")) return hugeSort(huge, seed) ? 0 : 1;
    bool ok = checkedRun(n, seed);
    std::cout << "\n";
    if (!cli.has("no-bench")) {
        std::ofstream csv;
        if (!csvPath.empty()) {
            csv.open(csvPath);
            if (!csv) throw Error("cannot write " + csvPath);
            csv << "question,what,threads,items,n,ms,keys_per_s\n";
        }
        comparisons(runs, seed, csv);
        shapeStudy(maxLog2, runs, seed, csv);
        if (csv) std::cout << "Wrote " << csvPath << "\n";
    }
    return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    return runMain("part3", [&] { return run(argc, argv); });
}
