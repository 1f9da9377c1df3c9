// The emulated build's stand-ins for the CCCL peers of bench_peers.cu (CUB
// and Thrust do not build for the emulator): emulated demos print no timing
// tables, so they only refuse.
#include "bench_peers.hpp"

#include "../common/not_emulated.hpp"

namespace lab::peers {

template <class T>
void thrustMerge(const T*, long long, const T*, long long, T*, KeptMemory&) {
    notEmulated("thrust::merge");
}
template void thrustMerge<int>(const int*, long long, const int*, long long, int*, KeptMemory&);
template void thrustMerge<Tagged>(const Tagged*, long long, const Tagged*, long long, Tagged*, KeptMemory&);
void thrustSort(int*, long long, KeptMemory&) { notEmulated("thrust::sort"); }

template <class T>
CubMergeSort<T>::CubMergeSort(long long n) : n_(n) {
    notEmulated("cub::DeviceMergeSort");
}
template <class T>
CubMergeSort<T>::~CubMergeSort() {}
template <class T>
void CubMergeSort<T>::run(T*) {
    notEmulated("cub::DeviceMergeSort");
}
template class CubMergeSort<int>;
template class CubMergeSort<Tagged>;

template <class T>
bool CubMerge<T>::available() { return false; }
template <class T>
CubMerge<T>::CubMerge(long long nA, long long nB) : nA_(nA), nB_(nB) {
    notEmulated("cub::DeviceMerge");
}
template <class T>
CubMerge<T>::~CubMerge() {}
template <class T>
void CubMerge<T>::run(const T*, const T*, T*) {
    notEmulated("cub::DeviceMerge");
}
template class CubMerge<int>;
template class CubMerge<Tagged>;

CubRadixSort::CubRadixSort(long long n) : n_(n) { notEmulated("cub::DeviceRadixSort"); }
CubRadixSort::~CubRadixSort() {}
void CubRadixSort::run(int*) { notEmulated("cub::DeviceRadixSort"); }

}  // namespace lab::peers
