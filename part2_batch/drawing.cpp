#include "drawing.hpp"

#include "part2.cuh"

#include "../common/device_buffer.hpp"
#include "../common/inputs.hpp"
#include "../common/term.hpp"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>

namespace lab {

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

namespace {

// v[from, to) as "[a b | c d]" (a bar every runWidth values); values that
// differ from `expected` (when given) in red.
std::string segment(const std::vector<int>& v, std::size_t from, std::size_t to, int runWidth = 0,
                    const std::vector<int>* expected = nullptr) {
    std::string s;
    for (std::size_t i = from; i < to; ++i) {
        if (i > from) s += (runWidth > 0 && (i - from) % runWidth == 0) ? " | " : " ";
        const std::string text = std::to_string(v[i]);
        s += expected != nullptr && (*expected)[i] != v[i] ? paint(text, Colour::Red) : text;
    }
    return "[" + s + "]";
}

long long countWrong(const std::vector<int>& got, const std::vector<int>& expected) {
    long long wrong = 0;
    for (std::size_t i = 0; i < got.size(); ++i) wrong += got[i] != expected[i];
    return wrong;
}

}  // namespace

long long drawIndexMath(const Batch& b, int tpb, bool gpu) {
    const int perBlock = tpb / b.d;
    const long long blocks = (b.N + perBlock - 1) / perBlock;
    const std::vector<int> expected = cpuMerges(b);
    std::vector<int> linked;
    if (gpu) {
        DeviceBuffer<int> dIn(b.keys.size()), dSplit(b.split.size()), dOut(b.keys.size());
        dIn.upload(b.keys);
        dSplit.upload(b.split);
        mergeSmallBatch(dIn.data(), dSplit.data(), dOut.data(), b.d, b.N, tpb);
        linked = dOut.download();
    }
    std::cout << "Batch merge of N = " << b.N << " pairs, d = " << b.d << ": " << tpb
              << " threads per block, so " << perBlock << (perBlock == 1 ? " pair" : " pairs") << " per block and "
              << blocks << (blocks == 1 ? " block.\n" : " blocks.\n");
    std::cout << "  tidx: the output (diagonal) within the pair; Qt: the pair within the block; gbx: the pair\n"
              << "  within the batch. Their formulas are Q3's to find (handout.md, Q3's hints).\n\n";
    for (long long blk = 0; blk < blocks; ++blk) {
        std::cout << paint("block " + std::to_string(blk), Colour::Bold) << "\n";
        std::string rows[4] = {"  threadIdx.x", "  tidx       ", "  Qt         ", "  gbx        "};
        // The block's threads in order: pair after pair of the block, d each.
        for (int q = 0; q < perBlock; ++q) {
            const long long pair = blk * perBlock + q;
            const bool idle = pair >= b.N;
            const Colour c = idle ? Colour::Dim : (pair % 2 ? Colour::Cyan : Colour::Yellow);
            for (int out = 0; out < b.d; ++out) {
                const long long cells[4] = {q * b.d + out, out, q, pair};
                for (int r = 0; r < 4; ++r) {
                    char cell[24];
                    std::snprintf(cell, sizeof cell, "%3lld", cells[r]);
                    rows[r] += paint(idle && r == 3 ? "  -" : cell, c);
                }
            }
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
                      << "  B = " << segment(b.keys, at + b.split[p], at + b.d);
            if (gpu) std::cout << "  ->  " << segment(linked, at, at + b.d, 0, &expected);
            std::cout << "\n";
        }
        std::cout << "\n";
    }
    if (!gpu) return 0;
    const long long wrong = countWrong(linked, expected);
    std::cout << (wrong == 0 ? paint("The linked mergeSmallBatch merged every pair.", Colour::Green)
                             : paint("The linked mergeSmallBatch (" + std::string(part2Implementation()) + ") got " +
                                         std::to_string(wrong) + " outputs wrong (red).", Colour::Red))
              << "\n\n";
    return wrong;
}

long long drawSortRounds(const std::vector<int>& keys, bool gpu) {
    const int d = static_cast<int>(keys.size());
    std::cout << "Batch sort, one array of d = " << d << " (every array of the batch does the same, at once);\n"
              << "round w merges neighbouring runs of w values into runs of 2w"
              << (gpu ? ". Each row is what the linked sortSmall\nmakes of runs of 2w values (red: not what the "
                        "round must leave):\n"
                      : " (no GPU: the rows are the host's):\n");
    std::cout << "  start  " << segment(keys, 0, d, 1) << "\n";
    long long wrong = 0;
    std::vector<int> v = keys;
    for (int w = 1; w < d; w *= 2) {
        // What round w must leave: every run of 2w values of the input sorted.
        std::vector<int> expected = keys;
        for (int start = 0; start < d; start += 2 * w)
            std::stable_sort(expected.begin() + start, expected.begin() + std::min(start + 2 * w, d));
        v = expected;
        if (gpu) {  // the same by the linked kernel: full runs in one batch, the short last run alone
            const int full = d / (2 * w) * (2 * w);
            DeviceBuffer<int> dIn(d), dOut(d);
            dIn.upload(keys);
            if (full > 0) sortSmall(dIn.data(), dOut.data(), 2 * w, full / (2 * w));
            if (full < d) sortSmall(dIn.data() + full, dOut.data() + full, d - full, 1);
            v = dOut.download();
            wrong += countWrong(v, expected);
        }
        char label[16];
        std::snprintf(label, sizeof label, "  w=%-4d", w);
        std::cout << label << " " << segment(v, 0, d, 2 * w, &expected);
        pauseStep();
        std::cout << "\n";
    }
    if (gpu)
        std::cout << (wrong == 0 ? paint("The linked sortSmall leaves every round as it must.", Colour::Green)
                                 : paint("The linked sortSmall (" + std::string(part2Implementation()) + ") got " +
                                             std::to_string(wrong) + " values wrong (red).", Colour::Red))
                  << "\n";
    std::cout << "\n";
    return wrong;
}

}  // namespace lab
