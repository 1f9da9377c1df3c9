#include "cuda_check.hpp"

namespace lab {

void throwCudaError(cudaError_t err, const char* what, const char* file, int line) {
    std::ostringstream os;
    os << "CUDA error " << cudaGetErrorName(err) << " (" << cudaGetErrorString(err) << ") in "
       << what << " at " << file << ":" << line;
    throw Error(os.str());
}

}  // namespace lab
