// The CCCL peers of the timing tables (the parts' bench_peers.cu, built on
// CUB and Thrust) do not build for the emulator, and emulated demos print no
// timing tables: these stand in for them and refuse, should anything call them.
// Likewise the naive GPU merges, where their instructor file is present.
#include "../common/cuda_check.hpp"
#include "../part2_batch/bench_peers.hpp"
#include "../part3_merge_sort/bench_peers.hpp"
#if __has_include("../part3_merge_sort/reference_peers.hpp")
#include "../part3_merge_sort/reference_peers.hpp"
#define LAB_HAVE_NAIVE_PEERS 1
#endif

namespace lab::peers {

namespace {
[[noreturn]] void notEmulated(const char* what) {
    throw Error(std::string(what) + " is not emulated: timing tables need a GPU");
}
}  // namespace

void thrustMergeTuples(const int*, const int*, long long, const int*, const int*, long long, int*, int*, KeptMemory&) {
    notEmulated("thrust::merge");
}
CubSegmentedSort::CubSegmentedSort(int d, long long N) : d_(d), n_(N) { notEmulated("cub::DeviceSegmentedSort"); }
CubSegmentedSort::~CubSegmentedSort() {}
void CubSegmentedSort::run(const int*, int*) { notEmulated("cub::DeviceSegmentedSort"); }

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

#ifdef LAB_HAVE_NAIVE_PEERS
void oneThreadMerge(const int*, long long, const int*, long long, int*) { notEmulated("the one-thread merge"); }
void rankMerge(const int*, long long, const int*, long long, int*) { notEmulated("the rank merge"); }
void rankMergeSort(int*, int*, long long) { notEmulated("the rank merge sort"); }
#endif

}  // namespace lab::peers
