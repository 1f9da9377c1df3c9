// Argument checks of the extras' launchers, shared by every implementation.
#include "extras.cuh"

#include "../common/cuda_check.hpp"

namespace lab {

void checkSort(const void* dData, long long n) {
    LAB_REQUIRE(n >= 0, "n must be >= 0, not " << n);
    LAB_REQUIRE(n == 0 || dData != nullptr, "dData is null but n = " << n);
}

void checkBlockSort(const void* dData, int n) {
    checkSort(dData, n);
    LAB_REQUIRE(n <= kMaxBlockSort, "n = " << n << " exceeds " << kMaxBlockSort << ", the most one block sorts");
}

}  // namespace lab
