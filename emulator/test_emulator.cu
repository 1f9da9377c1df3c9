// The emulator's own tests (make test EMULATE=1 runs them first): every
// fault it claims to catch is caught, with the thread and block named (and
// the kernel and the line where it can tell), and what it must not flag runs
// clean. Each case runs in a child process (a fault, as on a GPU, spoils the
// rest of the process until emu::clearFault).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace {

// ---------------------------------------------------------------- kernels

__global__ void sumPairs_k(const int* in, int* out, int n) {
    __shared__ int s[256];
    const int t = threadIdx.x;
    s[t] = t < n ? in[t] : 0;
    __syncthreads();
    if (t % 2 == 0) out[t / 2] = s[t] + s[t + 1];
}

__global__ void noBarrier_k(const int* in, int* out) {
    __shared__ int s[64];
    const int t = threadIdx.x;
    s[t] = in[t];
    __syncthreads();
    s[t] += 1;
    out[t] = s[(t + 1) % 64];  // a neighbour's value, which it updates with no barrier between
}

__global__ void sharedFlag_k(int* out) {
    __shared__ int flag;
    flag = 0;  // every thread resets it: the odd-even sort's lesson
    __syncthreads();
    if (threadIdx.x == 3) flag = 1;
    if (flag) out[threadIdx.x] = 1;  // read while thread 3 writes, no barrier between
}

__global__ void twoValues_k(int* out) {
    __shared__ int s;
    if (threadIdx.x < 2) s = static_cast<int>(threadIdx.x) + 1;  // 1 and 2, no barrier between
    __syncthreads();
    out[threadIdx.x] = s;
}

__global__ void sharedOverflow_k(int* out) {
    __shared__ int tile[64];
    tile[threadIdx.x] = static_cast<int>(threadIdx.x);
    __syncthreads();
    out[threadIdx.x] = tile[threadIdx.x + 1];  // the last thread reads tile[64]
}

// Each block writes its 1024 outputs at block * 1024: in 64 bits, or in an
// `int` that wraps past 2^31.
__global__ void wideIndex_k(int* out) {
    const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    out[i] = static_cast<int>(blockIdx.x);
}
__global__ void narrowIndex_k(int* out) {
    const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    out[i] = static_cast<int>(blockIdx.x);
}

__global__ void unwrittenShared_k(int* out) {
    __shared__ int s[64];
    if (threadIdx.x < 32) s[threadIdx.x] = 1;
    __syncthreads();
    out[threadIdx.x] = s[threadIdx.x];  // threads 32..63 read what nobody wrote
}

__global__ void pastTheEnd_k(const int* in, int* out, int n) {
    const int t = threadIdx.x;
    out[t] = in[t + 1];  // the last thread reads in[n]
    (void)n;
}

__global__ void readHost_k(const int* host, int* out) { out[threadIdx.x] = host[threadIdx.x]; }

constexpr int kReadPastLine = __LINE__ + 3;  // the line of the read below
template <class T>
__global__ void readPast_k(const T* in, T* out) {
    out[threadIdx.x] = in[threadIdx.x + 1];  // the last thread reads one past the end
}

constexpr int kEarlyBarrierLine = __LINE__ + 3;  // the line of its barrier
__global__ void earlyReturn_k(int* out) {
    if (threadIdx.x >= 16) return;
    __syncthreads();  // threads 16.. never arrive
    out[threadIdx.x] = 1;
}

__global__ void warpOps_k(int* out) {
    const int lane = threadIdx.x % 32;
    const int v = static_cast<int>(threadIdx.x) * 10;
    out[threadIdx.x * 6 + 0] = __shfl_sync(0xffffffffu, v, 5);
    out[threadIdx.x * 6 + 1] = __shfl_up_sync(0xffffffffu, v, 1);
    out[threadIdx.x * 6 + 2] = __shfl_down_sync(0xffffffffu, v, 2);
    out[threadIdx.x * 6 + 3] = __shfl_xor_sync(0xffffffffu, v, 1);
    out[threadIdx.x * 6 + 4] = static_cast<int>(__ballot_sync(0xffffffffu, lane % 3 == 0));
    out[threadIdx.x * 6 + 5] = __syncthreads_count(threadIdx.x % 4 == 0) + 1000 * __syncthreads_or(threadIdx.x == 7) +
                               10000 * __syncthreads_and(threadIdx.x < 1000);
}

__global__ void atomics_k(int* counter) {
    __shared__ int local;
    if (threadIdx.x == 0) local = 0;
    __syncthreads();
    atomicAdd(&local, 1);
    __syncthreads();
    if (threadIdx.x == 0) atomicAdd(counter, local);
}

__global__ void warpSynchronous_k(int* out) {
    __shared__ int s[32];
    s[threadIdx.x] = static_cast<int>(threadIdx.x);
    __syncwarp();
    out[threadIdx.x] = s[31 - threadIdx.x];  // ordered by the warp barrier
}

__global__ void tooMuchShared_k(int* out) {
    __shared__ int a[8000], b[8000];  // 64000 bytes: nvcc refuses this kernel
    a[threadIdx.x] = 1;
    b[threadIdx.x] = 2;
    __syncthreads();
    out[threadIdx.x] = a[threadIdx.x] + b[threadIdx.x];
}

// The profile's kernels (EMU_PROFILE): each access pattern's requests,
// sectors and wavefronts are known by hand.
__global__ void loadStride_k(const int* in, int* out, int stride) {
    const int t = threadIdx.x;
    out[t] = in[t * stride];  // one load and one store per thread
}

__global__ void loadLoop_k(const int* in, int* out) {
    const int t = threadIdx.x;
    int sum = 0;
    for (int i = 0; i < 4; ++i) sum += in[i * 32 + t];  // the same load four times: four requests
    out[t] = sum;
}

__global__ void sharedStride_k(int* out, int stride) {
    __shared__ int s[32 * 32];
    const int t = threadIdx.x;
    s[t * stride] = t;
    __syncthreads();
    out[t] = s[t * stride];
}

__global__ void sharedBroadcast_k(int* out) {
    __shared__ int s[32];
    const int t = threadIdx.x;
    s[t] = t;
    __syncthreads();
    out[t] = s[0];  // every lane the same word
}

__global__ void sharedWide_k(int* out) {
    __shared__ long long s[32];
    const int t = threadIdx.x;
    s[t] = t;  // 8 bytes a lane: a half warp per wavefront
    __syncthreads();
    out[t] = static_cast<int>(s[t]);
}

__global__ void idleHalf_k(const int* in, int* out) {
    __shared__ int s[64];
    const int t = threadIdx.x;
    if (t < 32) s[t] = in[t];  // threads 32..63 wait at the barrier with nothing done
    __syncthreads();
    if (t < 32) out[t] = s[31 - t];
}

// ---------------------------------------------------------------- harness

int* deviceInts(int n, int value = 1) {
    std::vector<int> host(static_cast<std::size_t>(n), value);
    int* d = nullptr;
    cudaMalloc(reinterpret_cast<void**>(&d), host.size() * sizeof(int));
    cudaMemcpy(d, host.data(), host.size() * sizeof(int), cudaMemcpyHostToDevice);
    return d;
}

std::vector<int> hostInts(const int* d, int n) {
    std::vector<int> host(static_cast<std::size_t>(n));
    cudaMemcpy(host.data(), d, host.size() * sizeof(int), cudaMemcpyDeviceToHost);
    return host;
}

// Where a line of this file is, as a fault's report says it.
std::string here(int line) { return "emulator/test_emulator.cu:" + std::to_string(line); }

// How often `text` occurs in `s`.
int occurrences(const std::string& s, const std::string& text) {
    int n = 0;
    for (std::size_t at = s.find(text); at != std::string::npos; at = s.find(text, at + 1)) ++n;
    return n;
}

// "" when the launch ended as expected: `fault` empty for a clean run, else a
// text the fault message must hold (and every fault names a thread).
std::string outcome(const std::string& fault) {
    const cudaError_t err = cudaDeviceSynchronize();
    const std::string message = emu::faultMessage();
    if (fault.empty())
        return err == cudaSuccess ? "" : "unexpected fault: " + message;
    if (err == cudaSuccess) return "no fault, expected one about '" + fault + "'";
    if (message.find(fault) == std::string::npos || message.find("thread (") == std::string::npos)
        return "fault '" + message + "' does not say '" + fault + "' and name the thread";
    return "";
}

// The profile of the one kernel launched since profiling began, in words,
// against `want`: "" when they agree.
std::string profileIs(const std::string& kernel, const std::string& want) {
    if (std::string o = outcome(""); !o.empty()) return o;
    if (emu::profileRowCount() != 1) return "profile rows: " + std::to_string(emu::profileRowCount()) + " instead of 1";
    const emu::ProfileRow r = emu::profileRow(0);
    std::ostringstream got;
    got << "global ld " << r.globalLoads << " req " << r.globalLoadSectors << " sectors, st " << r.globalStores
        << " req " << r.globalStoreSectors << " sectors; shared ld " << r.sharedLoads << " req "
        << r.sharedLoadWavefronts << " wavefronts " << r.sharedLoadConflicts << " conflicts, st " << r.sharedStores
        << " req " << r.sharedStoreWavefronts << " wavefronts " << r.sharedStoreConflicts << " conflicts; "
        << r.blocks << " blocks, " << r.threads << " threads, " << r.barriers << " barriers, " << r.idleLaneWaits
        << " idle";
    if (r.kernel != kernel) return "kernel '" + std::string(r.kernel) + "' instead of '" + kernel + "'";
    return got.str() == want ? std::string() : "profile '" + got.str() + "', expected '" + want + "'";
}

struct Case {
    const char* name;
    std::function<std::string()> body;
};

const std::vector<Case>& cases() {
    static const std::vector<Case> all = {
        {"a correct kernel runs clean and computes", [] {
             int* in = deviceInts(256, 3);
             int* out = deviceInts(128, 0);
             sumPairs_k<<<1, 256>>>(in, out, 256);
             if (std::string o = outcome(""); !o.empty()) return o;
             for (int v : hostInts(out, 128))
                 if (v != 6) return std::string("wrong sum ") + std::to_string(v);
             return std::string();
         }},
        {"a read of another thread's shared write without a barrier is a race", [] {
             noBarrier_k<<<1, 64>>>(deviceInts(64), deviceInts(64));
             return outcome("shared-memory race");
         }},
        {"the shared flag every thread resets is a race", [] {
             sharedFlag_k<<<1, 64>>>(deviceInts(64, 0));
             return outcome("shared-memory race on shared variable 'flag'");
         }},
        {"two threads writing two values between two barriers is a race, named as such", [] {
             twoValues_k<<<1, 64>>>(deviceInts(64, 0));
             if (std::string o = outcome("written again with another value"); !o.empty()) return o;
             return std::string(emu::faultKind()) == "a shared-memory race"
                        ? std::string()
                        : "kind '" + std::string(emu::faultKind()) + "'";
         }},
        {"a read past a shared array names the array, the element and its bound", [] {
             sharedOverflow_k<<<1, 64>>>(deviceInts(64, 0));
             if (std::string o = outcome("read of 4 bytes at element 64 of shared variable 'tile' (64 elements of 4 "
                                         "bytes), past its end");
                 !o.empty())
                 return o;
             return std::string(emu::faultKind()) == "an out-of-bounds access"
                        ? std::string()
                        : "kind '" + std::string(emu::faultKind()) + "'";
         }},
        {"a SparseRun runs a few blocks of a grid past 2^31 threads, and a 32-bit index is caught", [] {
             const long long blocks = (1ll << 21) + 1;  // 2^31 + 1024 threads of 1024
             const std::size_t bytes = static_cast<std::size_t>(blocks) * 1024 * sizeof(int);
             const emu::SparseRun sparse;
             int* out = nullptr;
             if (cudaMalloc(reinterpret_cast<void**>(&out), bytes) != cudaSuccess)
                 return std::string("no sparse 8 GiB allocation");
             emu::recordLaunches(true);
             wideIndex_k<<<static_cast<unsigned>(blocks), 1024>>>(out);
             emu::recordLaunches(false);
             if (std::string o = outcome(""); !o.empty()) return o;
             if (emu::launchCount() != 1 || emu::launchBlocks(0) != blocks)
                 return std::string("the trace does not hold the whole grid");
             int last = 0;
             cudaMemcpy(&last, out + blocks * 1024 - 1, sizeof last, cudaMemcpyDeviceToHost);
             if (last != static_cast<int>(blocks - 1)) return "the last block wrote " + std::to_string(last);
             const std::vector<long long> ran = emu::sparseBlocks(blocks);
             if (ran != std::vector<long long>{0, blocks / 2, blocks - 2, blocks - 1})
                 return std::string("other blocks ran");
             narrowIndex_k<<<static_cast<unsigned>(blocks), 1024>>>(out);
             std::string o = outcome("2^32 elements of 4 bytes before element 21474");  // 2^31 + the thread
             if (o.empty() && std::string(emu::faultMessage()).find(" of a " + std::to_string(bytes) +
                                                                    "-byte device allocation: an index that "
                                                                    "wrapped in 32 bits") == std::string::npos)
                 o = std::string("the allocation is not named: ") + emu::faultMessage();
             cudaFree(out);
             return o;
         }},
        {"shared memory no thread wrote reads as the poison, never zero", [] {
             int* out = deviceInts(64);
             unwrittenShared_k<<<1, 64>>>(out);
             if (std::string o = outcome(""); !o.empty()) return o;
             const std::vector<int> r = hostInts(out, 64);
             return r[0] == 1 && r[63] == static_cast<int>(0xA5A5A5A5u) ? std::string()
                                                                          : "read " + std::to_string(r[63]);
         }},
        {"a read one past the end of an allocation", [] {
             pastTheEnd_k<<<1, 64>>>(deviceInts(64), deviceInts(64), 64);
             return outcome("0 bytes past the end of a 256-byte device allocation");
         }},
        {"a kernel given a host pointer", [] {
             std::vector<int> host(64, 1);
             readHost_k<<<1, 64>>>(host.data(), deviceInts(64));
             return outcome("not device memory");
         }},
        {"a barrier some threads never reach", [] {
             earlyReturn_k<<<1, 64>>>(deviceInts(64));
             return outcome("a barrier some threads never reach");
         }},
        {"shuffles, votes and counting barriers give CUDA's results", [] {
             int* out = deviceInts(64 * 6, 0);
             warpOps_k<<<1, 64>>>(out);
             if (std::string o = outcome(""); !o.empty()) return o;
             const std::vector<int> r = hostInts(out, 64 * 6);
             for (int t = 0; t < 64; ++t) {
                 const int lane = t % 32, base = t - lane;
                 const int want[6] = {(base + 5) * 10, (lane >= 1 ? t - 1 : t) * 10, (lane + 2 < 32 ? t + 2 : t) * 10,
                                      (t ^ 1) * 10, static_cast<int>(0x49249249u), 16 + 1000 + 10000};
                 for (int k = 0; k < 6; ++k)
                     if (r[static_cast<std::size_t>(t * 6 + k)] != want[k])
                         return "thread " + std::to_string(t) + ", result " + std::to_string(k) + ": " +
                                std::to_string(r[static_cast<std::size_t>(t * 6 + k)]) + " instead of " +
                                std::to_string(want[k]);
             }
             return std::string();
         }},
        {"atomics are no race", [] {
             int* counter = deviceInts(1, 0);
             atomics_k<<<3, 128>>>(counter);
             if (std::string o = outcome(""); !o.empty()) return o;
             const int total = hostInts(counter, 1)[0];
             return total == 384 ? std::string() : "counter " + std::to_string(total) + " instead of 384";
         }},
        {"__syncwarp orders a warp's shared accesses", [] {
             warpSynchronous_k<<<1, 32>>>(deviceInts(32));
             return outcome("");
         }},
        {"more than 48 KB of static shared memory", [] {
             tooMuchShared_k<<<1, 32>>>(deviceInts(32));
             return outcome("more than a block's 48 KB");
         }},
        {"a fault names the kernel as compiled and the line of the access", [] {
             readPast_k<<<1, 64>>>(deviceInts(64), deviceInts(64));
             return outcome("in readPast_k<int> at " + here(kReadPastLine));
         }},
        {"a race names the lines of both accesses", [] {
             noBarrier_k<<<1, 64>>>(deviceInts(64), deviceInts(64));
             if (std::string o = outcome("shared-memory race"); !o.empty()) return o;
             const std::string message = emu::faultMessage();
             return occurrences(message, "emulator/test_emulator.cu:") == 2 ? std::string()
                                                                             : "not two lines in '" + message + "'";
         }},
        {"a barrier some threads never reach is named by its line", [] {
             earlyReturn_k<<<1, 64>>>(deviceInts(64));
             if (std::string o = outcome("wait at __syncthreads, but"); !o.empty()) return o;
             const std::string message = emu::faultMessage();
             return message.find("(0,0,0) at " + here(kEarlyBarrierLine)) != std::string::npos
                        ? std::string()
                        : "no line in '" + message + "'";
         }},
        {"the report names the test case, and the device works again after clearFault", [] {
             char path[] = "/tmp/emu-test-XXXXXX";
             const int fd = mkstemp(path);
             if (fd < 0 || !std::freopen(path, "w", stderr)) return std::string("no file for stderr");
             close(fd);
             std::size_t free0 = 0, free1 = 0, total = 0;
             cudaMemGetInfo(&free0, &total);
             {
                 const emu::CaseContext context("n=64 seed 7");
                 int* in = deviceInts(64);
                 int* out = deviceInts(64);
                 readPast_k<<<1, 64>>>(in, out);
                 cudaFree(in);  // the error it returns is the fault's, but it frees
                 cudaFree(out);
             }
             std::fflush(stderr);
             std::ifstream file(path);
             std::stringstream printed;
             printed << file.rdbuf();
             unlink(path);
             if (printed.str().find(" [n=64 seed 7]\n") == std::string::npos)
                 return "the report '" + printed.str() + "' does not name the case";
             if (cudaDeviceSynchronize() == cudaSuccess) return std::string("no fault to clear");
             emu::clearFault();
             cudaMemGetInfo(&free1, &total);
             if (free1 != free0) return std::string("the memory freed after the fault is not back");
             int* in = deviceInts(256, 3);
             int* out = deviceInts(128, 0);
             sumPairs_k<<<1, 256>>>(in, out, 256);
             if (std::string o = outcome(""); !o.empty()) return "after clearFault: " + o;
             return hostInts(out, 128)[5] == 6 ? std::string() : std::string("after clearFault: a wrong sum");
         }},
        {"a block of 1025 threads is refused at launch", [] {
             sumPairs_k<<<1, 1025>>>(deviceInts(1), deviceInts(1), 1);
             const cudaError_t err = cudaGetLastError();
             return err == cudaErrorInvalidConfiguration ? std::string()
                                                         : std::string("launch said ") + cudaGetErrorName(err);
         }},
        {"profile: a coalesced int load is 1 request of 4 sectors", [] {
             emu::profile(true);
             loadStride_k<<<1, 32>>>(deviceInts(32), deviceInts(32), 1);
             return profileIs("loadStride_k", "global ld 1 req 4 sectors, st 1 req 4 sectors; shared ld 0 req 0 "
                                              "wavefronts 0 conflicts, st 0 req 0 wavefronts 0 conflicts; 1 blocks, "
                                              "32 threads, 0 barriers, 0 idle");
         }},
        {"profile: a stride-2 int load touches 8 sectors", [] {
             emu::profile(true);
             loadStride_k<<<1, 32>>>(deviceInts(64), deviceInts(32), 2);
             return profileIs("loadStride_k", "global ld 1 req 8 sectors, st 1 req 4 sectors; shared ld 0 req 0 "
                                              "wavefronts 0 conflicts, st 0 req 0 wavefronts 0 conflicts; 1 blocks, "
                                              "32 threads, 0 barriers, 0 idle");
         }},
        {"profile: a load run four times by each lane is four requests", [] {
             emu::profile(true);
             loadLoop_k<<<2, 32>>>(deviceInts(128), deviceInts(32));
             return profileIs("loadLoop_k", "global ld 8 req 32 sectors, st 2 req 8 sectors; shared ld 0 req 0 "
                                            "wavefronts 0 conflicts, st 0 req 0 wavefronts 0 conflicts; 2 blocks, "
                                            "64 threads, 0 barriers, 0 idle");
         }},
        {"profile: shared ints at stride 1 take 1 wavefront, no conflict", [] {
             emu::profile(true);
             sharedStride_k<<<1, 32>>>(deviceInts(32), 1);
             return profileIs("sharedStride_k", "global ld 0 req 0 sectors, st 1 req 4 sectors; shared ld 1 req 1 "
                                                "wavefronts 0 conflicts, st 1 req 1 wavefronts 0 conflicts; 1 blocks, "
                                                "32 threads, 1 barriers, 0 idle");
         }},
        {"profile: shared ints at stride 2 are a 2-way bank conflict", [] {
             emu::profile(true);
             sharedStride_k<<<1, 32>>>(deviceInts(32), 2);
             return profileIs("sharedStride_k", "global ld 0 req 0 sectors, st 1 req 4 sectors; shared ld 1 req 2 "
                                                "wavefronts 1 conflicts, st 1 req 2 wavefronts 1 conflicts; 1 blocks, "
                                                "32 threads, 1 barriers, 0 idle");
         }},
        {"profile: shared ints at stride 32 are a 32-way bank conflict", [] {
             emu::profile(true);
             sharedStride_k<<<1, 32>>>(deviceInts(32), 32);
             return profileIs("sharedStride_k", "global ld 0 req 0 sectors, st 1 req 4 sectors; shared ld 1 req 32 "
                                                "wavefronts 31 conflicts, st 1 req 32 wavefronts 31 conflicts; 1 "
                                                "blocks, 32 threads, 1 barriers, 0 idle");
         }},
        {"profile: every lane reading one shared word is a broadcast, 1 wavefront", [] {
             emu::profile(true);
             sharedBroadcast_k<<<1, 32>>>(deviceInts(32));
             return profileIs("sharedBroadcast_k", "global ld 0 req 0 sectors, st 1 req 4 sectors; shared ld 1 req 1 "
                                                   "wavefronts 0 conflicts, st 1 req 1 wavefronts 0 conflicts; 1 "
                                                   "blocks, 32 threads, 1 barriers, 0 idle");
         }},
        {"profile: 8-byte shared values at stride 1 take 2 wavefronts, no conflict", [] {
             emu::profile(true);
             sharedWide_k<<<1, 32>>>(deviceInts(32));
             return profileIs("sharedWide_k", "global ld 0 req 0 sectors, st 1 req 4 sectors; shared ld 1 req 2 "
                                              "wavefronts 0 conflicts, st 1 req 2 wavefronts 0 conflicts; 1 blocks, "
                                              "32 threads, 1 barriers, 0 idle");
         }},
        {"profile: a block of 48 threads is a full warp and a half one", [] {
             emu::profile(true);
             loadStride_k<<<1, 48>>>(deviceInts(48), deviceInts(48), 1);
             if (std::string o = profileIs("loadStride_k", "global ld 2 req 6 sectors, st 2 req 6 sectors; shared ld "
                                                           "0 req 0 wavefronts 0 conflicts, st 0 req 0 wavefronts 0 "
                                                           "conflicts; 1 blocks, 48 threads, 0 barriers, 0 idle");
                 !o.empty())
                 return o;
             emu::clearProfile();
             sharedStride_k<<<1, 48>>>(deviceInts(48), 1);
             return profileIs("sharedStride_k", "global ld 0 req 0 sectors, st 2 req 6 sectors; shared ld 2 req 2 "
                                                "wavefronts 0 conflicts, st 2 req 2 wavefronts 0 conflicts; 1 blocks, "
                                                "48 threads, 1 barriers, 0 idle");
         }},
        {"profile: threads that only wait at a barrier are idle", [] {
             emu::profile(true);
             idleHalf_k<<<3, 64>>>(deviceInts(32), deviceInts(32));
             return profileIs("idleHalf_k", "global ld 3 req 12 sectors, st 3 req 12 sectors; shared ld 3 req 3 "
                                            "wavefronts 0 conflicts, st 3 req 3 wavefronts 0 conflicts; 3 blocks, "
                                            "192 threads, 3 barriers, 96 idle");
         }},
        {"profile: atomics and a thread's own stack are not counted as global memory", [] {
             emu::profile(true);
             atomics_k<<<3, 128>>>(deviceInts(1, 0));
             return profileIs("atomics_k", "global ld 0 req 0 sectors, st 0 req 0 sectors; shared ld 3 req 3 "
                                           "wavefronts 0 conflicts, st 3 req 3 wavefronts 0 conflicts; 3 blocks, "
                                           "384 threads, 6 barriers, 765 idle");
         }},
        {"profile: nothing is counted unless asked, and the CSV file gets a row per kernel and shape", [] {
             emu::profile(false);
             loadStride_k<<<1, 32>>>(deviceInts(32), deviceInts(32), 1);
             if (emu::profileRowCount() != 0) return std::string("counted with the profile off");
             char path[] = "/tmp/emu-profile-XXXXXX";
             const int fd = mkstemp(path);
             if (fd < 0) return std::string("no file for the CSV");
             close(fd);
             setenv("EMU_PROFILE_FILE", path, 1);
             emu::profile(true);
             loadStride_k<<<1, 32>>>(deviceInts(32), deviceInts(32), 1);
             loadStride_k<<<2, 32>>>(deviceInts(64), deviceInts(64), 1);
             loadStride_k<<<1, 32>>>(deviceInts(32), deviceInts(32), 1);
             if (!std::freopen("/dev/null", "w", stdout)) return std::string("no stdout");
             emu::printProfile("the test");
             std::ifstream file(path);
             std::vector<std::string> lines;
             for (std::string line; std::getline(file, line);) lines.push_back(line);
             unlink(path);
             if (lines.size() != 3 || lines[0].rfind("kernel,grid,block,", 0) != 0 ||
                 lines[1].rfind("\"loadStride_k\",1,32,0,2,2,64,2,8,2,8,", 0) != 0 ||
                 lines[2].rfind("\"loadStride_k\",2,32,0,1,2,64,2,8,2,8,", 0) != 0)
                 return "the CSV reads '" + (lines.empty() ? std::string() : lines[0]) + "' ... (" +
                        std::to_string(lines.size()) + " lines)";
             return std::string();
         }},
        {"host code that dereferences a device pointer crashes, as on a GPU", [] {
             int* d = deviceInts(4);
             const pid_t child = fork();
             if (child == 0) {
                 volatile int v = d[0];
                 (void)v;
                 _exit(0);
             }
             int status = 0;
             waitpid(child, &status, 0);
             return WIFSIGNALED(status) ? std::string() : std::string("the host read a device pointer");
         }},
    };
    return all;
}

}  // namespace

int main() {
    int failed = 0;
    std::printf("%s\n", emu::describe());
    for (const Case& c : cases()) {
        int pipeFd[2];
        if (pipe(pipeFd) != 0) return 2;
        std::fflush(stdout);  // not printed again by a child that flushes its copy
        const pid_t child = fork();
        if (child == 0) {
            close(pipeFd[0]);
            if (!std::freopen("/dev/null", "w", stderr)) _exit(3);  // the faults' own lines
            const std::string problem = c.body();
            if (write(pipeFd[1], problem.data(), problem.size()) < 0) _exit(3);
            _exit(problem.empty() ? 0 : 1);
        }
        close(pipeFd[1]);
        std::string problem;
        char buf[512];
        for (ssize_t got; (got = read(pipeFd[0], buf, sizeof buf)) > 0;) problem.append(buf, static_cast<std::size_t>(got));
        close(pipeFd[0]);
        int status = 0;
        waitpid(child, &status, 0);
        const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (!ok && problem.empty()) problem = "the case crashed";
        std::printf("%s  %s%s%s\n", ok ? "ok    " : "FAILED", c.name, ok ? "" : ": ", problem.c_str());
        failed += !ok;
    }
    // The closing line every test program of the lab ends with.
    std::printf("%zu passed, %d failed\n", cases().size() - static_cast<std::size_t>(failed), failed);
    return failed ? 1 : 0;
}
