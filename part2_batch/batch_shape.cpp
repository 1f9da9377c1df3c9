// Launch shape of the batch kernels: shared by the reference, the student
// skeleton, the graders and the demo, so they all agree on pairs per block.
#include "part2.cuh"

#include "../common/cuda_check.hpp"

namespace lab {

int batchThreadsPerBlock(int d, int requested) {
    LAB_REQUIRE(d >= 1 && d <= kMaxBatchD, "d = " << d << " is not supported: batches need 1 <= d <= " << kMaxBatchD);
    if (requested == 0) return kMaxBatchD / d * d;
    LAB_REQUIRE(requested > 0 && requested <= kMaxBatchD && requested % d == 0,
                "threads per block = " << requested << " must be a positive multiple of d = " << d
                                       << " and at most " << kMaxBatchD);
    return requested;
}

}  // namespace lab
