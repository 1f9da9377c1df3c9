// Instructors' file (not in the student copy): the bitonic network's steps for
// ./extras' drawing. In the student copy they would spell out X3.
#include "drawing.hpp"

namespace lab {

// Stages of size 2, 4, ..., the next power of two >= n; a stage's first step
// compares wire i with its mirror i ^ (size - 1), the next ones i with
// i + half. Comparators whose upper wire is past n - 1 are left out (that
// wire holds +infinity).
std::vector<NetworkStep> bitonicNetwork(int n) {
    int padded = 1;
    while (padded < n) padded *= 2;
    std::vector<NetworkStep> steps;
    for (int size = 2; size <= padded; size *= 2)
        for (int half = size / 2; half > 0; half /= 2) {
            NetworkStep step{"size " + std::to_string(size) + (half == size / 2 ? " mirror" : " half " + std::to_string(half)), {}};
            for (int lo = 0; lo < padded; ++lo) {
                if (lo & half) continue;
                const int hi = half == size / 2 ? lo ^ (size - 1) : lo + half;
                if (hi < n) step.comparators.push_back({lo, hi});
            }
            steps.push_back(step);
        }
    return steps;
}

}  // namespace lab
