// ./part2's batches and drawings: which block and thread serve which pair
// (Q3's index math) and the rounds of the batch sort (Q4), each traced with
// the LINKED kernels when a GPU is there, wrong values painted red.
#pragma once

#include <cstdint>
#include <vector>

namespace lab {

// A batch: N segments of d keys and, for merges, each pair's split.
struct Batch {
    int d = 0;
    long long N = 0;
    std::vector<int> keys, split;
};

// Random pairs; keys in [0, 100) when `small` (for drawings), else any int.
Batch randomPairs(int d, long long N, std::uint64_t seed, bool small);
std::vector<int> cpuMerges(const Batch& b);
std::vector<int> cpuSorts(std::vector<int> keys, int d);

// Q3's index math block by block, and each pair's merge by the linked
// mergeSmallBatch (when `gpu`). Returns how many outputs are wrong.
long long drawIndexMath(const Batch& b, int threadsPerBlock, bool gpu);

// Q4's rounds on one array: round w leaves every run of 2w values sorted.
// With `gpu`, each row is what the linked sortSmall makes of runs of 2w
// values; --step pauses between rounds. Returns how many values are wrong.
long long drawSortRounds(const std::vector<int>& keys, bool gpu);

}  // namespace lab
