// Your diagonal search (Q1). Parts 2 and 3 include this file too, so write it
// once here and reuse it everywhere.
#pragma once

#include "../common/merge_rule.hpp"

namespace lab {

// How many of the first k outputs of the stable merge of A and B come from A:
// the i of the point (i, k - i) where the merge path crosses diagonal k (the
// co-rank of k). Requires A, B sorted, 0 <= k <= nA + nB. Size is int for
// Parts 1-2 and long long for Part 3.
template <class T, class Size>
LAB_HD Size diagonalSearch(const T* A, Size nA, const T* B, Size nB, Size k) {
    // [Q1 begins] ---------------------------------------------------------------
    // TODO(Q1): find where the merge path crosses diagonal i + j = k.
    //
    // Goal: return the i of the crossing point (i, k - i). Equivalently, the
    //   number of values of A among the first k outputs of the merge.
    // Constraints: O(log) comparisons, no loop over the whole diagonal; compare
    //   with bGoesFirst(b, a) (common/merge_rule.hpp: b < a, so ties go to A
    //   and the merge is stable; Tagged compares keys only); the midpoint must
    //   not overflow.
    //   Never read outside A or B, not even one element past an end.
    // Hints: handout.md, "One thread per diagonal" (thread 8 of the example)
    //   and Q1's hints.
    (void)A; (void)nA; (void)B; (void)nB; (void)k;
    return 0;
    // [Q1 ends] -----------------------------------------------------------------
}

// Output k of the stable merge of A and B: find where the path crosses
// diagonal k, then take the step the path takes from there. Parts 1 and 2
// write one output per thread with it.
template <class T, class Size>
LAB_HD T mergeOutputAt(const T* A, Size nA, const T* B, Size nB, Size k) {
    // [Q1 begins] ---------------------------------------------------------------
    // TODO(Q1): the value of output k of the merge, with diagonalSearch.
    //
    // Goal: M[k] for the stable merge M of A and B, 0 <= k < nA + nB.
    // Constraints: one diagonal search, then the path's next step from the
    //   crossing, by the lab's one merge rule (common/merge_rule.hpp); ties
    //   go to A; A or B may be used up at the crossing.
    // Hints: handout.md, Q1.
    // Until then it returns A followed by B, unmerged.
    return k < nA ? A[k] : B[k - nA];
    // [Q1 ends] -----------------------------------------------------------------
}

}  // namespace lab
