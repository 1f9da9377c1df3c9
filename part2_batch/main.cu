// ./part2: the Part 2 demo (Q3-Q4).
//
//   1. draws, for a tiny batch, which block and thread serve which pair and
//      output (the index math of Q3), and the rounds of the small sort (Q4);
//   2. runs that batch and a larger random one on the GPU and checks them;
//   3. times both kernels for d = 4..1024 against Thrust, CUB and std::.
#include "bench_peers.hpp"
#include "part2.cuh"

#include "../common/checks.hpp"
#include "../common/cli.hpp"
#include "../common/device_buffer.hpp"
#include "../common/gpu.hpp"
#include "../common/inputs.hpp"
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

// A batch: N segments of d keys and, for merges, each pair's split.
struct Batch {
    int d = 0;
    long long N = 0;
    std::vector<int> keys, split;
};

// Random pairs; keys in [0, 100) when `small` (for drawings), else the whole int range.
Batch randomPairs(int d, long long N, std::uint64_t seed, bool small) {
    Rng rng(seed);
    Batch b{d, N, randomKeys(static_cast<std::size_t>(N) * d, seed), {}};
    if (small)
        for (int& k : b.keys) k = static_cast<int>(rng.below(100));
    for (long long p = 0; p < N; ++p) {
        const int s = static_cast<int>(rng.below(d + 1));
        const auto seg = b.keys.begin() + p * d;
        std::sort(seg, seg + s);
        std::sort(seg + s, seg + d);
        b.split.push_back(s);
    }
    return b;
}

std::vector<int> cpuMerges(const Batch& b) {
    std::vector<int> out(b.keys.size());
    for (long long p = 0; p < b.N; ++p) {
        const auto seg = b.keys.begin() + p * b.d;
        std::merge(seg, seg + b.split[p], seg + b.split[p], seg + b.d, out.begin() + p * b.d);
    }
    return out;
}

std::vector<int> cpuSorts(std::vector<int> keys, int d) {
    for (std::size_t p = 0; p * d < keys.size(); ++p) std::sort(keys.begin() + p * d, keys.begin() + (p + 1) * d);
    return keys;
}

std::string segment(const std::vector<int>& v, std::size_t from, std::size_t to, int runWidth = 0) {
    std::string s;
    for (std::size_t i = from; i < to; ++i) {
        if (i > from) s += (runWidth > 0 && (i - from) % runWidth == 0) ? " | " : " ";
        s += std::to_string(v[i]);
    }
    return "[" + s + "]";
}

// Q3's index math, block by block, for a tiny batch.
void drawIndexMath(const Batch& b, int tpb) {
    const int perBlock = tpb / b.d;
    const long long blocks = (b.N + perBlock - 1) / perBlock;
    std::cout << "Batch merge of N = " << b.N << " pairs, d = " << b.d << ": " << tpb
              << " threads per block, so " << perBlock << " pairs per block and " << blocks << " blocks.\n"
              << "  tidx = threadIdx.x % d        (the output, i.e. diagonal, within the pair)\n"
              << "  Qt   = threadIdx.x / d        (the pair within the block)\n"
              << "  gbx  = Qt + blockIdx.x * (blockDim.x / d)   (the pair within the batch)\n\n";
    for (long long blk = 0; blk < blocks; ++blk) {
        std::cout << paint("block " + std::to_string(blk), Colour::Bold) << "\n";
        std::string rows[4] = {"  threadIdx.x", "  tidx       ", "  Qt         ", "  gbx        "};
        for (int t = 0; t < tpb; ++t) {
            const long long gbx = t / b.d + blk * perBlock;
            char cell[4][12];
            std::snprintf(cell[0], sizeof cell[0], "%3d", t);
            std::snprintf(cell[1], sizeof cell[1], "%3d", t % b.d);
            std::snprintf(cell[2], sizeof cell[2], "%3d", t / b.d);
            std::snprintf(cell[3], sizeof cell[3], "%3lld", gbx);
            const bool idle = gbx >= b.N;
            const Colour c = idle ? Colour::Dim : (gbx % 2 ? Colour::Cyan : Colour::Yellow);
            for (int r = 0; r < 4; ++r) rows[r] += paint(idle && r == 3 ? "  -" : cell[r], c);
        }
        for (const auto& r : rows) std::cout << r << "\n";
        for (int q = 0; q < perBlock; ++q) {
            const long long p = q + blk * perBlock;
            if (p >= b.N) {
                std::cout << "  (threads " << q * b.d << ".." << (q + 1) * b.d - 1
                          << " have gbx >= N: they load and store nothing)\n";
                continue;
            }
            const std::size_t at = static_cast<std::size_t>(p) * b.d;
            std::cout << "  pair " << p << ": A = " << segment(b.keys, at, at + b.split[p])
                      << "  B = " << segment(b.keys, at + b.split[p], at + b.d) << "\n";
        }
        std::cout << "\n";
    }
}

// Q4's rounds on one array, mirroring sortSmall_k: runs of w merged pairwise.
void drawSortRounds(std::vector<int> v) {
    const int d = static_cast<int>(v.size());
    std::cout << "Batch sort, one array of d = " << d << " (every array of the batch does the same, at once);\n"
              << "round w merges neighbouring runs of w values into runs of 2w:\n";
    std::cout << "  start  " << segment(v, 0, d, 1) << "\n";
    for (int w = 1; w < d; w *= 2) {
        std::vector<int> next(d);
        for (int start = 0; start < d; start += 2 * w) {
            const int mid = std::min(start + w, d), end = std::min(start + 2 * w, d);
            std::merge(v.begin() + start, v.begin() + mid, v.begin() + mid, v.begin() + end, next.begin() + start);
        }
        v = next;
        char label[16];
        std::snprintf(label, sizeof label, "  w=%-4d", w);
        std::cout << label << " " << segment(v, 0, d, 2 * w) << "\n";
    }
    std::cout << "\n";
}

// Runs Q3 and Q4 on a batch and checks both against the CPU.
bool gpuBatchChecked(const Batch& b, int tpb, const std::string& what) {
    DeviceBuffer<int> dIn(b.keys.size()), dSplit(b.split.size()), dOut(b.keys.size());
    dIn.upload(b.keys);
    dSplit.upload(b.split);
    mergeSmallBatch(dIn.data(), dSplit.data(), dOut.data(), b.d, b.N, tpb);
    bool ok = printCheck(checkDeviceOutput(dOut, cpuMerges(b), what), "GPU mergeSmallBatch, " + what);
    dOut.poison();
    sortSmall(dIn.data(), dOut.data(), b.d, b.N, tpb);
    ok &= printCheck(checkDeviceOutput(dOut, cpuSorts(b.keys, b.d), what), "GPU sortSmall,      " + what);
    return ok;
}

struct Row {
    int d;
    long long N;
    double ours, peer, cpu;
};

void printTable(const char* title, const char* peerName, const char* cpuName, const std::vector<Row>& rows) {
    std::cout << title << "\n";
    std::printf("%6s %9s %10s %12s %10s %10s %10s %10s\n", "d", "N", "ours ms", "Melem/s", peerName, "peer/ours",
                cpuName, "cpu/ours");
    for (const Row& r : rows)
        std::printf("%6d %9lld %10.3f %12.1f %10.3f %10.2f %10.2f %10.1f\n", r.d, r.N, r.ours,
                    r.N * double(r.d) / (r.ours * 1e3), r.peer, r.peer / r.ours, r.cpu, r.cpu / r.ours);
    std::cout << "\n";
}

bool timingStudy(long long total, int runs, std::uint64_t seed, const std::string& csvPath) {
    const std::vector<int> sizes = {4, 8, 16, 32, 64, 100, 128, 256, 500, 512, 1000, 1024};
    std::cout << "Timing: about " << total << " keys per row, N = total / d, random splits;\n"
              << "median of " << runs << " runs (CUDA events, after warm-up); CPU columns on one core.\n\n";
    std::vector<Row> merges, sorts;
    bool ok = true;
    for (int d : sizes) {
        const long long N = total / d;
        const Batch b = randomPairs(d, N, caseSeed(seed, d), false);
        const std::size_t n = b.keys.size();
        DeviceBuffer<int> dIn(n), dSplit(N), dOut(n);
        dIn.upload(b.keys);
        dSplit.upload(b.split);

        // Q3 and its peers.
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
        const Timing thrust = timeGpu([&] {
            peers::thrustMergeTuples(dAp.data(), dAk.data(), aKey.size(), dBp.data(), dBk.data(), bKey.size(),
                                     dOutPair.data(), dOut.data());
        }, 2, runs);
        if (c) c = checkEqual(dOut.download(), expected, "thrust d=" + std::to_string(d));
        merges.push_back({d, N, q3.medianMs, thrust.medianMs, cpuMerge.medianMs});

        // Q4 and its peers.
        const Timing q4 = timeGpu([&] { sortSmall(dIn.data(), dOut.data(), d, N); }, 2, runs);
        const Timing cpuSort = timeCpu([&] { expected = cpuSorts(b.keys, d); }, 0, std::min(runs, 3));
        if (c) c = checkEqual(dOut.download(), expected, "sortSmall d=" + std::to_string(d));
        peers::CubSegmentedSort cub(d, N);
        const Timing cubT = timeGpu([&] { cub.run(dIn.data(), dOut.data()); }, 2, runs);
        if (c) c = checkEqual(dOut.download(), expected, "cub d=" + std::to_string(d));
        sorts.push_back({d, N, q4.medianMs, cubT.medianMs, cpuSort.medianMs});
        if (!c) ok = printCheck(c, "timing run");
    }
    printTable("Q3 mergeSmallBatch against thrust::merge of (pair, key) tuples and std::merge", "thrust ms", "CPU ms", merges);
    printTable("Q4 sortSmall against cub::DeviceSegmentedSort::StableSortKeys and std::sort", "CUB ms", "CPU ms", sorts);
    if (!csvPath.empty()) {
        std::ofstream csv(csvPath);
        if (!csv) throw Error("cannot write " + csvPath);
        csv << "question,d,N,ours_ms,peer,peer_ms,cpu_ms,elements_per_s\n";
        for (const Row& r : merges)
            csv << "Q3," << r.d << "," << r.N << "," << r.ours << ",thrust::merge," << r.peer << "," << r.cpu << ","
                << r.N * double(r.d) / (r.ours * 1e-3) << "\n";
        for (const Row& r : sorts)
            csv << "Q4," << r.d << "," << r.N << "," << r.ours << ",cub::DeviceSegmentedSort," << r.peer << ","
                << r.cpu << "," << r.N * double(r.d) / (r.ours * 1e-3) << "\n";
        std::cout << "Wrote " << csvPath << "\n";
    }
    return ok;
}

int run(int argc, char** argv) {
    Cli cli("part2", "Part 2 of the merge sort lab: batch merge (Q3) and batch sort (Q4) of small arrays.");
    cli.option("d", "D", "size of each pair / array in the drawn batch, 1..32 (default 8)")
        .option("n", "N", "number of pairs / arrays in the drawn batch, 1..64 (default 5)")
        .option("tpb", "T", "threads per block of the drawn batch, a multiple of d (default 3*d)")
        .option("seed", "S", "seed of the random inputs (default 1)")
        .option("total", "N", "keys per row of the timing tables (default 16777216)")
        .option("runs", "N", "timed runs per row, median reported (default 9)")
        .option("csv", "FILE", "also write the timing tables to FILE")
        .flag("no-draw", "skip the drawing")
        .flag("no-bench", "skip the timing tables");
    if (!cli.parse(argc, argv)) return 0;
    const int d = static_cast<int>(cli.integer("d", 8, 1, 32));
    const long long N = cli.integer("n", 5, 1, 64);
    const int tpbAsked = static_cast<int>(cli.integer("tpb", 3 * d, 1, kMaxBatchD));
    if (tpbAsked % d != 0)
        throw UsageError("--tpb = " + std::to_string(tpbAsked) + " must be a multiple of --d = " + std::to_string(d));
    const std::uint64_t seed = cli.seed("seed", 1);
    const long long total = cli.integer("total", 1LL << 24, 1024, 1LL << 30);
    const int runs = static_cast<int>(cli.integer("runs", 9, 1, 1000));
    const std::string csvPath = cli.string("csv", "");

    printBanner("Part 2: batch merge and batch sort (Q3-Q4)", part2Implementation());
    const Batch tiny = randomPairs(d, N, caseSeed(seed, 1), true);
    if (!cli.has("no-draw")) {
        drawIndexMath(tiny, tpbAsked);
        Rng rng(caseSeed(seed, 2));
        std::vector<int> unsorted(d);
        for (int& k : unsorted) k = static_cast<int>(rng.below(100));
        drawSortRounds(unsorted);
    }

    if (!gpuReadyOrSayWhy()) return 1;
    bool ok = gpuBatchChecked(tiny, tpbAsked, "the drawn batch, d=" + std::to_string(d) + " N=" + std::to_string(N));
    ok &= gpuBatchChecked(randomPairs(300, 10000, caseSeed(seed, 3), false), 0,
                          "random batch, d=300 N=10000 seed=" + std::to_string(seed));
    std::cout << "\n";
    if (!cli.has("no-bench")) ok &= timingStudy(total, runs, seed, csvPath);
    return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    return runMain("part2", [&] { return run(argc, argv); });
}
