// The [large] tier: launchers run on arrays of more than 2^31 elements, where
// 32-bit index arithmetic wraps. Inputs are made and outputs checked on the
// GPU (kernels in large_tier.cu), so no host copy of the data is needed: the
// check is order within each segment, no unwritten (poisoned) output, guard
// zones intact, and a per-segment multiset hash equal to the input's.
//
// These tests run only with LAB_LARGE=1 (make grade sets it) and only on a GPU
// whose total memory holds the tier's largest test (tierFitsHere); otherwise
// they are skipped, saying why. On a GPU that holds it, memory another
// process took is a failure, not a skip: the harness decides once, from the
// total, whether the tier is graded (LAB_PROBE_GPU), and a skip it did not
// expect would hide a test.
#pragma once

#include "../common/checks.hpp"

#include <cstdint>
#include <string>

namespace lab::test::large {

constexpr long long kPast31 = (1LL << 31) + 4099;  // elements: just past 2^31, not a round number

// The most device memory one test of the tier holds: two arrays of just past
// 2^31 ints (a batch rounds up to a whole pair) with their guard zones, and
// room for the CUDA context and the checkers' scratch beside them.
constexpr double kMostBytes = 2.0 * (kPast31 + 1024 + 2 * 4096) * 4 + 1024.0 * (1 << 20);

// "" when this GPU's total memory holds kMostBytes, else why not.
std::string tierDoesNotFit();

// Whether the tier runs here (LAB_LARGE=1 and tierDoesNotFit() empty); skips
// the test case, saying why, when not. Throws lab::Error when the GPU holds
// the tier but `bytes` are not free now (another process holds them).
bool canRun(double bytes);

// A poisoned int array on the device with guard zones, no host copy.
class Array {
public:
    explicit Array(long long n);
    ~Array();
    Array(const Array&) = delete;
    Array& operator=(const Array&) = delete;
    int* data() { return base_ + kGuard; }
    long long size() const { return n_; }
    // Guards still hold poison.
    Check guards(const std::string& name) const;

private:
    static constexpr long long kGuard = 4096;
    int* base_ = nullptr;
    long long n_ = 0;
};

// Segments of `segLen` values (the last one may be shorter), each sorted
// ascending; `step` (1..4) spreads the values so that two inputs interleave.
void fillSorted(Array& a, long long segLen, int step, std::uint64_t seed);
// Segment p of d values: its first split[p] values sorted, the rest sorted.
void fillPairs(Array& a, Array& split, int d, std::uint64_t seed);
void fillRandom(Array& a, std::uint64_t seed);

// Sum over elements of a hash of (value, segment index): equal sums mean equal
// multisets in every segment (up to a 2^-64 chance).
std::uint64_t segmentHash(Array& a, long long segLen);

// A hash of every value at its index: equal for equal arrays only (what a
// large output's test records for the harness, test_env.hpp).
std::uint64_t positionHash(Array& a);

// Every segment sorted and no element left poisoned; names the first bad index.
Check sortedSegments(Array& a, long long segLen, const std::string& ctx);

// The output of a large merge or sort: segments sorted, nothing unwritten,
// the same values per segment as the input (`inputHash`), guards intact.
Check checkOutput(Array& out, long long segLen, std::uint64_t inputHash, const std::string& ctx);

// An input after the launcher ran: same values (`hashBefore`), guards intact.
Check checkInput(Array& in, long long segLen, std::uint64_t hashBefore, const std::string& name,
                 const std::string& ctx);

}  // namespace lab::test::large
