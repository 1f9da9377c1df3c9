// What every grader shares: the seed, GPU skipping, quick mode, and running
// one checked case on the device (poisoned output, guards, inputs unchanged).
#pragma once

#include "catch_shim.hpp"

#include "../common/checks.hpp"
#include "../common/device_buffer.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace lab::test {

// Base seed of every random case: LAB_SEED from the environment, or a fixed
// default, so runs repeat unless asked otherwise. Printed at start.
std::uint64_t seed();

// LAB_QUICK=1 (used under compute-sanitizer) samples the exhaustive size loops.
bool quick();

// Whether GPU tests can run here; marks the running test case as skipped when
// not. Use LAB_NEEDS_GPU() as the first line of every test tagged [gpu].
bool gpuOrSkip();

// "seed=12345 nA=3 nB=4"
std::string context(std::uint64_t caseSeed, const std::string& details);

// Sizes 0..max, all of them, or (quick mode) the edges and a sample.
std::vector<int> sizesUpTo(int max);

// Uploads A and B, runs `launch(dA, dB, dM)`, downloads M and checks, in this
// order: the guards around all three buffers, A and B unchanged, then M equal
// to `expected` (checkOutput: order, permutation, stability).
template <class T, class Launch>
Check runMergeCase(const std::vector<T>& A, const std::vector<T>& B, const std::vector<T>& expected,
                   Launch launch, const std::string& ctx) {
    DeviceBuffer<T> dA(A.size()), dB(B.size()), dM(expected.size());
    dA.upload(A);
    dB.upload(B);
    launch(dA.data(), dB.data(), dM.data());
    const std::vector<T> got = dM.download();
    const bool aSame = dA.download() == A, bSame = dB.download() == B;
    for (const Check* g : {&dM.guards(), &dA.guards(), &dB.guards()})
        if (!*g) return failCheck(g->message + " [" + ctx + "]");
    if (!aSame || !bSame) return failCheck(std::string("input ") + (aSame ? "B" : "A") + " was modified [" + ctx + "]");
    return checkOutput(got, expected, ctx);
}

}  // namespace lab::test

// A failed Check becomes a failed assertion carrying its message.
#define CHECK_OK(expr)                                        \
    do {                                                      \
        const ::lab::Check lab_check_ = (expr);               \
        if (lab_check_.ok) SUCCEED();                         \
        else FAIL_CHECK(lab_check_.message);                  \
    } while (0)

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
