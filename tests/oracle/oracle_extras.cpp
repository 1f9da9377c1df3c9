// The extras' launchers, trusted (see oracle.hpp). Bitonic sorts are not
// stable; their graders record keys in order and the values sorted by key and
// tag, the same for every correct sort, so a stable sort serves for both.
#include "oracle.hpp"

#include "../../extras_oddeven_bitonic/extras.cuh"

namespace lab {

const char* extrasImplementation() { return "trusted host oracle"; }

namespace {

template <class T>
void sortOnHost(T* dData, long long n) {
    oracle::Host<T> v = oracle::download(dData, n);
    oracle::stableSort(v);
    oracle::upload(dData, v);
}

}  // namespace

// One trusted sort for all four launchers, after each one's own refusals.
template <class T>
void oddEvenSortBlock(T* dData, int n) { checkBlockSort(dData, n); sortOnHost(dData, n); }
template <class T>
void oddEvenSort(T* dData, long long n) { checkSort(dData, n); sortOnHost(dData, n); }
template <class T>
void bitonicSortBlock(T* dData, int n) { checkBlockSort(dData, n); sortOnHost(dData, n); }
template <class T>
void bitonicSort(T* dData, long long n) { checkSort(dData, n); sortOnHost(dData, n); }

#include "../../extras_oddeven_bitonic/instantiations.inc"  // the element types the graders call

}  // namespace lab
