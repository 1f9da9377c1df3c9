// Errors and CUDA error checks shared by every part.
//
// Launchers and helpers report problems by throwing lab::Error with a message
// a student can act on; the demos print it and exit non-zero, the graders
// report it as a failed check. Nothing here ever aborts the process.
#pragma once

#include <cuda_runtime_api.h>

#include <sstream>
#include <stdexcept>
#include <string>

namespace lab {

// A refused argument, an unsupported size, a failed CUDA call, a missing GPU.
struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

[[noreturn]] void throwCudaError(cudaError_t err, const char* what, const char* file, int line);

}  // namespace lab

// Wraps every CUDA runtime call: CUDA_CHECK(cudaMalloc(&p, bytes));
#define CUDA_CHECK(call)                                                    \
    do {                                                                    \
        const cudaError_t lab_err_ = (call);                                \
        if (lab_err_ != cudaSuccess)                                        \
            ::lab::throwCudaError(lab_err_, #call, __FILE__, __LINE__);     \
    } while (0)

// After every kernel launch: catches bad launch shapes at once; with DEBUG=1
// (LAB_SYNC_LAUNCHES) it also waits for the kernel so faults name this line.
#ifdef LAB_SYNC_LAUNCHES
#define CUDA_CHECK_LAUNCH(kernel_name)                                      \
    do {                                                                    \
        CUDA_CHECK(cudaGetLastError());                                     \
        CUDA_CHECK(cudaDeviceSynchronize());                                \
    } while (0)
#else
#define CUDA_CHECK_LAUNCH(kernel_name) CUDA_CHECK(cudaGetLastError())
#endif

// Argument checks in launchers: LAB_REQUIRE(n <= 1024, "n = " << n << " is too large");
#define LAB_REQUIRE(cond, message)                                          \
    do {                                                                    \
        if (!(cond)) {                                                      \
            std::ostringstream lab_os_;                                     \
            lab_os_ << message;                                             \
            throw ::lab::Error(lab_os_.str());                              \
        }                                                                   \
    } while (0)
