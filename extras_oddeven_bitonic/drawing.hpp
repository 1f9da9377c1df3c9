// ./extras' drawings: the sorting networks of X1 (odd-even transposition) and
// X3 (bitonic) for a few values, one step at a time, with the values moving
// through them; the result is compared with the LINKED one-block kernel when
// a GPU is there.
#pragma once

#include <vector>

namespace lab {

// Each returns how many values the linked kernel got wrong (0 without a GPU).
long long drawOddEvenNetwork(const std::vector<int>& values, bool gpu);
long long drawBitonicNetwork(const std::vector<int>& values, bool gpu);

}  // namespace lab
