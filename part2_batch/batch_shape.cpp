// Launch shape of the batch kernels: shared by the reference, the student
// skeleton, the graders and the demo, so they all agree on pairs per block.
#include "part2.cuh"

#include "../common/cuda_check.hpp"

#include <climits>

namespace lab {

int batchThreadsPerBlock(int d, int requested) {
    LAB_REQUIRE(d >= 1 && d <= kMaxBatchD, "d = " << d << " is not supported: batches need 1 <= d <= " << kMaxBatchD);
    if (requested == 0) return d <= kBatchBlockThreads ? kBatchBlockThreads / d * d : d;
    LAB_REQUIRE(requested > 0 && requested <= kMaxBatchD && requested % d == 0,
                "threads per block = " << requested << " must be a positive multiple of d = " << d
                                       << " and at most " << kMaxBatchD);
    return requested;
}

BatchShape batchShape(int d, long long N, int requested) {
    const int threads = batchThreadsPerBlock(d, requested);
    LAB_REQUIRE(N >= 0, "the number of segments N must be >= 0, got " << N);
    const long long perBlock = threads / d;
    const long long blocks = (N + perBlock - 1) / perBlock;
    LAB_REQUIRE(blocks <= INT_MAX, "N = " << N << " segments need " << blocks << " blocks, more than a grid holds");
    return {threads, static_cast<unsigned>(blocks)};
}

void checkBatchPointers(long long N, const void* in, const void* out, const void* split) {
    LAB_REQUIRE(N == 0 || (in != nullptr && out != nullptr && split != nullptr),
                "null device pointer passed to a batch launcher");
}

}  // namespace lab
