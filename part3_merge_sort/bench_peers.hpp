// CCCL peers of the Part 3 tables (Thrust and CUB ship with the CUDA toolkit).
// Kept apart from main.cu so that their long compile happens once. The naive
// GPU merges of the instructors' tables are instructor files (reference_peers.*),
// not in the student copy.
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

// cub::DeviceMerge::MergeKeys (stable: A first on ties) of nA and nB keys,
// with its temporary storage owned here; T is int or Tagged. CCCL has it
// from version 2.6 on (CUDA 12.4's has not); with an older one available()
// is false and the tables leave it out.
template <class T>
class CubMerge {
public:
    CubMerge(long long nA, long long nB);
    ~CubMerge();
    CubMerge(const CubMerge&) = delete;
    CubMerge& operator=(const CubMerge&) = delete;
    static bool available();
    void run(const T* dA, const T* dB, T* dM);

private:
    long long nA_, nB_;
    void* temp_ = nullptr;
    unsigned long long bytes_ = 0;
};

// cub::DeviceRadixSort::SortKeys of n ints, all 32 bits, with its second
// buffer and temporary storage owned here: the bound a comparison sort is not
// expected to reach. run() leaves the keys sorted in dData: where CUB ends in
// its second buffer, it copies them back (four 8-bit passes end in the first).
class CubRadixSort {
public:
    explicit CubRadixSort(long long n);
    ~CubRadixSort();
    CubRadixSort(const CubRadixSort&) = delete;
    CubRadixSort& operator=(const CubRadixSort&) = delete;
    void run(int* dData);

private:
    long long n_;
    int* other_ = nullptr;
    void* temp_ = nullptr;
    unsigned long long bytes_ = 0;
};

}  // namespace lab::peers
