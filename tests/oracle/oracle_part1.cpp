// Part 1's launchers, trusted (see oracle.hpp).
#include "oracle.hpp"

#include "../../part1_merge_path/part1.cuh"

#include <algorithm>
#include <iterator>
#include <utility>
#include <vector>

namespace lab {

const char* part1Implementation() { return "trusted host oracle"; }

namespace {

// The co-rank by merging, not by searching: the first k values of A and of B
// (no others can be among the first k outputs), each with where it came from,
// merged by std::merge, which is stable (on equal values A's come first, as in
// every merge of the lab); then the count of A's among the first k outputs.
// Linear, on host containers: a trusted answer, and no model for Q1's search.
template <class T, class Size>
Size fromAAmongFirst(const T* A, Size nA, const T* B, Size nB, Size k) {
    LAB_REQUIRE(0 <= k && k <= nA + nB, "diagonal k = " << k << " is outside [0, " << nA + nB << "]");
    using Origin = std::pair<T, bool>;  // a value, and whether it is A's
    const auto firstK = [k](const T* values, Size n, bool fromA) {
        std::vector<Origin> v;
        std::transform(values, values + std::min(n, k), std::back_inserter(v),
                       [fromA](const T& x) { return Origin{x, fromA}; });
        return v;
    };
    const std::vector<Origin> a = firstK(A, nA, true), b = firstK(B, nB, false);
    std::vector<Origin> merged(a.size() + b.size());  // at least k
    std::merge(a.begin(), a.end(), b.begin(), b.end(), merged.begin(),
               [](const Origin& x, const Origin& y) { return x.first < y.first; });
    return static_cast<Size>(std::count_if(merged.begin(), merged.begin() + k, [](const Origin& o) { return o.second; }));
}

}  // namespace

int diagonalSearchOnHost(const int* A, int nA, const int* B, int nB, int k) {
    return fromAAmongFirst(A, nA, B, nB, k);
}
int diagonalSearchOnHost(const Tagged* A, int nA, const Tagged* B, int nB, int k) {
    return fromAAmongFirst(A, nA, B, nB, k);
}
long long diagonalSearchOnHost(const int* A, long long nA, const int* B, long long nB, long long k) {
    return fromAAmongFirst(A, nA, B, nB, k);
}

template <class T>
void mergeSmallMany(const T* dA, int nA, const T* dB, int nB, T* dM, long long count) {
    checkSmallMerge(dA, nA, dB, nB, dM, count);
    const oracle::Host<T> A = oracle::download(dA, count * nA), B = oracle::download(dB, count * nB);
    oracle::Host<T> M = oracle::hostArray<T>(count * (nA + nB));
    oracle::parallelFor(count, [&](long long first, long long last) {
        for (long long p = first; p < last; ++p)
            std::merge(A.begin() + p * nA, A.begin() + (p + 1) * nA, B.begin() + p * nB, B.begin() + (p + 1) * nB,
                       M.begin() + p * (nA + nB));
    });
    oracle::upload(dM, M);
}

template <class T>
void mergeSmall(const T* dA, int nA, const T* dB, int nB, T* dM) {
    checkSmallMerge(dA, nA, dB, nB, dM, 1);
    mergeSmallMany(dA, nA, dB, nB, dM, 1);
}

template void mergeSmall<int>(const int*, int, const int*, int, int*);
template void mergeSmall<Tagged>(const Tagged*, int, const Tagged*, int, Tagged*);
template void mergeSmallMany<int>(const int*, int, const int*, int, int*, long long);
template void mergeSmallMany<Tagged>(const Tagged*, int, const Tagged*, int, Tagged*, long long);

}  // namespace lab
