// Peers of the Part 3 tables: CCCL (Thrust, CUB) and the naive GPU merges the
// lab is meant to beat. Kept apart from main.cu so their long compile happens once.
#pragma once

#include "../common/peer_memory.hpp"
#include "../common/tagged.hpp"

namespace lab::peers {

// thrust::merge (stable: A first on ties); T is int or Tagged. Both Thrust
// peers take their temporary storage from `memory`, which keeps it between
// calls, and return without waiting for the GPU, as the lab's launchers do
// (common/peer_memory.hpp).
template <class T>
void thrustMerge(const T* dA, long long nA, const T* dB, long long nB, T* dM, KeptMemory& memory);
void thrustSort(int* dData, long long n, KeptMemory& memory);  // thrust::sort (a radix sort for int keys)

// cub::DeviceMergeSort::StableSortKeys, with its temporary storage owned here;
// T is int or Tagged.
template <class T>
class CubMergeSort {
public:
    explicit CubMergeSort(long long n);
    ~CubMergeSort();
    CubMergeSort(const CubMergeSort&) = delete;
    CubMergeSort& operator=(const CubMergeSort&) = delete;
    void run(T* dData);

private:
    long long n_;
    void* temp_ = nullptr;
    unsigned long long bytes_ = 0;
};

// Naive 1: one GPU thread merges everything, sequentially.
void oneThreadMerge(const int* dA, long long nA, const int* dB, long long nB, int* dM);

// Naive 2: one thread per input element, which finds its rank in the other
// array by binary search; its output position is its own index plus that rank.
void rankMerge(const int* dA, long long nA, const int* dB, long long nB, int* dM);

// Naive 2 as a sort: passes of rank merges, runs of 1, 2, 4, ... (dTemp holds n).
void rankMergeSort(int* dData, int* dTemp, long long n);

}  // namespace lab::peers
