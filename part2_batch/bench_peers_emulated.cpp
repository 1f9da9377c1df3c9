// The emulated build's stand-ins for the CCCL peers of bench_peers.cu (CUB
// and Thrust do not build for the emulator): emulated demos print no timing
// tables, so they only refuse.
#include "bench_peers.hpp"

#include "../common/not_emulated.hpp"

namespace lab::peers {

void thrustMergeTuples(const int*, const int*, long long, const int*, const int*, long long, int*, int*, KeptMemory&) {
    notEmulated("thrust::merge");
}
CubSegmentedSort::CubSegmentedSort(int d, long long N) : d_(d), n_(N) { notEmulated("cub::DeviceSegmentedSort"); }
CubSegmentedSort::~CubSegmentedSort() {}
void CubSegmentedSort::run(const int*, int*) { notEmulated("cub::DeviceSegmentedSort"); }

}  // namespace lab::peers
