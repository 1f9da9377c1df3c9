// The graders' environment, without Catch2 (the [large] tier's .cu file
// includes it): the seed, quick mode, skipping a test case with a reason, and
// handing results to the grading harness.
#pragma once

#include "../common/tagged.hpp"

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

// Graded builds (LAB_GRADED, made by the grading harness to link student
// code) never judge their own answers: a test there computes no expected
// result at all. It hands what it read back to the harness, which compares
// it with a trusted run's in a process without student code. `make test`'s
// builds judge in-process as well, for the messages a student reads.
#ifdef LAB_GRADED
inline constexpr bool kGraded = true;
#else
inline constexpr bool kGraded = false;
#endif

// The results of the running test case: every result a grader reads back (an
// output array, an input after the run, a host function's answer) goes, raw
// and in order, to the file descriptor LAB_RESULTS_FD names (a pipe the
// grading harness reads; nowhere without it). `what` names the result for the
// harness's messages ("output [seed ... |A|=3 |B|=4]"); `type` names the
// element type ("i32", "tagged", "i64", "u64").
void recordBytes(const std::string& what, const char* type, const void* bytes, std::size_t size);

template <class T>
struct RecordType;
template <>
struct RecordType<int> {
    static constexpr const char* name = "i32";
};
template <>
struct RecordType<long long> {
    static constexpr const char* name = "i64";
};
template <>
struct RecordType<std::uint64_t> {
    static constexpr const char* name = "u64";
};
template <>
struct RecordType<Tagged> {
    static constexpr const char* name = "tagged";
};

template <class T>
void record(const std::string& what, const std::vector<T>& values) {
    recordBytes(what, RecordType<T>::name, values.data(), values.size() * sizeof(T));
}
inline void record(const std::string& what, std::uint64_t value) { recordBytes(what, "u64", &value, sizeof value); }

}  // namespace lab::test
