// CCCL peers of the Part 2 timing table (Thrust and CUB ship with the CUDA
// toolkit). Kept apart from main.cu so that their long compile happens once.
#pragma once

#include "../common/peer_memory.hpp"

namespace lab::peers {

// All N pairs as ONE Thrust merge of (pair index, key) tuples: tuples sort
// by pair first, so the merged output is every pair's merge, back to back.
// Its temporary storage comes from `memory`, which keeps it between calls,
// and it returns without waiting for the GPU, as the lab's launchers do
// (common/peer_memory.hpp).
// Inputs: A's pair indices and keys (nA of each), likewise B; outputs nA + nB.
void thrustMergeTuples(const int* dApair, const int* dAkey, long long nA, const int* dBpair,
                       const int* dBkey, long long nB, int* dOutPair, int* dOutKey, KeptMemory& memory);

// cub::DeviceSegmentedSort::StableSortKeys over N segments of d keys.
// Owns its temporary storage; run() only enqueues work.
class CubSegmentedSort {
public:
    CubSegmentedSort(int d, long long N);
    ~CubSegmentedSort();
    CubSegmentedSort(const CubSegmentedSort&) = delete;
    CubSegmentedSort& operator=(const CubSegmentedSort&) = delete;
    void run(const int* dIn, int* dOut);

private:
    int d_;
    long long n_;
    int* offsets_ = nullptr;  // N + 1 segment offsets
    void* temp_ = nullptr;
    unsigned long long tempBytes_ = 0;
};

}  // namespace lab::peers
