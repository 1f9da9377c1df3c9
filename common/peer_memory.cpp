#include "peer_memory.hpp"

#include "cuda_check.hpp"
#include "gpu.hpp"

#include <cuda_runtime_api.h>

namespace lab::peers {

KeptMemory::~KeptMemory() {
    for (const Block& b : blocks_) cudaFree(b.p);  // no throw from a destructor
}

char* KeptMemory::allocate(std::ptrdiff_t bytes) {
    const std::size_t need = bytes > 0 ? static_cast<std::size_t>(bytes) : 1;
    Block* best = nullptr;
    for (Block& b : blocks_)
        if (!b.inUse && b.bytes >= need && (!best || b.bytes < best->bytes)) best = &b;
    if (best) {
        best->inUse = true;
        return best->p;
    }
    void* p = nullptr;
    cudaError_t err = cudaMalloc(&p, need);
    if (err == cudaErrorMemoryAllocation) {  // give back the free blocks, then try once more
        cudaGetLastError();
        CUDA_CHECK(cudaDeviceSynchronize());
        for (auto it = blocks_.begin(); it != blocks_.end();) {
            if (it->inUse) {
                ++it;
            } else {
                CUDA_CHECK(cudaFree(it->p));
                it = blocks_.erase(it);
            }
        }
        err = cudaMalloc(&p, need);
        if (err == cudaErrorMemoryAllocation) throwOutOfDeviceMemory("a peer's temporary storage", need);
    }
    CUDA_CHECK(err);
    blocks_.push_back({static_cast<char*>(p), need, true});
    return static_cast<char*>(p);
}

void KeptMemory::deallocate(char* p, std::size_t) {
    for (Block& b : blocks_)
        if (b.p == p) b.inUse = false;  // no throw: Thrust calls this from destructors
}

}  // namespace lab::peers
