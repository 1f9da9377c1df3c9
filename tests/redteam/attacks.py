"""Hostile submissions: what a student who has read every line of the lab
would hand in to get points its code does not earn, each with the points
grading must give it. `python3 -m tests.redteam.selftest` grades them on a GPU
with the planted faults (faults.py); the harness tests check that each still
builds its files from the reference or the skeleton.

Instructor-only: `make release` leaves tests/redteam/ out of the student copy.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.grading.harness import course_table as h
from tests.grading.harness.sanitizers import SLOW_RUN_NOTE

from .faults import P1, P2, P3, PX, _with_prelude

# Each is written as a student who has read the whole lab would write it. They
# are graded like the planted faults (selftest.py), with the lab's own paths in
# place of {LAB}, {OUT} (the selftest's output folder) and {SELF} (the
# submission's name); selftest.py also checks afterwards that nothing outside
# the submission changed (the lab, the base build, the other results).

# A static object whose constructor writes a passing report for whatever test
# the process was started for, then ends the process with a raw exit system
# call: no word of the suspicious list, no libc exit.
FORGE = r"""
#include <fcntl.h>
#include <cstdlib>
#include <unistd.h>
#include <cstdio>
#include <cstring>
extern char** environ;
namespace {
struct Forge {
    Forge() {
        const char* path = nullptr;
        int out = -1;  // the report: a file (LAB_REPORT) or the harness's pipe (LAB_REPORT_FD)
        for (char** e = environ; *e != nullptr; ++e) {
            if (std::strncmp(*e, "LAB_REPORT=", 11) == 0) path = *e + 11;
            if (std::strncmp(*e, "LAB_REPORT_FD=", 14) == 0) out = std::atoi(*e + 14);
        }
        if (path == nullptr && out < 0) return;
        static char args[8192];
        const int fd = open("/proc/self/cmdline", O_RDONLY);
        const long n = read(fd, args, sizeof args - 1);
        close(fd);
        const char* name = args + std::strlen(args) + 1;
        if (n <= 0 || name >= args + n) return;
        static char text[16384];
        const int len = std::snprintf(text, sizeof text,
            "{\"event\":\"start\",\"test\":\"%s\"}\n"
            "{\"event\":\"end\",\"test\":\"%s\",\"status\":\"passed\",\"reason\":\"\",\"failure\":\"\"}\n"
            "{\"event\":\"summary\",\"passed\":1,\"failed\":0,\"skipped\":0}\n", name, name);
        if (out < 0) out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (write(out, text, len) != len) return;
        close(out);
        asm volatile("mov $231, %%eax\n\txor %%edi, %%edi\n\tsyscall" ::: "memory");
    }
} forge;
}  // namespace
"""

# The same forgery from a library the process preloads into a new copy of
# itself: it compiles the library with the system's compiler at run time.
PRELOAD = r"""
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
extern char** environ;
namespace {
const char* kLibrary = R"LIB(
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>
extern char** environ;
__attribute__((constructor)) static void forge(void) {
    const char* path = 0;
    for (char** e = environ; *e; ++e) if (strncmp(*e, "LAB_REPORT=", 11) == 0) path = *e + 11;
    if (!path) return;
    static char args[8192];
    int fd = open("/proc/self/cmdline", O_RDONLY);
    long n = read(fd, args, sizeof args - 1);
    close(fd);
    const char* name = args + strlen(args) + 1;
    if (n <= 0 || name >= args + n) return;
    FILE* out = fopen(path, "w");
    fprintf(out, "{"event":"start","test":"%s"}
{"event":"end","test":"%s","status":"passed"}
"
                 "{"event":"summary","passed":1,"failed":0,"skipped":0}
", name, name);
    fclose(out);
    _exit(0);
}
)LIB";
struct Preload {
    Preload() {
        bool asked = false, done = false;
        for (char** e = environ; *e != nullptr; ++e) {
            asked = asked || std::strncmp(*e, "LAB_REPORT=", 11) == 0;
            done = done || std::strncmp(*e, "LD_PRELOAD=", 11) == 0;
        }
        if (!asked || done) return;
        FILE* f = std::fopen("/tmp/forge.c", "w");
        if (f == nullptr) return;
        std::fputs(kLibrary, f);
        std::fclose(f);
        if (std::system("cc -shared -fPIC -o /tmp/forge.so /tmp/forge.c") != 0) return;
        setenv("LD_PRELOAD", "/tmp/forge.so", 1);
        static char args[8192];
        FILE* c = std::fopen("/proc/self/cmdline", "r");
        const size_t n = std::fread(args, 1, sizeof args - 1, c);
        std::fclose(c);
        char* argv[8] = {};
        int argc = 0;
        for (size_t i = 0; i < n && argc < 7; i += std::strlen(args + i) + 1) argv[argc++] = args + i;
        execv("/proc/self/exe", argv);
    }
} preload;
}  // namespace
"""

# A student who tries what a process of the grader's account could do: write
# the lab, the base build, another student's results; read another
# submission; leave a daemon that rewrites its own results after grading.
SIDE_EFFECTS = r"""
#include <fcntl.h>
#include <unistd.h>
#include <cstdio>
#include <cstring>
namespace {
void tryWrite(const char* path, const char* text) {
    const int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0) return;
    if (write(fd, text, std::strlen(text)) > 0) std::printf("HOSTILE-WROTE %s\n", path);
    close(fd);
}
struct SideEffects {
    SideEffects() {
        tryWrite("{LAB}/Makefile", "\nall:\n");
        tryWrite("{OUT}/base/Makefile", "\nall:\n");
        tryWrite("{OUT}/base/build/oracle/test_part1", "x");
        tryWrite("{OUT}/results/reference/results.json", "{\"score\": 0}");
        tryWrite("{OUT}/HOSTILE-WAS-HERE", "x");
        const int other = open("{OUT}/submissions/reference/part1_merge_path/student.cu", O_RDONLY);
        if (other >= 0) std::printf("HOSTILE-READ another submission\n");
        const int lab = open("{LAB}/part1_merge_path/reference.cu", O_RDONLY);
        if (lab >= 0) std::printf("HOSTILE-READ the reference\n");
        std::fflush(stdout);
        if (fork() == 0) {
            setsid();
            if (fork() == 0) {
                sleep(4);
                tryWrite("{OUT}/results/{SELF}/results.json", "{\"score\": 99}");
                tryWrite("{OUT}/DAEMON-OUTLIVED-ITS-TEST", "x");
            }
            _exit(0);
        }
    }
} sideEffects;
}  // namespace
"""

# All but 12 GB of the GPU's memory taken before any test runs, so that the
# [large] tier's tests skip as "not graded here" in this process.
# At exit, the report replaced by a named pipe: a harness that opens it as a
# plain file waits for a writer forever (and with it the class's grading).
REPORT_PIPE = r"""
#include <sys/stat.h>
#include <unistd.h>
#include <cstdlib>
namespace {
struct ReportPipe {
    ReportPipe() {
        std::atexit([] {
            const char* path = std::getenv("LAB_REPORT");
            if (path != nullptr && unlink(path) == 0) mkfifo(path, 0644);
        });
    }
} reportPipe;
}  // namespace
"""

# A 96 MiB constant table compiled into the object (the was 1 GiB): a
# test binary that large is read and copied for every test.
HUGE_OBJECT = r"""
__attribute__((used)) static const char kHugeTable[96 << 20] = {1};
"""

def _gpu_hog(keep_mib: int, hold_seconds: int = 0) -> str:
    """A static constructor that takes all of the GPU's free memory but
    `keep_mib` before any test runs, then holds the process `hold_seconds`."""
    return r"""
#include <cuda_runtime_api.h>
#include <chrono>
#include <thread>
namespace {
struct Hog {
    Hog() {
        size_t free = 0, total = 0;
        if (cudaMemGetInfo(&free, &total) != cudaSuccess) return;
        void* p = nullptr;
        const size_t keep = size_t(%d) << 20;
        if (free > keep) cudaMalloc(&p, free - keep);
        std::this_thread::sleep_for(std::chrono::seconds(%d));
    }
} hog;
}  // namespace
""" % (keep_mib, hold_seconds)


MEMORY_HOG = _gpu_hog(12 << 10)

# A classmate's hog: every test process holds all of the GPU's free memory but
# 256 MiB for 20 s before its tests (selftest's grading beside a hog).
GPU_HOG = _gpu_hog(256, 20)

# The reference, slowed only where compute-sanitizer runs it: a constructor
# that sleeps 40 s when the environment holds the variables compute-sanitizer
# gives the process it starts (NV_SANITIZER_INJECTION_*, as common/gpu.cpp
# looks for them). Full points (its code is the reference's); the sanitized
# runs' limits, from the graded runs' time, bound what it costs the class's
# grading, and the time past SANITIZED_NOTE and SLOW_RUN_SLACK of the expected is a note.
SANITIZER_STALL = r"""
#include <chrono>
#include <cstring>
#include <thread>
#include <unistd.h>
namespace {
struct Stall {
    Stall() {
        for (char** e = environ; *e != nullptr; ++e)
            if (std::strncmp(*e, "NV_SANITIZER_INJECTION", 22) == 0) {
                std::this_thread::sleep_for(std::chrono::seconds(40));
                return;
            }
    }
} stall;
}  // namespace
"""

# A test process that takes what it can of the machine before the tests:
# threads until one cannot start, /tmp and /dev/shm until they are full, then
# 16 GiB of host memory, touched. Its limits stop it (sandbox.TEST): the
# threads at the process limit, the files at the tmpfs sizes, the memory at the
# memory limit (the cgroup kills the process; without one the allocation fails
# and the uncaught bad_alloc ends it). Every test of the part fails, saying
# which limit; nothing beside it notices.
RESOURCE_HOG = r"""
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <system_error>
#include <thread>
#include <vector>
namespace {
struct ResourceHog {
    ResourceHog() {
        for (int i = 0; i < 1500; ++i) {
            try {
                std::thread([] { std::this_thread::sleep_for(std::chrono::hours(1)); }).detach();
            } catch (const std::system_error&) {
                break;
            }
        }
        static std::vector<char> block(32 << 20, 'x');
        for (const char* folder : {"/tmp", "/dev/shm"}) {
            for (int i = 0; i < 256; ++i) {
                std::FILE* f = std::fopen((std::string(folder) + "/hog-" + std::to_string(i)).c_str(), "wb");
                const bool full = f == nullptr || std::fwrite(block.data(), 1, block.size(), f) != block.size();
                if (f != nullptr) std::fclose(f);
                if (full) break;
            }
        }
        static std::vector<char*> held;
        for (int i = 0; i < 64; ++i) {
            held.push_back(new char[256 << 20]);
            std::memset(held.back(), i, 256 << 20);
        }
    }
} resourceHog;
}  // namespace
"""

# A student.cu that includes itself twice at every level down to depth 40:
# 2^40 copies for the preprocessor, which would grow without end. Its build
# stops at the build's limits (memory, its /tmp, the size of a file, or
# BUILD_TIMEOUT, whichever comes first): a build error, the part's questions 0.
INCLUDE_BOMB = r"""
#if __INCLUDE_LEVEL__ < 40
#include "student.cu"
#include "student.cu"
#endif
"""

# The graders' record<int> and record<Tagged> (tests/test_env.hpp), which hand
# every result read back to the harness, taken over by explicit specialisations
# (strong symbols beside the graders' weak instantiations): a sort's output is
# handed over sorted, whatever the kernels left in it.
WEAK_OVERRIDE = r"""
#include "../tests/test_env.hpp"
#include "../common/tagged.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace lab::test {
namespace {
template <class T>
void recordSorted(const std::string& what, const char* type, const std::vector<T>& values) {
    const bool sortOutput = what.rfind("output [", 0) == 0 && what.find(" n=") != std::string::npos &&
                            what.find("|A|=") == std::string::npos;
    std::vector<T> out = values;
    if (sortOutput) std::stable_sort(out.begin(), out.end());
    recordBytes(what, type, out.data(), out.size() * sizeof(T));
}
}  // namespace
template <>
void record<int>(const std::string& what, const std::vector<int>& values) { recordSorted(what, "i32", values); }
template <>
void record<Tagged>(const std::string& what, const std::vector<Tagged>& values) {
    recordSorted(what, "tagged", values);
}
}  // namespace lab::test
"""

# The replaceable global operator new and delete, with a log of the process's
# allocations: where the graders keep their host copies of inputs and outputs,
# for code that wants to read or change them.
OPERATOR_NEW = r"""
#include <cstdlib>
#include <new>
#ifndef __CUDA_ARCH__  // the host side only: CUDA declares these for the device too
namespace {
struct Allocation {
    void* at;
    std::size_t bytes;
};
Allocation allocationLog[4096];
std::size_t allocationCount = 0;
}  // namespace
void* operator new(std::size_t bytes) {
    void* p = std::malloc(bytes > 0 ? bytes : 1);
    if (p == nullptr) throw std::bad_alloc();
    allocationLog[allocationCount++ % 4096] = {p, bytes};
    return p;
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#endif
"""

# A static object that runs the test process again in a child with a marker
# in its environment (fork three ways: libc, the raw system call, clone without
# CLONE_THREAD; then execve or execveat of /proc/self/exe), waits for it, and
# says so. Any of it succeeding shows in the log as HOSTILE-.
CHILD_REPLAY = r"""
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
extern char** environ;
namespace {
long forkSomehow() {
    long pid = fork();
#ifdef SYS_fork
    if (pid < 0) pid = syscall(SYS_fork);
#endif
    if (pid < 0) pid = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    return pid;
}
struct Replay {
    Replay() {
        if (std::getenv("LAB_REPLAYED") != nullptr) {
            std::printf("HOSTILE-EXECUTED: this test runs again in a child process\n");
            std::fflush(stdout);
            return;
        }
        if (std::getenv("LAB_REPORT") == nullptr && std::getenv("LAB_RESULTS_FD") == nullptr) return;
        static char args[8192];
        const int fd = open("/proc/self/cmdline", O_RDONLY);
        const long n = fd < 0 ? 0 : read(fd, args, sizeof args - 1);
        if (fd >= 0) close(fd);
        static char* argv[64];
        int argc = 0;
        for (long i = 0; i < n && argc < 63; i += static_cast<long>(std::strlen(args + i)) + 1) argv[argc++] = args + i;
        static char* env[512];
        int envc = 0;
        for (char** e = environ; *e != nullptr && envc < 510; ++e) env[envc++] = *e;
        static char marker[] = "LAB_REPLAYED=1";
        env[envc++] = marker;
        std::fflush(stdout);
        const long pid = forkSomehow();
        if (pid == 0) {
            execve("/proc/self/exe", argv, env);
#ifdef SYS_execveat
            syscall(SYS_execveat, AT_FDCWD, "/proc/self/exe", argv, env, 0);
#endif
            std::printf("HOSTILE-FORKED-CHILD: a child ran, but could not run a program\n");
            std::fflush(stdout);
            _exit(0);
        }
        if (pid < 0) return;
        int status = 0;
        waitpid(static_cast<pid_t>(pid), &status, 0);
        std::printf("HOSTILE-FORKED: child %ld ended with status %d\n", pid, status);
        std::fflush(stdout);
    }
} replay;
}  // namespace
"""

# A constructor of priority 100, before the lab's own (101) subscribes the
# launch trace: mapped pinned host memory from the driver's cuMemHostAlloc,
# found through the runtime's entry-point query (no driver symbol to see).
PRIORITY_CONSTRUCTOR = r"""
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
namespace {
void* mappedEarly = nullptr;
__attribute__((constructor(100))) void mapHostMemoryEarly() {
    void* entry = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuMemHostAlloc", &entry, 12000, cudaEnableDefault, &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess || entry == nullptr)
        return;
    reinterpret_cast<PFN_cuMemHostAlloc_v2020>(entry)(&mappedEarly, std::size_t(64) << 20,
                                                      CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE);
}
}  // namespace
"""

# Host memory from a memory pool located on the host (no cudaMallocHost,
# cudaHostAlloc or managed call): copy kernels named like the ones the trace
# expects, with the shapes it expects, move the inputs there and the result
# back; std::merge and std::stable_sort do the work in between.
HOST_POOL = r"""
#include <algorithm>
namespace lab::staging {
inline cudaMemPool_t hostPool() {
    static const cudaMemPool_t pool = [] {
        int device = 0;
        CUDA_CHECK(cudaGetDevice(&device));
        cudaMemPoolProps props = {};
        props.allocType = cudaMemAllocationTypePinned;
        props.location.type = cudaMemLocationTypeHost;
        cudaMemPool_t p = nullptr;
        CUDA_CHECK(cudaMemPoolCreate(&p, &props));
        cudaMemAccessDesc access = {};
        access.location.type = cudaMemLocationTypeDevice;
        access.location.id = device;
        access.flags = cudaMemAccessFlagsProtReadWrite;
        CUDA_CHECK(cudaMemPoolSetAccess(p, &access, 1));
        return p;
    }();
    return pool;
}

template <class T>
T* hostAlloc(long long n) {
    void* p = nullptr;
    CUDA_CHECK(cudaMallocFromPoolAsync(&p, static_cast<std::size_t>(n) * sizeof(T), hostPool(), 0));
    return static_cast<T*>(p);
}

// to[0, n1 + n2) = first[0, n1), then second[0, n2).
template <class T>
__global__ void mergeTiles_k(const T* first, long long n1, const T* second, long long n2, T* to) {
    const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long x = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; x < n1 + n2; x += step)
        to[x] = x < n1 ? first[x] : second[x - n1];
}

// to[0, n) = from[0, n).
template <class T>
__global__ void sortTiles_k(const T* from, long long n, T* to) {
    const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long x = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; x < n; x += step) to[x] = from[x];
}
}  // namespace lab::staging
"""
HOST_POOL_MERGE = """\
    const auto tiles = static_cast<unsigned>(ceilDiv(n, THREADS * ITEMS));
    T* in = staging::hostAlloc<T>(n);
    T* out = staging::hostAlloc<T>(n);
    staging::mergeTiles_k<<<tiles, THREADS>>>(dA, nA, dB, nB, in);
    CUDA_CHECK_LAUNCH("mergeTiles_k");
    CUDA_CHECK(cudaStreamSynchronize(0));
    std::merge(in, in + nA, in + nA, in + n, out);
    staging::mergeTiles_k<<<tiles, THREADS>>>(static_cast<const T*>(out), n, static_cast<const T*>(out), 0, dM);
    CUDA_CHECK_LAUNCH("mergeTiles_k");
    CUDA_CHECK(cudaFreeAsync(in, 0));
    CUDA_CHECK(cudaFreeAsync(out, 0));
"""
HOST_POOL_SORT = """\
    if (n <= 1) return;
    const auto tiles = static_cast<unsigned>(ceilDiv(n, THREADS * ITEMS));
    T* staged = staging::hostAlloc<T>(n);
    staging::sortTiles_k<<<tiles, THREADS>>>(static_cast<const T*>(dData), n, staged);
    CUDA_CHECK_LAUNCH("sortTiles_k");
    CUDA_CHECK(cudaStreamSynchronize(0));
    std::stable_sort(staged, staged + n);
    staging::sortTiles_k<<<tiles, THREADS>>>(static_cast<const T*>(staged), n, dData);
    CUDA_CHECK_LAUNCH("sortTiles_k");
    CUDA_CHECK(cudaFreeAsync(staged, 0));
"""

# A __managed__ array, written by the merge kernel: memory the host reads and
# writes without any allocation or copy call the trace could see.
MANAGED_VARIABLE = r"""
__managed__ int hostVisible[1024];
"""

# A function in .preinit_array, which runs before every constructor (before
# or after the lab's own entry there, as the link orders them): it rewrites
# the environment the lab reads, to switch the confinement and the trace off.
PREINIT = r"""
#include <cstring>
namespace {
void traceOffEarly(int, char**, char** envp) {
    for (char** e = envp; e != nullptr && *e != nullptr; ++e) {
        if (std::strcmp(*e, "LAB_CONFINE=1") == 0) (*e)[12] = '0';
        if (std::strncmp(*e, "LAB_TRACE=", 10) == 0 && (*e)[10] != '\0') std::strcpy(*e + 10, "0");
    }
}
__attribute__((section(".preinit_array"), used)) void (*const traceOffEntry)(int, char**, char**) = traceOffEarly;
}  // namespace
"""

# The C library's malloc, interposed for the whole process (the CUDA driver
# and runtime included), forwarding to glibc's own and logging the blocks.
MALLOC_INTERPOSER = r"""
#include <cstddef>
#ifndef __CUDA_ARCH__  // the host side only: CUDA declares malloc for the device too
extern "C" void* __libc_malloc(std::size_t);
namespace {
struct Block {
    void* at;
    std::size_t bytes;
};
Block blockLog[4096];
std::size_t blockCount = 0;
}  // namespace
extern "C" void* malloc(std::size_t bytes) noexcept {
    void* p = __libc_malloc(bytes);
    blockLog[blockCount++ % 4096] = {p, bytes};
    return p;
}
#endif
"""

# The merges done on the host: inputs down, std::merge pair by pair, the
# result up. The attacks below run it where the trace is not looking.
HOST_MERGE = r"""
#include <algorithm>
#include <cstdlib>
#include <vector>
namespace lab {
template <class T>
void mergeOnHost(const T* dA, int nA, const T* dB, int nB, T* dM, long long count) {
    const std::size_t a = static_cast<std::size_t>(nA) * count, b = static_cast<std::size_t>(nB) * count;
    std::vector<T> A(a), B(b), M(a + b);
    CUDA_CHECK(cudaMemcpy(A.data(), dA, a * sizeof(T), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(B.data(), dB, b * sizeof(T), cudaMemcpyDeviceToHost));
    for (std::size_t p = 0; p < static_cast<std::size_t>(count); ++p)
        std::merge(A.begin() + p * nA, A.begin() + (p + 1) * nA, B.begin() + p * nB, B.begin() + (p + 1) * nB,
                   M.begin() + p * (nA + nB));
    CUDA_CHECK(cudaMemcpy(dM, M.data(), M.size() * sizeof(T), cudaMemcpyHostToDevice));
}
}  // namespace lab
"""

# The host merge with CUPTI's copy records switched off around it: the copy
# of libcupti that the trace loaded, found among the loaded objects, opened
# again (RTLD_NOLOAD), and its cuptiActivityDisable/Enable looked up by name.
DLSYM_ROUTE = HOST_MERGE + r"""
#include <dlfcn.h>
#include <link.h>
#include <cstring>
namespace lab {
namespace {
using CuptiToggle = int (*)(int);
constexpr int kCuptiMemcpyRecords = 1;  // CUPTI_ACTIVITY_KIND_MEMCPY
int findCupti(dl_phdr_info* info, std::size_t, void* path) {
    if (info->dlpi_name == nullptr || std::strstr(info->dlpi_name, "libcupti") == nullptr) return 0;
    *static_cast<const char**>(path) = info->dlpi_name;
    return 1;
}
CuptiToggle cuptiFunction(const char* name) {
    const char* path = nullptr;
    dl_iterate_phdr(findCupti, &path);
    void* lib = path != nullptr ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : nullptr;
    return lib != nullptr ? reinterpret_cast<CuptiToggle>(dlsym(lib, name)) : nullptr;
}
}  // namespace
template <class T>
void mergeOnHostUnseen(const T* dA, int nA, const T* dB, int nB, T* dM, long long count) {
    static const CuptiToggle off = cuptiFunction("cuptiActivityDisable"), on = cuptiFunction("cuptiActivityEnable");
    if (off != nullptr) off(kCuptiMemcpyRecords);
    mergeOnHost(dA, nA, dB, nB, dM, count);
    if (on != nullptr) on(kCuptiMemcpyRecords);
}
}  // namespace lab
"""

# The host merge with CUPTI's copy records switched off around it, as in
# DLSYM_ROUTE, but without dlopen or dlsym: cuptiActivityDisable/Enable are
# found in the dynamic symbol table of the loaded libcupti, read from memory.
# The host merge with CUPTI's copy records switched off around it, and with
# cudaMemcpyDefault (no direction in the call): cuptiActivityDisable/Enable
# found in the symbol table of the libcupti the loader lists in _r_debug, so no
# lookup call the link-time check refuses is made.
CUPTI_UNSEEN = r"""
#include <algorithm>
#include <elf.h>
#include <link.h>
#include <cstdint>
#include <cstring>
#include <vector>
namespace lab {
namespace {
using CuptiToggle = int (*)(int);
constexpr int kCuptiMemcpyRecords = 1;  // CUPTI_ACTIVITY_KIND_MEMCPY
void* inCupti(const char* wanted) {
    for (const link_map* m = _r_debug.r_map; m != nullptr; m = m->l_next) {
        if (m->l_name == nullptr || std::strstr(m->l_name, "libcupti") == nullptr) continue;
        std::uintptr_t symtab = 0, strtab = 0;
        for (const ElfW(Dyn)* dyn = m->l_ld; dyn->d_tag != DT_NULL; ++dyn) {
            if (dyn->d_tag == DT_SYMTAB) symtab = dyn->d_un.d_ptr;
            if (dyn->d_tag == DT_STRTAB) strtab = dyn->d_un.d_ptr;
        }
        if (symtab == 0 || strtab <= symtab) return nullptr;
        if (symtab < m->l_addr) symtab += m->l_addr, strtab += m->l_addr;  // not relocated in place
        const auto* symbols = reinterpret_cast<const ElfW(Sym)*>(symtab);
        const auto* names = reinterpret_cast<const char*>(strtab);
        for (std::size_t i = 0; i < (strtab - symtab) / sizeof(ElfW(Sym)); ++i)
            if (symbols[i].st_value != 0 && std::strcmp(names + symbols[i].st_name, wanted) == 0)
                return reinterpret_cast<void*>(m->l_addr + symbols[i].st_value);
    }
    return nullptr;
}
}  // namespace
template <class T>
void mergeOnHostUnseen(const T* dA, int nA, const T* dB, int nB, T* dM, long long count) {
    static const auto off = reinterpret_cast<CuptiToggle>(inCupti("cuptiActivityDisable"));
    static const auto on = reinterpret_cast<CuptiToggle>(inCupti("cuptiActivityEnable"));
    if (off != nullptr) off(kCuptiMemcpyRecords);
    const std::size_t a = static_cast<std::size_t>(nA) * count, b = static_cast<std::size_t>(nB) * count;
    std::vector<T> A(a), B(b), M(a + b);
    CUDA_CHECK(cudaMemcpy(A.data(), dA, a * sizeof(T), cudaMemcpyDefault));
    CUDA_CHECK(cudaMemcpy(B.data(), dB, b * sizeof(T), cudaMemcpyDefault));
    for (std::size_t p = 0; p < static_cast<std::size_t>(count); ++p)
        std::merge(A.begin() + p * nA, A.begin() + (p + 1) * nA, B.begin() + p * nB, B.begin() + (p + 1) * nB,
                   M.begin() + p * (nA + nB));
    CUDA_CHECK(cudaMemcpy(dM, M.data(), M.size() * sizeof(T), cudaMemcpyDefault));
    if (on != nullptr) on(kCuptiMemcpyRecords);
}
}  // namespace lab
"""

# The host merge in plain sight, after an ordinary static constructor set
# LAB_TRACE=0 in the environment: a trace that reads its settings when first
# used, rather than before any student code, is then off.
TRACE_ENV = HOST_MERGE + r"""
namespace {
struct TraceOff {
    TraceOff() { setenv("LAB_TRACE", "0", 1); }
} traceOff;
}  // namespace
"""


# The zero-work submission, where the judge owns the arrays: the
# skeleton's kernels launched for show, each call's arrays remembered, and at
# exit every remembered output rewritten with std::merge of its inputs (and a
# results stream rewritten too, where the process was handed one). The judge
# reads each output when the call returns, before any exit.
EXIT_REWRITER = HOST_MERGE + r"""
#include <cstdlib>
#include <mutex>
namespace lab {
namespace {
struct Remembered {
    const int* dA;
    int nA;
    const int* dB;
    int nB;
    int* dM;
    long long count;
};
std::vector<Remembered>& remembered() {
    static std::vector<Remembered> calls;
    return calls;
}
void rewriteAll() {
    for (const Remembered& c : remembered()) {
        if (cudaGetLastError() != cudaSuccess) return;
        mergeOnHost(c.dA, c.nA, c.dB, c.nB, c.dM, c.count);
    }
}
}  // namespace
template <class T>
void rememberForExit(const T* dA, int nA, const T* dB, int nB, T* dM, long long count) {
    if constexpr (std::is_same_v<T, int>) {
        static std::once_flag once;
        std::call_once(once, [] { std::atexit(rewriteAll); });
        remembered().push_back({dA, nA, dB, nB, dM, count});
    }
}
}  // namespace lab
"""

# The same work done by a thread of the submission's own, started when the
# launcher returns (so that no copy of it falls inside the call), racing the
# judge's reading of the outputs.
LATE_WRITER = HOST_MERGE + r"""
#include <atomic>
#include <chrono>
#include <thread>
namespace lab {
template <class T>
void mergeLater(const T* dA, int nA, const T* dB, int nB, T* dM, long long count) {
    std::thread([=] {
        std::this_thread::sleep_for(std::chrono::microseconds(30));
        mergeOnHost(dA, nA, dB, nB, dM, count);
    }).detach();
}
}  // namespace lab
"""


def _include_instructor(lab: Path, part_dir: str, file: str) -> str:
    """A student file that is nothing but an include of the instructor's, by
    the lab's absolute path, by relative paths from a grading copy inside the
    lab, or the trusted implementation from the copy itself."""
    oracle = {folder: f"oracle_{name}" for name, folder in h.PARTS}[part_dir]
    lines = []
    for n, path in enumerate([f"{lab}/{part_dir}/{file}", f"../../../{part_dir}/{file}",
                              f"../../../../{part_dir}/{file}", f"../tests/oracle/{oracle}.cpp"]):
        lines += [f'#{"if" if n == 0 else "elif"} __has_include("{path}")', f'#include "{path}"']
    return "\n".join(lines + ["#else", '#include "../tests/oracle/' + oracle + '.cpp"', "#endif", ""])


def _edited(text: str, *edits: tuple[str, str]) -> str:
    """`text` with each (find, replace) made; each find must occur exactly once."""
    for find, replace in edits:
        count = text.count(find)
        if count != 1:
            raise ValueError(f"{find!r} occurs {count} times, not once")
        text = text.replace(find, replace)
    return text


def _launcher_body(text: str, check: str, body: str) -> str:
    """`text` with the question region that follows a launcher's argument check
    (the line `check`, which must occur once) holding `body` instead."""
    if text.count(check) != 1:
        raise ValueError(f"{check!r} occurs {text.count(check)} times, not once")
    at = text.index(check)
    begin = text.index("\n", text.index("// [Q", at)) + 1
    end = text.index("    // [Q", begin)
    return text[:begin] + body + text[end:]


def _part1_on_host(skeleton: str, prelude: str, merge: str) -> str:
    """The skeleton's Part 1 with the launchers filled in: the (empty) kernel
    launched with the shape the trace expects, then `merge`, one of the
    prelude's host merges, called with the launcher's arguments."""
    text = _with_prelude(skeleton, prelude)
    text = _launcher_body(text, "    checkSmallMerge(dA, nA, dB, nB, dM, 1);\n",
                          "    mergeSmallMany(dA, nA, dB, nB, dM, 1);\n")
    return _launcher_body(text, "    checkSmallMerge(dA, nA, dB, nB, dM, count);\n",
                          "    const int d = nA + nB;\n    if (d == 0 || count == 0) return;\n"
                          "    mergeSmall_k<<<static_cast<unsigned>(count), d>>>(dA, nA, dB, nB, dM);\n"
                          '    CUDA_CHECK_LAUNCH("mergeSmall_k");\n'
                          f"    {merge}(dA, nA, dB, nB, dM, count);\n")


def _part3_host_pool(reference: str) -> str:
    """The reference's Part 3 with mergeLarge's and mergeSort's launchers
    replaced by HOST_POOL's copies and the host's std::merge, std::stable_sort."""
    text = _with_prelude(reference, HOST_POOL)
    text = _launcher_body(text, "    checkMergeLarge(dA, nA, dB, nB, dM);\n",
                          "    const long long n = nA + nB;\n    if (n == 0) return;\n" + HOST_POOL_MERGE)
    return _launcher_body(text, "    checkMergeSort(dData, n);\n", HOST_POOL_SORT)


CUB_ALIAS = """#include <cub/block/block_merge_sort.cuh>
namespace tiles = ::cub;
template <class T>
using TileSorter = tiles::BlockMergeSort<T, 256, 17>;
"""


@dataclass
class Attack:
    name: str
    what: str
    make: object  # (lab, skeleton files, reference files) -> the submission's files
    expect: dict[str, str]  # as Fault.expect; unnamed questions: "zero" for forgeries, "full" otherwise
    parts: list[str] | None = None
    sanitize: bool = False
    noted: str | None = None  # words that the grading's notes must hold


# The questions an attack must get nothing for, from the course table.
ALL_ZERO = {q: "zero" for q in h.all_questions(h.LAB)}
PART1_ZERO = {q: "zero" for q in h.read_points(h.LAB, "part1")}


def _reference_part1_with(prelude: str):
    """An attack's files: the reference, with `prelude` in Part 1's student.cu."""
    return lambda lab, skel, ref: {**ref, P1: _with_prelude(ref[P1], prelude)}

STUDENT_FILES = [P1, P2, P3, PX]

ATTACKS = [
    Attack("forged-report", "every student.cu: the skeleton and a constructor that forges the report, raw exit",
           lambda lab, skel, ref: {**skel, **{f: _with_prelude(skel[f], FORGE) for f in STUDENT_FILES}}, ALL_ZERO),
    Attack("include-instructor", "every student.cu includes the instructor's file (or the trusted one)",
           lambda lab, skel, ref: {**skel, **{f: _include_instructor(lab, f.split("/")[0], "reference.cu")
                                              for f in STUDENT_FILES}}, ALL_ZERO),
    Attack("preload-forger", "the skeleton re-runs itself with a preloaded library that forges the report",
           lambda lab, skel, ref: {**skel, P1: _with_prelude(skel[P1], PRELOAD)}, PART1_ZERO,
           parts=["part1"]),
    Attack("side-effects", "the reference, plus writes to the lab, the base, other results; reads; a daemon",
           _reference_part1_with(SIDE_EFFECTS), {}, parts=["part1"]),
    # The report is a pipe of the harness's, not a file: there is nothing to
    # replace, and the reference's points stand (a harness that read a report
    # file as a plain file would wait on the named pipe forever).
    Attack("report-pipe", "the reference, plus an exit handler that replaces the report with a named pipe",
           _reference_part1_with(REPORT_PIPE), {}, parts=["part1"]),
    # Refused before linking: its object is over the size cap.
    Attack("huge-object", "the reference, plus a 96 MiB constant table", _reference_part1_with(HUGE_OBJECT),
           PART1_ZERO, parts=["part1"]),
    # Stopped by the test's limits (sandbox.TEST) in every test process.
    Attack("resource-hog", "the reference, plus a constructor that starts 1500 threads, fills /tmp and /dev/shm and "
           "touches 16 GiB of host memory", _reference_part1_with(RESOURCE_HOG), PART1_ZERO, parts=["part1"]),
    # Stopped by the build's limits (sandbox.BUILD, BUILD_TIMEOUT).
    Attack("include-bomb", "the reference, whose Part 1 student.cu includes itself twice per level to depth 40",
           _reference_part1_with(INCLUDE_BOMB), PART1_ZERO, parts=["part1"]),
    # Refused after compiling: its dependency file lists a CUB header, however
    # the source names it (building.py, library_includes).
    Attack("cub-alias", "the reference, whose Part 3 includes CUB's BlockMergeSort and names it through a "
           "namespace alias, never writing cub::",
           lambda lab, skel, ref: {**ref, P3: _with_prelude(ref[P3], CUB_ALIAS)},
           {"Q5": "zero", "Q6": "zero", "Q7": "zero"}, parts=["part3"]),
    # Its allocation is a CUDA call before main, which the trace fails in every test.
    Attack("memory-hog", "the reference, plus all GPU memory but 12 GB taken before the tests",
           _reference_part1_with(MEMORY_HOG), PART1_ZERO,
           parts=["part1"]),
    # Refused before linking, each on the reference, which alone gets full
    # marks: a refused object scores 0 on its part's questions, so "zero" here
    # is the refusal, and "full" would mean it was let through (dlsym-route,
    # last of these, is the trace's).
    # A definition in namespace lab::test (the graders' record<T>), in every part.
    Attack("weak-override", "every student.cu: the reference, plus record<int> and record<Tagged> of the graders "
           "taken over (a sort's output handed over sorted)",
           lambda lab, skel, ref: {**ref, **{f: _with_prelude(ref[f], WEAK_OVERRIDE) for f in STUDENT_FILES}},
           ALL_ZERO),
    # A definition of operator new / delete.
    Attack("operator-new", "the reference, plus a global operator new and delete that log every allocation",
           _reference_part1_with(OPERATOR_NEW), PART1_ZERO,
           parts=["part1"]),
    # A prioritized .init_array section, and a reference to cudaGetDriverEntryPoint*.
    Attack("priority-constructor", "the reference, plus a constructor(100) that maps pinned host memory with "
           "cuMemHostAlloc, found through cudaGetDriverEntryPointByVersion, before the trace starts",
           _reference_part1_with(PRIORITY_CONSTRUCTOR),
           PART1_ZERO, parts=["part1"]),
    # A reference to __cudaRegisterManagedVar.
    Attack("managed-variable", "the reference, plus a __managed__ array the merge kernel writes (host-visible, no "
           "allocation call)",
           lambda lab, skel, ref: {**ref, P1: _edited(
               _with_prelude(ref[P1], MANAGED_VARIABLE),
               ("    M[k] = mergeOutputAt(sA, nA, sB, nB, k);\n",
                "    M[k] = mergeOutputAt(sA, nA, sB, nB, k);\n"
                "    if (pair == 0) hostVisible[k] = diagonalSearch(sA, nA, sB, nB, k);\n"))},
           PART1_ZERO, parts=["part1"]),
    # A .preinit_array section.
    Attack("preinit", "the reference, plus a .preinit_array entry that rewrites LAB_CONFINE and LAB_TRACE to 0 in "
           "the environment",
           _reference_part1_with(PREINIT), PART1_ZERO,
           parts=["part1"]),
    # A definition of a libc name.
    Attack("malloc-interposer", "the reference, plus malloc interposed for the whole process (forwarding to "
           "__libc_malloc, logging the blocks)",
           _reference_part1_with(MALLOC_INTERPOSER),
           PART1_ZERO, parts=["part1"]),
    # Lookups through dlopen and dlsym (a note for a person, not refused at
    # link time: Thrust makes them too), on the skeleton: the merges done on
    # the host, CUPTI's copy records switched off through the trace's own
    # libcupti. Stopped by the trace, which takes each copy's direction from
    # the call itself; a trace reading directions from the records alone
    # would give it Q2 and Q1's GPU tests.
    Attack("dlsym-route", "Part 1 merged on the host (the skeleton's kernels launched for show), with CUPTI's copy "
           "records switched off through dlopen/dlsym of the trace's libcupti",
           lambda lab, skel, ref: {**skel, P1: _part1_on_host(skel[P1], DLSYM_ROUTE, "mergeOnHostUnseen")},
           PART1_ZERO, parts=["part1"]),
    # Stopped while running. On the skeleton, whose diagonal search also fails
    # Q1's host test: every weighted test of Q1 and Q2 must fail.
    # The seccomp filter: fork, clone without CLONE_THREAD, execve, execveat
    # refused (and HOSTILE- in a log if any of it ran).
    Attack("child-replay", "the skeleton, plus a constructor that forks and execs the test again with a marker "
           "set, and says so",
           lambda lab, skel, ref: {**skel, P1: _with_prelude(skel[P1], CHILD_REPLAY)}, PART1_ZERO,
           parts=["part1"]),
    # The trace's allowlist: a pool of host memory (cudaMemPoolCreate with a
    # host location) and the copies into it by kernels with the expected
    # names and shapes. Every GPU test of Q5-Q7 runs a launcher through it.
    Attack("host-pool", "Part 3's merge and sort done by std::merge / std::stable_sort in memory of a host-located "
           "memory pool, moved by copy kernels named mergeTiles_k and sortTiles_k with the expected shapes",
           lambda lab, skel, ref: {**ref, P3: _part3_host_pool(ref[P3])},
           {"Q5": "zero", "Q6": "zero", "Q7": "zero"}, parts=["part3"]),
    # The trace's copy check: CUPTI's memcpy records switched off during the
    # host merge's copies (then on again, so the canaries still show), its
    # functions found with no call the link-time check refuses, the copies'
    # direction left to cudaMemcpyDefault. Stopped by the trace counting the
    # copies asked for against the records (checkTrace); a trace that took
    # copy directions from the records alone would give it Q2 and Q1's GPU tests.
    Attack("cupti-unseen", "Part 1 merged on the host (the skeleton's kernels launched for show), with CUPTI's copy "
           "records switched off, cuptiActivityDisable found through the loader's list of libraries",
           lambda lab, skel, ref: {**skel, P1: _part1_on_host(skel[P1], CUPTI_UNSEEN, "mergeOnHostUnseen")},
           PART1_ZERO, parts=["part1"]),
    # The trace's settings: an ordinary constructor sets LAB_TRACE=0, then
    # the merges go to the host with plain copies. Stopped only by a trace
    # that takes its settings before any student code runs and ignores later
    # changes; the trace that reads LAB_TRACE when first used is off by then,
    # and would give this Q2 and Q1's GPU tests.
    Attack("trace-env", "Part 1 merged on the host with plain copies, after a static constructor set LAB_TRACE=0",
           lambda lab, skel, ref: {**skel, P1: _part1_on_host(skel[P1], TRACE_ENV, "mergeOnHost")},
           PART1_ZERO, parts=["part1"]),
    # The judge: each output is read from the device memory it owns as the
    # call returns; nothing the process writes afterwards, or at exit, counts.
    Attack("exit-rewriter", "Part 1's kernels launched for show (the skeleton's), every output rewritten at exit by "
           "std::merge of its inputs",
           lambda lab, skel, ref: {**skel, P1: _part1_on_host(skel[P1], EXIT_REWRITER, "rememberForExit")},
           PART1_ZERO, parts=["part1"]),
    Attack("sanitizer-stall", "the reference, plus a constructor that sleeps 40 s only under compute-sanitizer",
           _reference_part1_with(SANITIZER_STALL), {}, parts=["part1"], sanitize=True,
           noted=SLOW_RUN_NOTE),
    # The judge meters each call's PCIe bytes (harness/pcie.py): a merge done on
    # the host inside the call moves its arrays down and back, which the
    # launches alone never need (the trace sees the copies too).
    Attack("host-merge", "Part 1's kernels launched for show, each merge done on the host inside the call, through "
           "copies down and back", lambda lab, skel, ref: {**skel, P1: _part1_on_host(skel[P1], HOST_MERGE, "mergeOnHost")},
           PART1_ZERO, parts=["part1"], noted="over PCIe"),
    Attack("late-writer", "Part 1's kernels launched for show, each merge done on the host by a thread that starts "
           "as the launcher returns, racing the judge's reading",
           lambda lab, skel, ref: {**skel, P1: _part1_on_host(skel[P1], LATE_WRITER, "mergeLater")},
           PART1_ZERO, parts=["part1"]),
]
