// What every grader shares: the seed, GPU skipping, quick mode, and running
// one checked case on the device (poisoned output, guards, inputs unchanged),
// its results recorded for the grading harness.
#pragma once

#include "catch_shim.hpp"
#include "large_tier.hpp"
#include "test_env.hpp"
#include "trace.hpp"

#include "../common/checks.hpp"
#include "../common/device_buffer.hpp"
#include "../common/tagged.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace lab::test {

// The keys of tagged values (ints are their own keys).
inline std::vector<int> keysOf(const std::vector<int>& v) { return v; }
inline std::vector<int> keysOf(const std::vector<Tagged>& v) {
    std::vector<int> keys(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) keys[i] = v[i].key;
    return keys;
}

// An input array on the device, to be checked unchanged after the run.
template <class T>
class DeviceInput {
public:
    explicit DeviceInput(const std::vector<T>& values) : host_(values), buf_(values.size()) {  // keeps a copy
        buf_.upload(values);
    }
    const T* data() const { return buf_.data(); }

    // Recorded for the harness, then checked: guards intact, every value as uploaded.
    Check unchanged(const std::string& name, const std::string& ctx) {
        const std::vector<T> now = buf_.download();
        record("input " + name + " after the run [" + ctx + "]", now);
        record("guards of input " + name + " intact", static_cast<std::uint64_t>(buf_.guards().ok));
        if (!buf_.guards()) return failCheck(buf_.guards().message + " (input " + name + ") [" + ctx + "]");
        if (!(now == host_)) return failCheck("input " + name + " was modified [" + ctx + "]");
        return {};
    }

private:
    const std::vector<T> host_;
    DeviceBuffer<T> buf_;
};

// Downloads an output and records it for the harness (test_env.hpp). Then,
// in make test's builds, checks it: guards intact, equal to `expected()`
// (order, permutation, stability). Graded builds check the guards alone and
// never call `expected`: the graded process holds no answer.
template <class T, class Expected>
Check checkRecordedOutput(DeviceBuffer<T>& out, Expected expected, const std::string& ctx, Segments segments = {}) {
    const std::vector<T> got = out.download();
    record("output [" + ctx + "]", got);
    record("guards of the output intact", static_cast<std::uint64_t>(out.guards().ok));
    if constexpr (kGraded) {
        if (!out.guards()) return failCheck(out.guards().message + " [" + ctx + "]");
        return {};
    } else {
        return checkDownloaded(out, got, expected(), ctx, segments);
    }
}

// Uploads A and B, runs `launch(dA, dB, dM)` under the launch trace, then
// checks the trace against `rules`, the output (`expected()` makes the answer
// in make test's builds: checkRecordedOutput), and that A and B are unchanged (`nameB`
// names the second input in messages: Part 2 passes the splits there;
// `segments`: a batch's pieces, each judged on its own).
template <class T, class U, class Expected, class Launch>
Check runMergeCase(const std::vector<T>& A, const std::vector<U>& B, std::size_t outputSize, Expected expected,
                   Launch launch, const std::string& ctx, const std::vector<KernelRule>& rules,
                   const std::string& nameB = "B", Segments segments = {}) {
    DeviceInput<T> dA(A);
    DeviceInput<U> dB(B);
    DeviceBuffer<T> dM(outputSize);
    if (Check c = tracedCall([&] { launch(dA.data(), dB.data(), dM.data()); }, rules, ctx); !c) return c;
    if (Check c = checkRecordedOutput(dM, expected, ctx, segments); !c) return c;
    if (Check c = dA.unchanged("A", ctx); !c) return c;
    return dB.unchanged(nameB, ctx);
}

// The [large] tier of a sort launcher (Q6's and the tuned sort's): kPast31
// random keys made and checked on the GPU (large_tier.hpp), sorted in place by
// sort(keys, n), whose trace must obey `rules`. The caller checks
// large::canRun(kLargeSortBytes) first.
constexpr double kLargeSortBytes = 2.0 * large::kPast31 * sizeof(int);  // the keys and the sort's temporary buffer
template <class Sort>
Check largeSortCase(std::uint64_t s, const std::vector<KernelRule>& rules, Sort sort) {
    const long long n = large::kPast31;
    large::Array data(n);
    large::fillRandom(data, s);
    const std::uint64_t hashIn = large::segmentHash(data, n);
    const std::string ctx = context(s, "n=" + std::to_string(n) + " random");
    if (Check c = tracedCall([&] { sort(data.data(), n); }, rules, ctx); !c) return c;
    return large::checkOutput(data, n, hashIn, ctx);
}

}  // namespace lab::test

// A failed Check becomes a failed assertion carrying its message.
#define REQUIRE_OK(expr)                                      \
    do {                                                      \
        const ::lab::Check lab_check_ = (expr);               \
        if (lab_check_.ok) SUCCEED();                         \
        else FAIL(lab_check_.message);                        \
    } while (0)

#define LAB_NEEDS_GPU()                                       \
    do {                                                      \
        if (!::lab::test::gpuOrSkip()) return;                \
    } while (0)
