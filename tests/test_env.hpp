// The graders' environment, without Catch2 (the [large] tier's .cu file
// includes it): the seed, quick mode, and skipping a test case with a reason.
#pragma once

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

// Marks the running test case as skipped (never passed), saying why.
void skip(const std::string& reason);

// "seed=12345 nA=3 nB=4"
std::string context(std::uint64_t caseSeed, const std::string& details);

// Sizes 0..max, all of them, or (quick mode) the edges and a sample.
std::vector<int> sizesUpTo(int max);

}  // namespace lab::test
