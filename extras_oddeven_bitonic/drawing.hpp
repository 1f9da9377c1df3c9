// ./extras' drawings: the sorting networks of X1 (odd-even transposition) and
// X3 (bitonic) for a few values, one step at a time, with the values moving
// through them; the result is compared with the LINKED one-block kernel when
// a GPU is there.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace lab {

// One step of a sorting network: its name and its comparators (lower wire, upper wire).
struct NetworkStep {
    std::string name;
    std::vector<std::pair<int, int>> comparators;
};

// The bitonic network for n wires: in the instructors' copy only
// (reference_network.cpp); the student copy draws the linked kernel's result.
std::vector<NetworkStep> bitonicNetwork(int n);

// Each returns how many values the linked kernel got wrong (0 without a GPU).
long long drawOddEvenNetwork(const std::vector<int>& values, bool gpu);
long long drawBitonicNetwork(const std::vector<int>& values, bool gpu);

}  // namespace lab
