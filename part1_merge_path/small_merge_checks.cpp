// Argument checks of the Part 1 launchers, shared by the reference and the
// student skeleton so that both refuse the same arguments with the same words.
#include "part1.cuh"

#include "../common/cuda_check.hpp"

namespace lab {

void checkSmallMerge(const void* dA, int nA, const void* dB, int nB, const void* dM, long long count) {
    LAB_REQUIRE(nA >= 0 && nB >= 0, "merge sizes must be >= 0, got |A| = " << nA << ", |B| = " << nB);
    LAB_REQUIRE(nA <= kMaxSmallMerge - nB, "|A| + |B| = " << (long long)nA + nB << " exceeds " << kMaxSmallMerge
                                                          << ", the most one block merges (one thread per output)");
    LAB_REQUIRE(count >= 0 && count <= 2147483647LL,
                "the number of merges must be in [0, 2^31 - 1] (one block each), got " << count);
    const bool work = nA + nB > 0 && count > 0;
    LAB_REQUIRE(!work || (dM != nullptr && (nA == 0 || dA != nullptr) && (nB == 0 || dB != nullptr)),
                "null device pointer passed to mergeSmall");
}

}  // namespace lab
