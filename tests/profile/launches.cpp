// The launches tests/profile/compare_ncu.py profiles twice: under Nsight
// Compute on a GPU and with the emulator's profile (EMU_PROFILE), built from
// this one file both ways (make profile-launches, with or without
// EMULATE=1). Each case makes the same launches on both, on inputs from a
// fixed seed, at sizes the emulator runs in a second or two; every array
// starts 256-byte aligned on both (sizes are multiples of 64 keys), so that
// the sectors a request touches are the same.
//
//   ./profile_launches --list          the cases, one per line
//   ./profile_launches CASE...         runs them (all when none is named)
#include "../../common/cuda_check.hpp"
#include "../../common/device_buffer.hpp"
#include "../../common/inputs.hpp"
#include "../../common/tagged.hpp"
// the parts' interfaces, from their folders (the Makefile names them)
#include "extras.cuh"
#include "part1.cuh"
#include "part2.cuh"
#include "part3.cuh"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

using namespace lab;

namespace {

constexpr std::uint64_t kSeed = 38;

// n values 256 bytes into an allocation of their own on both builds (a GPU
// build's guard zones, an emulated build's exact allocations).
template <class T>
DeviceBuffer<T> deviceArray(std::size_t n) {
    return DeviceBuffer<T>(n, 256 / sizeof(T));
}

// Pairs of sorted halves, back to back: count pairs of nA then nB keys each,
// as A (all the A halves) and B (all the B halves).
void sortedPairs(long long count, int nA, int nB, std::vector<int>& A, std::vector<int>& B) {
    for (long long p = 0; p < count; ++p) {
        const auto a = sortedKeys(InputKind::Random, nA, caseSeed(kSeed, p, 1));
        const auto b = sortedKeys(InputKind::Random, nB, caseSeed(kSeed, p, 2));
        A.insert(A.end(), a.begin(), a.end());
        B.insert(B.end(), b.begin(), b.end());
    }
}

void mergeAtShape(LaunchShape shape) {
    constexpr long long h = 1 << 15;
    auto dA = deviceArray<int>(h), dB = deviceArray<int>(h), dM = deviceArray<int>(2 * h);
    dA.upload(sortedKeys(InputKind::Random, h, caseSeed(kSeed, 1)));
    dB.upload(sortedKeys(InputKind::Random, h, caseSeed(kSeed, 2)));
    mergeLargeShaped(dA.data(), h, dB.data(), h, dM.data(), shape);
}

void sortAtShape(LaunchShape shape) {
    constexpr long long n = 1 << 16;
    auto d = deviceArray<int>(n);
    d.upload(randomKeys(n, caseSeed(kSeed, 3)));
    mergeSortShaped(d.data(), n, shape);
}

void mergeTagged() {
    constexpr long long h = 1 << 14;
    auto dA = deviceArray<Tagged>(h), dB = deviceArray<Tagged>(h), dM = deviceArray<Tagged>(2 * h);
    dA.upload(tagKeys(sortedKeys(InputKind::Random, h, caseSeed(kSeed, 4)), 0));
    dB.upload(tagKeys(sortedKeys(InputKind::Random, h, caseSeed(kSeed, 5)), static_cast<int>(h)));
    mergeLarge(dA.data(), h, dB.data(), h, dM.data());
}

void manyMerges() {
    constexpr long long count = 64;
    constexpr int nA = 512, nB = 512;
    std::vector<int> A, B;
    sortedPairs(count, nA, nB, A, B);
    auto dA = deviceArray<int>(A.size()), dB = deviceArray<int>(B.size()), dM = deviceArray<int>(A.size() + B.size());
    dA.upload(A);
    dB.upload(B);
    mergeSmallMany(dA.data(), nA, dB.data(), nB, dM.data(), count);
}

// A batch of N segments of d keys: for the merge, each a sorted A of d / 2
// keys and a sorted B of the rest.
void batch(int d, bool merge) {
    const long long N = (1 << 16) / d;
    std::vector<int> in;
    if (merge) {
        for (long long p = 0; p < N; ++p) {
            const auto a = sortedKeys(InputKind::Random, d / 2, caseSeed(kSeed, p, 6));
            const auto b = sortedKeys(InputKind::Random, d - d / 2, caseSeed(kSeed, p, 7));
            in.insert(in.end(), a.begin(), a.end());
            in.insert(in.end(), b.begin(), b.end());
        }
    } else {
        in = randomKeys(static_cast<std::size_t>(N) * d, caseSeed(kSeed, 8));
    }
    auto dIn = deviceArray<int>(in.size()), dOut = deviceArray<int>(in.size());
    auto dSplit = deviceArray<int>(static_cast<std::size_t>(N));
    dIn.upload(in);
    dSplit.upload(std::vector<int>(static_cast<std::size_t>(N), d / 2));
    if (merge) mergeSmallBatch(dIn.data(), dSplit.data(), dOut.data(), d, N);
    else sortSmall(dIn.data(), dOut.data(), d, N);
}

void sortExtras(long long n, void (*sort)(int*, long long)) {
    auto d = deviceArray<int>(n);
    d.upload(randomKeys(n, caseSeed(kSeed, 9)));
    sort(d.data(), n);
}

void blockSortExtras(int n, void (*sort)(int*, int)) {
    auto d = deviceArray<int>(n);
    d.upload(randomKeys(n, caseSeed(kSeed, 10)));
    sort(d.data(), n);
}

struct Case {
    std::string name;
    std::function<void()> run;
};

std::vector<Case> cases() {
    std::vector<Case> all;
    for (const LaunchShape& s : studyShapes())
        all.push_back({"merge-" + s.name(), [s] { mergeAtShape(s); }});
    for (const LaunchShape& s : studyShapes())
        if (s.threads == 256 && s.itemsPerThread >= 16) all.push_back({"sort-" + s.name(), [s] { sortAtShape(s); }});
    all.push_back({"merge-tagged", mergeTagged});
    all.push_back({"part1-many-merges", manyMerges});
    all.push_back({"batch-merge-d256", [] { batch(256, true); }});
    all.push_back({"batch-merge-d300", [] { batch(300, true); }});
    all.push_back({"batch-sort-d256", [] { batch(256, false); }});
    all.push_back({"oddeven-block", [] { blockSortExtras(1024, oddEvenSortBlock<int>); }});
    all.push_back({"oddeven-phases", [] { sortExtras(2048, oddEvenSort<int>); }});
    all.push_back({"bitonic-block", [] { blockSortExtras(1024, bitonicSortBlock<int>); }});
    all.push_back({"bitonic", [] { sortExtras(1 << 16, bitonicSort<int>); }});
    return all;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const std::vector<Case> all = cases();
        std::vector<std::string> names(argv + 1, argv + argc);
        if (names.size() == 1 && names[0] == "--list") {
            for (const Case& c : all) std::printf("%s\n", c.name.c_str());
            return 0;
        }
        for (const std::string& name : names)
            if (std::none_of(all.begin(), all.end(), [&](const Case& c) { return c.name == name; })) {
                std::fprintf(stderr, "profile_launches: no case '%s' (--list names them)\n", name.c_str());
                return 2;
            }
        for (const Case& c : all) {
            if (!names.empty() && std::find(names.begin(), names.end(), c.name) == names.end()) continue;
            c.run();
            CUDA_CHECK(cudaDeviceSynchronize());
            std::printf("ran %s\n", c.name.c_str());
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "profile_launches: %s\n", e.what());
        return 1;
    }
}
