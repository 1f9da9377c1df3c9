// Temporary device memory for the CCCL peers of the benchmark tables, kept
// between calls.
//
// A Thrust algorithm called with thrust::device allocates its temporary
// storage on every call (cudaMalloc, then cudaFree) and waits for the GPU
// before it returns. What that costs depends on what else the process holds:
// in the Part 3 demo a thrust::merge of 2^20 keys took 0.11 ms, of which the
// merge itself was 0.02 ms (H200). The lab's launchers keep their temporary
// memory in a pool and return without waiting, and the CUB peers allocate
// theirs once, so Thrust's figures would measure the driver, not the merge.
// The peers therefore run Thrust as
//
//     KeptMemory memory;  // one per table row: freed when the row is done
//     thrust::merge(thrust::cuda::par_nosync(memory), ...);
//
// with this allocator: a block, once allocated, is handed out again to later
// calls that fit in it, and freed with the allocator.
#pragma once

#include <cstddef>
#include <vector>

namespace lab::peers {

class KeptMemory {
public:
    using value_type = char;  // what Thrust's temporary allocation asks of an allocator

    KeptMemory() = default;
    ~KeptMemory();
    KeptMemory(const KeptMemory&) = delete;
    KeptMemory& operator=(const KeptMemory&) = delete;

    // The smallest free block of at least `bytes`, or a new one. Throws
    // lab::Error when the device is out of memory.
    char* allocate(std::ptrdiff_t bytes);
    // Hands the block back for later calls (stream-ordered: the next call
    // on the same stream runs after the kernels that used it).
    void deallocate(char* p, std::size_t bytes);

private:
    struct Block {
        char* p;
        std::size_t bytes;
        bool inUse;
    };
    std::vector<Block> blocks_;
};

}  // namespace lab::peers
