// The lab's one merge rule, used by every search, kernel, host reference and
// drawing: at point (i, j) of the merge path the next output is A[i] unless B
// is not used up and B[j] is strictly smaller. Equal keys therefore leave A's
// value first, which is what makes every merge of the lab stable.
//
// (Course notes that take B first on equal keys draw the same grid with the
// comparison reversed; only this file would change.)
#pragma once

#include "hd.hpp"

namespace lab {

// True when b must go out before a: only when it is strictly smaller.
template <class T>
LAB_HD bool bGoesFirst(const T& b, const T& a) {
    return b < a;
}

// The step the path takes from (i, j): true = down (output A[i]), false =
// right (output B[j]). Requires i < nA or j < nB (the path has not ended).
template <class T, class Size>
LAB_HD bool takesA(const T* A, Size nA, const T* B, Size nB, Size i, Size j) {
    return j >= nB || (i < nA && !bGoesFirst(B[j], A[i]));
}

}  // namespace lab
