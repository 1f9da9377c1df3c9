// LAB_HD marks functions that run on both the host and the device. Headers
// that use it compile with nvcc (kernels) and with the plain host compiler
// (graders), where the CUDA qualifiers do not exist.
#pragma once

#ifdef __CUDACC__
#define LAB_HD __host__ __device__
#else
#define LAB_HD
#endif
