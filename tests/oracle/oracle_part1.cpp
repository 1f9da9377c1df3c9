// Part 1's launchers, trusted (see oracle.hpp).
#include "oracle.hpp"

#include "../../part1_merge_path/part1.cuh"

namespace lab {

const char* part1Implementation() { return "trusted host oracle"; }

namespace {

// The diagonal search by walking the path: steps down (from A) among the
// first k steps, taking A unless B is strictly smaller.
template <class T, class Size>
Size walk(const T* A, Size nA, const T* B, Size nB, Size k) {
    Size i = 0, j = 0;
    for (Size step = 0; step < k; ++step) {
        if (j >= nB || (i < nA && !(B[j] < A[i]))) ++i;
        else ++j;
    }
    return i;
}

}  // namespace

int diagonalSearchOnHost(const int* A, int nA, const int* B, int nB, int k) { return walk(A, nA, B, nB, k); }
int diagonalSearchOnHost(const Tagged* A, int nA, const Tagged* B, int nB, int k) { return walk(A, nA, B, nB, k); }
long long diagonalSearchOnHost(const int* A, long long nA, const int* B, long long nB, long long k) {
    return walk(A, nA, B, nB, k);
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
