// The diagonal search of Merge Path (Green, McColl, Bader, ICS 2012).
// [instructor reference: files named reference* are not in the student release]
//
// Output k of the merge is produced where the merge path crosses diagonal
// i + j = k of the |A| x |B| grid. Every point (i, k - i) of that diagonal
// before the crossing has A[i] in the first k outputs; every point after it
// does not. That test is monotone along the diagonal, so a binary search finds
// the crossing in O(log min(|A|, |B|)) steps without walking the path.
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
    // Step 1: the part of diagonal k inside the grid: i in [lo, hi].
    Size lo = k > nB ? k - nB : 0;
    Size hi = k < nA ? k : nA;
    // Step 2: find the first i whose A[i] is NOT among the first k outputs,
    // i.e. B[k-1-i] goes out before it: B[k-1-i] < A[i] (ties take A first).
    // Only mid < hi is probed, so A[mid] and B[k-1-mid] always exist.
    while (lo < hi) {
        const Size mid = lo + (hi - lo) / 2;  // no overflow, unlike (lo + hi) / 2
        if (bGoesFirst(B[k - 1 - mid], A[mid])) hi = mid;
        else lo = mid + 1;
    }
    return lo;
    // [Q1 ends] -----------------------------------------------------------------
}

// Output k of the stable merge of A and B: find where the path crosses
// diagonal k, then take the step the path takes from there. Parts 1 and 2
// write one output per thread with it.
template <class T, class Size>
LAB_HD T mergeOutputAt(const T* A, Size nA, const T* B, Size nB, Size k) {
    // [Q1 begins] ---------------------------------------------------------------
    const Size i = diagonalSearch(A, nA, B, nB, k);
    const Size j = k - i;
    // Down (output A[i]) unless A is used up or B[j] is strictly smaller.
    return takesA(A, nA, B, nB, i, j) ? A[i] : B[j];
    // [Q1 ends] -----------------------------------------------------------------
}

}  // namespace lab
