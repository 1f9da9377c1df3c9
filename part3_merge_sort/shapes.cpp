// Part 3 host code shared by every implementation: the study shapes as values,
// and the launchers' argument checks (not part of the questions).
#include "part3.cuh"
#include "study_shapes.hpp"

#include "../common/cuda_check.hpp"

#include <climits>

namespace lab {

const std::vector<LaunchShape>& studyShapes() {
    static const std::vector<LaunchShape> shapes = std::apply(
        [](auto... s) { return std::vector<LaunchShape>{{decltype(s)::threads, decltype(s)::items}...}; },
        StudyShapes{});
    return shapes;
}

void checkStudyShape(LaunchShape shape) {
    bool found = false;
    for (const LaunchShape& s : studyShapes())
        found = found || (s.threads == shape.threads && s.itemsPerThread == shape.itemsPerThread);
    LAB_REQUIRE(found, "launch shape " << shape.threads << " threads x " << shape.itemsPerThread
                                       << " items is not one of studyShapes()");
}

void checkMergeLarge(const void* dA, long long nA, const void* dB, long long nB, const void* dM) {
    LAB_REQUIRE(nA >= 0 && nB >= 0, "merge sizes must be >= 0, got |A| = " << nA << ", |B| = " << nB);
    LAB_REQUIRE(nA <= LLONG_MAX - nB, "|A| + |B| overflows");
    LAB_REQUIRE(nA + nB == 0 || (dM && (nA == 0 || dA) && (nB == 0 || dB)), "null device pointer passed to mergeLarge");
}

void checkMergeSort(const void* dData, long long n) {
    LAB_REQUIRE(n >= 0, "the array size must be >= 0, got " << n);
    LAB_REQUIRE(n <= 1 || dData != nullptr, "null device pointer passed to mergeSort");
}

}  // namespace lab
