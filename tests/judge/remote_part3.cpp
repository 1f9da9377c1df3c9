// Part 3's student functions in the judge: each a call the graded process
// makes (judge.hpp). Same declarations as the student's (part3.cuh); the
// given launchers (given_launchers.cuh) are in the student's object too.
#include "judge.hpp"

#include "../../part3_merge_sort/part3.cuh"

namespace lab {

const char* part3Implementation() { return judge::remoteImplementation("part3"); }

template <class T>
void mergeLarge(const T* dA, long long nA, const T* dB, long long nB, T* dM) {
    judge::call<void>(judge::named<T>("mergeLarge"), dA, nA, dB, nB, dM);
}

template <class T>
void mergeSort(T* dData, long long n) {
    judge::call<void>(judge::named<T>("mergeSort"), dData, n);
}

void mergePartition(const int* dA, long long nA, const int* dB, long long nB, int tile, long long* dSplits) {
    judge::call<void>("mergePartition", dA, nA, dB, nB, tile, dSplits);
}

void mergeLargeShaped(const int* dA, long long nA, const int* dB, long long nB, int* dM, LaunchShape shape) {
    judge::call<void>("mergeLargeShaped", dA, nA, dB, nB, dM, shape);
}

void mergeSortShaped(int* dData, long long n, LaunchShape shape) {
    judge::call<void>("mergeSortShaped", dData, n, shape);
}

LaunchShape mergeLargeDefaultShape() { return judge::call<LaunchShape>("mergeLargeDefaultShape"); }
LaunchShape mergeSortDefaultShape() { return judge::call<LaunchShape>("mergeSortDefaultShape"); }

template void mergeLarge<int>(const int*, long long, const int*, long long, int*);
template void mergeLarge<Tagged>(const Tagged*, long long, const Tagged*, long long, Tagged*);
template void mergeSort<int>(int*, long long);
template void mergeSort<Tagged>(Tagged*, long long);

}  // namespace lab
