// Part 1's student functions in the judge: each a call the graded process
// makes (judge.hpp). Same declarations as the student's (part1.cuh).
#include "judge.hpp"

#include "../../part1_merge_path/part1.cuh"

namespace lab {

const char* part1Implementation() { return judge::remoteImplementation("part1"); }

int diagonalSearchOnHost(const int* A, int nA, const int* B, int nB, int k) {
    return judge::call<int>("diagonalSearchOnHost<int>", judge::host(A, nA), nA, judge::host(B, nB), nB, k);
}
int diagonalSearchOnHost(const Tagged* A, int nA, const Tagged* B, int nB, int k) {
    return judge::call<int>("diagonalSearchOnHost<Tagged>", judge::host(A, nA), nA, judge::host(B, nB), nB, k);
}
long long diagonalSearchOnHost(const int* A, long long nA, const int* B, long long nB, long long k) {
    return judge::call<long long>("diagonalSearchOnHost<int, long long>", judge::host(A, nA), nA, judge::host(B, nB),
                                  nB, k);
}
int diagonalSearchOnHost(const Probe* A, int nA, const Probe* B, int nB, int k) {
    return judge::call<int>("diagonalSearchOnHost<Probe>", judge::host(A, nA), nA, judge::host(B, nB), nB, k);
}

template <class T>
void mergeSmall(const T* dA, int nA, const T* dB, int nB, T* dM) {
    judge::call<void>(judge::named<T>("mergeSmall"), dA, nA, dB, nB, dM);
}

template <class T>
void mergeSmallMany(const T* dA, int nA, const T* dB, int nB, T* dM, long long count) {
    judge::call<void>(judge::named<T>("mergeSmallMany"), dA, nA, dB, nB, dM, count);
}

template void mergeSmall<int>(const int*, int, const int*, int, int*);
template void mergeSmall<Tagged>(const Tagged*, int, const Tagged*, int, Tagged*);
template void mergeSmallMany<int>(const int*, int, const int*, int, int*, long long);
template void mergeSmallMany<Tagged>(const Tagged*, int, const Tagged*, int, Tagged*, long long);

}  // namespace lab
