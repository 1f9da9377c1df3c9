// The lab's shared-memory and barrier idioms, right and wrong, one kernel
// each: what compute-sanitizer's tools say of them on a GPU and what the
// emulator says must agree with emulator/idioms.tsv (emulator/idioms.py runs
// both; emulator/README.md's table is made from the file).
//
//   ./idioms NAME    runs one idiom: prints "NAME: clean" or what went wrong
//   ./idioms         lists them
//
// Every kernel runs one block of 64 threads (two warps), so that a hazard
// between threads is also one between warps.
#include <cstdio>
#include <cstring>

namespace {

constexpr int kThreads = 64;
constexpr int kRounds = 3;

// X1's flag, the handout's way: reset by one thread between two barriers,
// set to 1 by every thread that "swaps", read by all after the round's last
// barrier. Many threads writing the same value is no hazard.
__global__ void oneReset_k(int* out) {
    __shared__ int flag;
    for (int round = 0; round < kRounds; ++round) {
        __syncthreads();  // everyone has read the last round's flag
        if (threadIdx.x == 0) flag = 0;
        __syncthreads();  // the reset is done before anyone sets it
        if (static_cast<int>(threadIdx.x % 3) == round) flag = 1;
        __syncthreads();  // every set is done before anyone reads it
        if (flag) out[threadIdx.x] += 1;
    }
}

// X1's flag in one call: a barrier that also answers "did any thread pass 1?".
__global__ void syncthreadsOr_k(int* out) {
    for (int round = 0; round < kRounds; ++round) {
        const int swapped = static_cast<int>(threadIdx.x % 3) == round;
        if (__syncthreads_or(swapped)) out[threadIdx.x] += 1;
    }
}

// Wrong: every thread resets the flag at the top of each round, so a fast
// warp's reset for the next round meets a slow warp's read of this one.
__global__ void everyThreadResets_k(int* out) {
    __shared__ int flag;
    for (int round = 0; round < kRounds; ++round) {
        flag = 0;
        __syncthreads();
        if (static_cast<int>(threadIdx.x % 3) == round) flag = 1;
        __syncthreads();
        if (flag) out[threadIdx.x] += 1;
    }
}

// Wrong: one thread sets the flag and the others read it with no barrier
// between.
__global__ void readWithoutBarrier_k(int* out) {
    __shared__ int flag;
    if (threadIdx.x == 0) flag = 0;
    __syncthreads();
    if (threadIdx.x == 40) flag = 1;
    if (flag) out[threadIdx.x] = 1;
}

// Wrong: two threads write two different values between the same barriers.
__global__ void twoValues_k(int* out) {
    __shared__ int s;
    if (threadIdx.x == 0 || threadIdx.x == 40) s = static_cast<int>(threadIdx.x) + 1;
    __syncthreads();
    out[threadIdx.x] = s;
}

// Wrong: a thread reads a neighbour's element, which the neighbour updates
// with no barrier between (the merge's "load, then read others" step
// without its barrier).
__global__ void missingBarrier_k(int* out) {
    __shared__ int s[kThreads];
    const int t = static_cast<int>(threadIdx.x);
    s[t] = t;
    __syncthreads();
    s[t] += 1;
    out[t] = s[(t + 32) % kThreads];  // the other warp's element
}

// Wrong: threads past the data return, the others wait at a barrier they
// never reach.
__global__ void returnBeforeBarrier_k(int* out, int n) {
    __shared__ int s[kThreads];
    const int t = static_cast<int>(threadIdx.x);
    if (t >= n) return;
    s[t] = t;
    __syncthreads();
    out[t] = s[n - 1 - t];
}

// Wrong: a barrier inside a branch only some threads take (each thread
// reads back its own element, so only the barrier is wrong).
__global__ void barrierInBranch_k(int* out, int n) {
    __shared__ int s[kThreads];
    const int t = static_cast<int>(threadIdx.x);
    s[t] = t;
    if (t < n) __syncthreads();
    out[t] = s[t];
}

// Wrong: the last thread reads one element past a shared array.
__global__ void sharedPastEnd_k(int* out) {
    __shared__ int tile[kThreads];
    const int t = static_cast<int>(threadIdx.x);
    tile[t] = t;
    __syncthreads();
    out[t] = tile[t + 1];
}

// Wrong: the last thread reads one element past a device array.
__global__ void globalPastEnd_k(const int* in, int* out) {
    const int t = static_cast<int>(threadIdx.x);
    out[t] = in[t + 1];
}

struct Idiom {
    const char* name;
    void (*launch)(int* in, int* out);
    int rounds = -1;  // where the kernel runs clean: what every thread must count (X1's flags)
};

const Idiom kIdioms[] = {
    {"x1-one-reset", [](int*, int* out) { oneReset_k<<<1, kThreads>>>(out); }, kRounds},
    {"x1-syncthreads-or", [](int*, int* out) { syncthreadsOr_k<<<1, kThreads>>>(out); }, kRounds},
    {"x1-every-thread-resets", [](int*, int* out) { everyThreadResets_k<<<1, kThreads>>>(out); }},
    {"read-without-barrier", [](int*, int* out) { readWithoutBarrier_k<<<1, kThreads>>>(out); }},
    {"two-values", [](int*, int* out) { twoValues_k<<<1, kThreads>>>(out); }},
    {"missing-barrier", [](int*, int* out) { missingBarrier_k<<<1, kThreads>>>(out); }},
    {"return-before-barrier", [](int*, int* out) { returnBeforeBarrier_k<<<1, kThreads>>>(out, 40); }},
    {"barrier-in-branch", [](int*, int* out) { barrierInBranch_k<<<1, kThreads>>>(out, 40); }},
    {"shared-past-end", [](int*, int* out) { sharedPastEnd_k<<<1, kThreads>>>(out); }},
    {"global-past-end", [](int* in, int* out) { globalPastEnd_k<<<1, kThreads>>>(in, out); }},
};

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        for (const Idiom& idiom : kIdioms) std::printf("%s\n", idiom.name);
        return argc == 1 ? 0 : 2;
    }
    for (const Idiom& idiom : kIdioms) {
        if (std::strcmp(idiom.name, argv[1]) != 0) continue;
        int *in = nullptr, *out = nullptr;
        if (cudaMalloc(reinterpret_cast<void**>(&in), kThreads * sizeof(int)) != cudaSuccess ||
            cudaMalloc(reinterpret_cast<void**>(&out), kThreads * sizeof(int)) != cudaSuccess ||
            cudaMemset(in, 0, kThreads * sizeof(int)) != cudaSuccess ||
            cudaMemset(out, 0, kThreads * sizeof(int)) != cudaSuccess) {
            std::printf("%s: no device memory\n", idiom.name);
            return 2;
        }
        idiom.launch(in, out);
        cudaError_t status = cudaGetLastError();
        if (status == cudaSuccess) status = cudaDeviceSynchronize();
        if (status == cudaSuccess) {
            int counted[kThreads];
            if (cudaMemcpy(counted, out, sizeof counted, cudaMemcpyDeviceToHost) != cudaSuccess) {
                std::printf("%s: the copy back failed\n", idiom.name);
                return 2;
            }
            for (int t = 0; t < kThreads; ++t)
                if (idiom.rounds >= 0 && counted[t] != idiom.rounds) {
                    std::printf("%s: thread %d counted %d rounds, not %d\n", idiom.name, t, counted[t], idiom.rounds);
                    return 1;
                }
            std::printf("%s: clean\n", idiom.name);
            return 0;
        }
#ifdef LAB_EMULATED
        std::printf("%s: %s\n", idiom.name, emu::faultKind());
#else
        std::printf("%s: %s\n", idiom.name, cudaGetErrorString(status));
#endif
        return 1;
    }
    std::fprintf(stderr, "no idiom '%s' (./idioms lists them)\n", argv[1]);
    return 2;
}
