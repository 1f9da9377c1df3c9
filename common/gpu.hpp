// Is there a GPU we can run kernels on? If not, why not?
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace lab {

struct GpuInfo {
    bool available = false;
    std::string reason;          // why not, when !available
    std::string name;            // e.g. "NVIDIA H100 80GB HBM3"
    int device = 0;
    int deviceCount = 0;         // devices visible (CUDA_VISIBLE_DEVICES); device 0 is used
    int smCount = 0;
    int ccMajor = 0, ccMinor = 0;
    std::size_t globalMemBytes = 0;
    std::string uuid;            // "GPU-8c1f...": the driver's name for device 0 (empty when emulated)
};

// Probes device 0 once and caches the answer. Never throws.
const GpuInfo& detectGpu();

// One line for banners: "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.1 GiB)" or "no GPU: <reason>".
std::string describeGpu(const GpuInfo& gpu);

// True when this process runs under NVIDIA's compute-sanitizer, which loads
// its checker into the CUDA runtime through the injection variables of the
// environment. Tests then shrink their sizes, allocate arrays without guard
// zones (so a read past an array is a read past its allocation) and leave
// CUPTI off. Deciding here, not from a variable the caller sets, gives graded
// and sanitized runs the same environment.
bool underComputeSanitizer();

// True in a build for the CPU emulator (make EMULATE=1, emulator/): tests
// then take their quick sizes and exact allocations, as under the sanitizer.
#ifdef LAB_EMULATED
inline constexpr bool kEmulated = true;
#else
inline constexpr bool kEmulated = false;
#endif

// The emulated profile (EMU_PROFILE=1; emulator/emu_profile.cpp): in an
// emulated build, `launches` run with it counting, then its table is printed
// on stdout under `title`: per kernel and launch shape, the global and shared
// memory requests, sectors, wavefronts and bank conflicts as Nsight Compute
// counts them (what it had counted before comes first, in a table of its
// own). A GPU build runs nothing: profile with Nsight Compute (ncu) there.
void printEmulatedProfile(const std::string& title, const std::function<void()>& launches);
// The demos' --profile (emulated builds): every launch from now on counted,
// the table printed at exit.
void profileEveryLaunch();

// Bytes free on the device now (0 without a GPU).
std::size_t freeDeviceBytes();

// "1.50 GiB", "12.0 MiB", "512 B"
std::string formatBytes(double bytes);

// Throws lab::Error "not enough device memory for <what>: needs <bytes>,
// <free> free" (after a failed allocation, whose error it clears).
[[noreturn]] void throwOutOfDeviceMemory(const char* what, std::size_t bytes);

}  // namespace lab
