// The graders' environment, without Catch2 (the [large] tier's .cu file
// includes it): the seed, quick mode, and skipping a test case with a reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace lab::test {

// Base seed of every random case: LAB_SEED from the environment, or a fixed
// default, so runs repeat unless asked otherwise. Printed at start.
std::uint64_t seed();

// Samples the exhaustive size loops: LAB_QUICK=1, emulated, or under
// compute-sanitizer (then sanitized() too).
bool quick();

// Under compute-sanitizer (never emulated): quick mode, sampled more thinly
// still where a test's cost grows with its number of launches or barriers.
// memcheck and racecheck run every ordinary test case of a grading, and each
// launch costs them far more than the kernel; the graded run (sizes in full)
// and the guard zones cover the sizes left out here.
bool sanitized();

// Whether GPU tests can run here; marks the running test case as skipped when
// not. Use LAB_NEEDS_GPU() as the first line of every test tagged [gpu].
bool gpuOrSkip();

// Marks the running test case as skipped (never passed), saying why.
void skip(const std::string& reason);

// "seed=12345 nA=3 nB=4"
std::string context(std::uint64_t caseSeed, const std::string& details);

// Sizes 0..max, all of them, or (quick mode) the edges and a sample, or
// (sanitized) the edges of warps and powers of two and a sample.
std::vector<int> sizesUpTo(int max);

// Quick mode's sample of 0..max, whatever the mode: up to 34, near powers of
// two, the last three, every 97th.
std::vector<int> edgeSizesUpTo(int max);

// The digest chain of the running test case: every result a grader reads
// back (an output array, an input after the run, a host search's answer) is
// hashed into it, in order. The report carries the chain; the grading harness
// passes a test only when it equals the chain of the same test, on the same
// seed, in a build that links the trusted host implementation
// (tests/oracle/) instead of the submission. A report the code under test
// wrote itself therefore proves nothing unless its outputs were right.
void digest(const void* bytes, std::size_t size);
void digest(std::uint64_t value);
template <class T>
void digest(const std::vector<T>& values) {
    digest(static_cast<std::uint64_t>(values.size()));
    digest(values.data(), values.size() * sizeof(T));
}

}  // namespace lab::test
