// The trace's canary (trace.cpp): a kernel only the lab launches, inside every
// traced window, so that a trace switched off during the call shows.
#include "trace.hpp"

namespace lab::test {

__global__ void traceCanary_k(int* out) {
    if (threadIdx.x < 3) out[threadIdx.x] = static_cast<int>(threadIdx.x);
}

void launchTraceCanary(int* device) { traceCanary_k<<<1, 32>>>(device); }

}  // namespace lab::test
