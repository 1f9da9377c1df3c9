// Holds all but LEAVE_GIB of the GPU's free memory until killed, so the lab
// can be tried as on a small GPU (.ci/small-gpu).
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

int main(int argc, char** argv) {
    const double leaveGiB = argc > 1 ? std::atof(argv[1]) : 4.0;
    std::size_t freeBytes = 0, totalBytes = 0;
    if (cudaMemGetInfo(&freeBytes, &totalBytes) != cudaSuccess) return 1;
    const std::size_t leave = static_cast<std::size_t>(leaveGiB * (1ull << 30));
    std::size_t held = 0;
    // In pieces of 1 GiB, then smaller: one allocation may not take it all.
    for (std::size_t piece = 1ull << 30; piece >= (1ull << 20); piece /= 2) {
        void* p = nullptr;
        while (freeBytes > leave + piece && cudaMalloc(&p, piece) == cudaSuccess) {
            held += piece;
            cudaMemGetInfo(&freeBytes, &totalBytes);
        }
        cudaGetLastError();
    }
    std::printf("holding %.2f GiB; %.2f GiB free of %.2f GiB\n", held / double(1ull << 30),
                freeBytes / double(1ull << 30), totalBytes / double(1ull << 30));
    std::fflush(stdout);
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(60));
}
