// The sequential merge path on the host: the algorithm every kernel of the
// lab parallelises, and the reference the graders and demos compare with.
//
// Picture the |A| x |B| grid. The path starts at the top-left corner (0, 0)
// and ends at the bottom-right corner (|A|, |B|). At point (i, j), i values of
// A and j values of B have been output; the next output is A[i] (the path
// steps down) unless B[j] is strictly smaller (the path steps right). On equal
// keys A goes first, so the merge is stable.
#pragma once

#include "merge_rule.hpp"

#include <cstddef>
#include <vector>

namespace lab {

enum class Step : char { Down = 'A', Right = 'B' };  // took A[i] / took B[j]

template <class T>
std::vector<T> mergePathSequential(const std::vector<T>& A, const std::vector<T>& B,
                                   std::vector<Step>* path = nullptr) {
    std::vector<T> M;
    M.reserve(A.size() + B.size());
    std::size_t i = 0, j = 0;
    while (i + j < A.size() + B.size()) {
        // Take A[i] unless A is used up or B[j] is strictly smaller (merge_rule.hpp).
        const bool down = takesA(A.data(), A.size(), B.data(), B.size(), i, j);
        M.push_back(down ? A[i++] : B[j++]);
        if (path != nullptr) path->push_back(down ? Step::Down : Step::Right);
    }
    return M;
}

// The points of the path: point k = (i, j) with i + j = k, for k = 0..|A|+|B|.
// Point k is where the path crosses diagonal k.
struct GridPoint {
    long long i, j;
};
std::vector<GridPoint> pathPoints(const std::vector<Step>& path);

}  // namespace lab
