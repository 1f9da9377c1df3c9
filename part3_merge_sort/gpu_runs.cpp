#include "gpu_runs.hpp"

#include "part3.cuh"

#include "../common/checks.hpp"
#include "../common/device_buffer.hpp"
#include "../common/gpu.hpp"
#include "../common/inputs.hpp"
#include "../common/term.hpp"
#include "../common/timer.hpp"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

namespace lab {
namespace {

// An order-independent fingerprint of the keys: (sum, sum of mixed keys).
std::pair<std::uint64_t, std::uint64_t> fingerprint(const std::vector<int>& v) {
    std::uint64_t sum = 0, mix = 0;
    for (int k : v) {
        std::uint64_t z = static_cast<std::uint32_t>(k) * 0x9E3779B97F4A7C15ull;
        sum += static_cast<std::uint32_t>(k);
        mix += (z ^ (z >> 29)) * 0xBF58476D1CE4E5B9ull;
    }
    return {sum, mix};
}

}  // namespace

bool checkedRun(long long n, std::uint64_t seed, std::optional<LaunchShape> shape) {
    const std::vector<int> A = sortedKeys(InputKind::Random, n / 2, caseSeed(seed, 5));
    const std::vector<int> B = sortedKeys(InputKind::Random, n - n / 2, caseSeed(seed, 6));
    DeviceBuffer<int> dA(A.size()), dB(B.size()), dM(n);
    dA.upload(A);
    dB.upload(B);
    if (shape) mergeLargeShaped(dA.data(), (long long)A.size(), dB.data(), (long long)B.size(), dM.data(), *shape);
    else mergeLarge(dA.data(), (long long)A.size(), dB.data(), (long long)B.size(), dM.data());
    std::vector<int> expected(n);
    std::merge(A.begin(), A.end(), B.begin(), B.end(), expected.begin());
    const std::string what =
        "n=" + std::to_string(n) + " seed=" + std::to_string(seed) + (shape ? " shape " + shape->name() : "");
    bool ok = printCheck(checkDeviceOutput(dM, expected, what), "GPU mergeLarge, random " + what);

    const std::vector<int> keys = randomKeys(n, caseSeed(seed, 7));
    DeviceBuffer<int> d(n);
    d.upload(keys);
    if (shape) mergeSortShaped(d.data(), n, *shape);
    else mergeSort(d.data(), n);
    expected = keys;
    std::sort(expected.begin(), expected.end());
    ok &= printCheck(checkDeviceOutput(d, expected, what), "GPU mergeSort,  random " + what);
    return ok;
}

bool hugeSort(long long n, std::uint64_t seed, void (*sort)(int*, long long), const char* name) {
    const std::size_t need = 2 * static_cast<std::size_t>(n) * sizeof(int), have = freeDeviceBytes();
    if (need > have)
        throw Error("sorting " + std::to_string(n) + " keys needs " + formatBytes(double(need)) +
                    " of device memory (keys + temporary), the device has " + formatBytes(double(have)) + " free");
    std::cout << "Sorting " << n << " random keys (" << formatBytes(double(n) * sizeof(int)) << ")...\n";
    std::vector<int> keys = randomKeys(n, caseSeed(seed, 99));
    const auto before = fingerprint(keys);
    DeviceBuffer<int> d(n, 0);
    d.upload(keys);
    const Timing t = timeGpu([&] { sort(d.data(), n); }, 0, 1);
    keys = d.download();
    const bool sorted = std::is_sorted(keys.begin(), keys.end()), same = fingerprint(keys) == before;
    std::printf("%s of %lld keys: %.1f ms (%.2f Gkeys/s); sorted: %s; same keys (fingerprint): %s\n", name, n,
                t.medianMs, n / (t.medianMs * 1e6), sorted ? "yes" : "NO", same ? "yes" : "NO");
    return sorted && same;
}

}  // namespace lab
