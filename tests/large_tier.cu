// Kernels of the [large] tier: input generators and output checkers that
// never bring 2^31 elements to the host. See large_tier.hpp.
#include "large_tier.hpp"
#include "mix.hpp"
#include "test_env.hpp"

#include "../common/cuda_check.hpp"
#include "../common/device_buffer.hpp"
#include "../common/gpu.hpp"

#include <cstdlib>
#include <cstring>
#include <sstream>

namespace lab::test::large {

namespace {

constexpr int kThreads = 256;
constexpr unsigned kBlocks = 4096;  // grid-stride loops cover any n

__device__ long long firstIndex() { return blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; }
__device__ long long stride() { return static_cast<long long>(gridDim.x) * blockDim.x; }

// Offsets within a segment reach 2^31, so values grow by step/4 per element.
__device__ int sortedValue(long long offset, int step, std::uint64_t segSeed) {
    return static_cast<int>(-(1LL << 30) + offset * step / 4 + static_cast<long long>(segSeed % 64));
}

__global__ void fillSorted_k(int* a, long long n, long long segLen, int step, std::uint64_t seed) {
    for (long long i = firstIndex(); i < n; i += stride())
        a[i] = sortedValue(i % segLen, step, mix64(seed ^ static_cast<std::uint64_t>(i / segLen)));
}

__global__ void fillSplits_k(int* split, long long N, int d, std::uint64_t seed) {
    for (long long p = firstIndex(); p < N; p += stride())
        split[p] = static_cast<int>(mix64(seed ^ static_cast<std::uint64_t>(p)) % static_cast<std::uint64_t>(d + 1));
}

__global__ void fillPairs_k(int* a, const int* split, long long N, int d, std::uint64_t seed) {
    for (long long i = firstIndex(); i < N * d; i += stride()) {
        const long long p = i / d;
        const int o = static_cast<int>(i % d);
        const std::uint64_t h = mix64(seed ^ static_cast<std::uint64_t>(p));
        a[i] = o < split[p] ? sortedValue(o, 4, h) : sortedValue(o - split[p], 3, h >> 8);
    }
}

// The poison pattern as an int: never a generated value.
constexpr int kPoisonInt = static_cast<int>(0x01010101u * kPoisonByte);

__global__ void fillRandom_k(int* a, long long n, std::uint64_t seed) {
    for (long long i = firstIndex(); i < n; i += stride()) {
        const int v = static_cast<int>(mix64(seed ^ static_cast<std::uint64_t>(i)));
        a[i] = v == kPoisonInt ? v ^ 1 : v;
    }
}

__global__ void segmentHash_k(const int* a, long long n, long long segLen, unsigned long long* sum) {
    unsigned long long local = 0;
    for (long long i = firstIndex(); i < n; i += stride())
        local += mix64(static_cast<std::uint64_t>(static_cast<unsigned>(a[i])) ^ (static_cast<std::uint64_t>(i / segLen) << 32));
    atomicAdd(sum, local);
}

// Position-bound: equal sums mean equal arrays (up to a 2^-64 chance).
__global__ void positionHash_k(const int* a, long long n, unsigned long long* sum) {
    unsigned long long local = 0;
    for (long long i = firstIndex(); i < n; i += stride())
        local += mix64(mix64(static_cast<std::uint64_t>(i)) ^ static_cast<std::uint64_t>(static_cast<unsigned>(a[i])));
    atomicAdd(sum, local);
}

struct Faults {
    unsigned long long unsorted, poisoned;
    long long firstUnsorted, firstPoisoned;
};

__global__ void sortedSegments_k(const int* a, long long n, long long segLen, Faults* f) {
    for (long long i = firstIndex(); i < n; i += stride()) {
        if (a[i] == kPoisonInt) {
            atomicAdd(&f->poisoned, 1ULL);
            atomicMin(&f->firstPoisoned, i);
        }
        if (i % segLen != 0 && a[i - 1] > a[i]) {
            atomicAdd(&f->unsorted, 1ULL);
            atomicMin(&f->firstUnsorted, i);
        }
    }
}

template <class T>
class DeviceValue {  // one value on the device, for the checkers' results
public:
    explicit DeviceValue(const T& init) {
        CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&p_), sizeof(T)));
        CUDA_CHECK(cudaMemcpy(p_, &init, sizeof(T), cudaMemcpyHostToDevice));
    }
    ~DeviceValue() { cudaFree(p_); }
    T* get() { return p_; }
    T read() const {
        T v;
        CUDA_CHECK(cudaMemcpy(&v, p_, sizeof(T), cudaMemcpyDeviceToHost));
        return v;
    }

private:
    T* p_ = nullptr;
};

void launched() {
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace

bool canRun(double bytes) {
    if (kEmulated) {
        skip("the [large] tier is not emulated: it needs a GPU with about 17 GB of memory");
        return false;
    }
    const char* env = std::getenv("LAB_LARGE");
    if (env == nullptr || *env != '1') {
        skip("the [large] tier runs only with LAB_LARGE=1 (make grade sets it)");
        return false;
    }
    if (!gpuOrSkip()) return false;
    if (const std::string why = tierDoesNotFit(); !why.empty()) {
        skip("not graded here: " + why);
        return false;
    }
    const double margin = 512.0 * (1 << 20);
    const double free = static_cast<double>(freeDeviceBytes());
    if (free < bytes + margin)
        throw Error("the [large] tier needs " + formatBytes(bytes + margin) + " of device memory and this GPU has it, "
                    "but only " + formatBytes(free) + " is free: another process holds the rest");
    return true;
}

std::string tierDoesNotFit() {
    const double total = static_cast<double>(detectGpu().globalMemBytes);
    if (total >= kMostBytes) return "";
    return "the [large] tier needs a GPU with " + formatBytes(kMostBytes) + " of memory, this one has " +
           formatBytes(total);
}

Array::Array(long long n) : n_(n) {
    const std::size_t bytes = static_cast<std::size_t>(n + 2 * kGuard) * sizeof(int);
    CUDA_CHECK(arrayMemory().allocate(reinterpret_cast<void**>(&base_), bytes));  // the judge's, when grading
    CUDA_CHECK(cudaMemset(base_, kPoisonByte, bytes));
}

Array::~Array() { arrayMemory().release(base_); }

Check Array::guards(const std::string& name) const {
    std::vector<unsigned char> before(kGuard * sizeof(int)), after(kGuard * sizeof(int));
    CUDA_CHECK(cudaMemcpy(before.data(), base_, before.size(), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(after.data(), base_ + kGuard + n_, after.size(), cudaMemcpyDeviceToHost));
    for (std::size_t b = 0; b < before.size(); ++b)
        if (before[b] != kPoisonByte || after[b] != kPoisonByte)
            return failCheck("a write outside " + name + " (n = " + std::to_string(n_) + "): a guard zone was overwritten");
    return {};
}

void fillSorted(Array& a, long long segLen, int step, std::uint64_t seed) {
    fillSorted_k<<<kBlocks, kThreads>>>(a.data(), a.size(), segLen, step, seed);
    launched();
}

void fillPairs(Array& a, Array& split, int d, std::uint64_t seed) {
    fillSplits_k<<<kBlocks, kThreads>>>(split.data(), split.size(), d, seed);
    launched();
    fillPairs_k<<<kBlocks, kThreads>>>(a.data(), split.data(), split.size(), d, seed);
    launched();
}

void fillRandom(Array& a, std::uint64_t seed) {
    fillRandom_k<<<kBlocks, kThreads>>>(a.data(), a.size(), seed);
    launched();
}

std::uint64_t segmentHash(Array& a, long long segLen) {
    DeviceValue<unsigned long long> sum(0);
    segmentHash_k<<<kBlocks, kThreads>>>(a.data(), a.size(), segLen, sum.get());
    launched();
    return sum.read();
}

Check sortedSegments(Array& a, long long segLen, const std::string& ctx) {
    DeviceValue<Faults> faults(Faults{0, 0, a.size(), a.size()});
    sortedSegments_k<<<kBlocks, kThreads>>>(a.data(), a.size(), segLen, faults.get());
    launched();
    const Faults f = faults.read();
    std::ostringstream os;
    if (f.poisoned > 0)
        os << f.poisoned << " outputs were never written, the first at index " << f.firstPoisoned << "; ";
    if (f.unsorted > 0) os << f.unsorted << " outputs are out of order, the first at index " << f.firstUnsorted << "; ";
    if (os.str().empty()) return {};
    return failCheck(os.str() + "[" + ctx + "]");
}

std::uint64_t positionHash(Array& a) {
    DeviceValue<unsigned long long> sum(0);
    positionHash_k<<<kBlocks, kThreads>>>(a.data(), a.size(), sum.get());
    launched();
    return sum.read();
}

Check checkOutput(Array& out, long long segLen, std::uint64_t inputHash, const std::string& ctx) {
    record("a hash of the whole output, value by position [" + ctx + "]", positionHash(out));  // for the harness
    record("guards of the output intact", static_cast<std::uint64_t>(out.guards("the output").ok));
    if (Check c = sortedSegments(out, segLen, ctx); !c) return c;
    if (segmentHash(out, segLen) != inputHash)
        return failCheck("the output does not hold the input's values (their multiset hashes differ) [" + ctx + "]");
    return out.guards("the output");
}

Check checkInput(Array& in, long long segLen, std::uint64_t hashBefore, const std::string& name,
                 const std::string& ctx) {
    record("a hash of input " + name + " after the run, value by position [" + ctx + "]", positionHash(in));
    if (segmentHash(in, segLen) != hashBefore) return failCheck("input " + name + " was modified [" + ctx + "]");
    return in.guards("input " + name);
}

}  // namespace lab::test::large
