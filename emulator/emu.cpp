// The emulated GPU (emu.hpp says what it is for). Compiled without
// -fsanitize=thread: nothing here is checked, and it answers the checks of
// the kernel files.
//
// Layout:
//   1. state: the emulated device, its allocations, errors, the trace log
//   2. fibers and the scheduler: one launch, block after block
//   3. the access checks (__tsan_* entry points) and shared-memory shadow
//   4. the runtime API
#include "emu.hpp"

#include <cxxabi.h>
#include <elf.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;

extern "C" {
extern char __executable_start[];
extern char _end[];
}

namespace emu {
namespace {

// ================================================================ 1. state

constexpr int kMaxThreads = 1024;
constexpr std::size_t kStaticSharedLimit = 48 * 1024;
constexpr std::size_t kDynamicSharedLimit = 48 * 1024;
constexpr std::size_t kStackBytes = 256 * 1024;  // per CUDA thread, parameters included
constexpr std::size_t kParamBytes = 32 * 1024;   // at the top of each stack

std::size_t memoryLimit() {
    static const std::size_t limit = [] {
        const char* env = std::getenv("EMU_MEMORY_MB");
        const long long mb = env ? std::atoll(env) : 4096;
        return static_cast<std::size_t>(mb > 0 ? mb : 4096) << 20;
    }();
    return limit;
}

struct Allocation {
    char* start;
    std::size_t bytes;
    char* mapping;
    std::size_t mapped;
    bool device;  // false: host memory visible to kernels (pinned, mapped, managed, registered)
};
std::map<std::uintptr_t, Allocation> allocations;  // by start
void deviceMemoryOpen(bool open);                   // section 4
std::size_t allocatedBytes = 0;

cudaError_t lastError = cudaSuccess;    // cleared by cudaGetLastError
cudaError_t stickyError = cudaSuccess;  // a kernel fault: every later call returns it (until clearFault)
std::string lastFault;
std::size_t faults = 0;                 // every fault so far
std::string caseContext;                // the test case running now (CaseContext), for the reports

struct Log {
    bool on = false;
    std::vector<std::string> names;
    std::vector<long long> blocks;
    std::vector<int> threads;
    std::vector<std::string> copies;
    std::vector<std::string> memoryCalls;
} trace;

void hostMemoryCallMade(const char* name) { trace.memoryCalls.push_back(name); }

std::string hex(const void* p) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%p", p);
    return buf;
}

// ---------------------------------------------------------------- symbols
// The executable's own symbol table (static functions included), for the
// names of kernels launched by pointer (cudaLaunchKernelEx).
struct Symbol {
    std::uintptr_t address;
    std::size_t size;
    std::string name;
};

std::string demangle(const char* mangled) {
    int status = 0;
    char* plain = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
    std::string out = status == 0 && plain ? plain : mangled;
    std::free(plain);
    return out;
}

// Where the executable is loaded: its addresses in the file are offsets from here.
std::uintptr_t loadBase() {
    static const std::uintptr_t base = [] {
        std::uintptr_t b = 0;
        dl_iterate_phdr([](dl_phdr_info* info, std::size_t, void* out) {
            *static_cast<std::uintptr_t*>(out) = info->dlpi_addr;
            return 1;  // the first object is the executable
        }, &b);
        return b;
    }();
    return base;
}

const std::vector<Symbol>& symbols() {
    static const std::vector<Symbol> table = [] {
        std::vector<Symbol> out;
        const std::uintptr_t base = loadBase();
        const int fd = open("/proc/self/exe", O_RDONLY);
        if (fd < 0) return out;
        const off_t size = lseek(fd, 0, SEEK_END);
        void* map = mmap(nullptr, static_cast<std::size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
        close(fd);
        if (map == MAP_FAILED) return out;
        const auto* file = static_cast<const char*>(map);
        const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(file);
        const auto* sh = reinterpret_cast<const Elf64_Shdr*>(file + eh->e_shoff);
        for (int i = 0; i < eh->e_shnum; ++i) {
            if (sh[i].sh_type != SHT_SYMTAB) continue;
            const auto* syms = reinterpret_cast<const Elf64_Sym*>(file + sh[i].sh_offset);
            const char* names = file + sh[sh[i].sh_link].sh_offset;
            for (std::size_t k = 0; k < sh[i].sh_size / sizeof(Elf64_Sym); ++k) {
                const int type = ELF64_ST_TYPE(syms[k].st_info);
                if ((type == STT_FUNC || type == STT_OBJECT) && syms[k].st_value != 0)
                    out.push_back({base + syms[k].st_value, syms[k].st_size, names + syms[k].st_name});
            }
        }
        munmap(map, static_cast<std::size_t>(size));
        std::sort(out.begin(), out.end(), [](const Symbol& a, const Symbol& b) { return a.address < b.address; });
        return out;
    }();
    return table;
}

// The symbol holding `address`, demangled.
std::string symbolAt(const void* address) {
    const auto a = reinterpret_cast<std::uintptr_t>(address);
    const auto& table = symbols();
    auto it = std::upper_bound(table.begin(), table.end(), a,
                               [](std::uintptr_t x, const Symbol& s) { return x < s.address; });
    while (it != table.begin()) {
        --it;
        if (a < it->address + std::max<std::size_t>(it->size, 1)) return demangle(it->name.c_str());
        if (it->size != 0) break;
    }
    return "";
}

// ---------------------------------------------------------------- source lines
// Where code of the program comes from, for the fault reports: read from the
// debug information (-g) by addr2line (binutils, which comes with g++). The
// copies rewrite.py compiles keep their originals' file names and lines. Not
// a word where addr2line is missing: the reports then name no line.
struct SourceFrame {
    std::string function;  // demangled, in full (shortFunction shortens it)
    std::string file;      // in the lab: "part1_merge_path/student.cu"; outside it (a system header): absolute
    int line = 0;
};

// "void lab::(anonymous namespace)::k<int>(int const*, int)" -> "k<int>"
std::string shortFunction(std::string s) {
    static const std::string anonymous = "(anonymous namespace)::";
    for (std::size_t at; (at = s.find(anonymous)) != std::string::npos;) s.erase(at, anonymous.size());
    int depth = 0;
    std::size_t start = 0, end = s.size();
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (c == '<' || c == '[' || c == '{') ++depth;
        else if (c == '>' || c == ']' || c == '}') --depth;
        else if (depth == 0 && c == '(' && i > 0) { end = i; break; }
        else if (depth == 0 && c == ' ') start = i + 1;  // after the return type
        else if (depth == 0 && c == ':' && i + 1 < s.size() && s[i + 1] == ':') start = i + 2, ++i;
    }
    return s.substr(start, end - start);
}

// For each return address (innermost frame first), the functions inlined at
// its call, innermost first; nothing where addr2line is missing or cannot tell.
std::vector<std::vector<SourceFrame>> lookUp(const std::vector<std::uintptr_t>& returns) {
    std::vector<std::vector<SourceFrame>> out(returns.size());
    if (returns.empty()) return out;
    std::string command = "addr2line -a -f -i -C -e /proc/" + std::to_string(getpid()) + "/exe";
    for (std::uintptr_t r : returns) {
        char buf[32];
        std::snprintf(buf, sizeof buf, " 0x%zx", static_cast<std::size_t>(r - 1 - loadBase()));  // the call itself
        command += buf;
    }
    FILE* pipe = popen((command + " 2>/dev/null").c_str(), "r");
    if (!pipe) return out;
    std::vector<std::string> lines;
    char buf[4096];
    while (std::fgets(buf, sizeof buf, pipe)) {
        std::string s = buf;
        while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
        lines.push_back(s);
    }
    pclose(pipe);
    int k = -1;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        if (lines[i].rfind("0x", 0) == 0) {
            ++k;
            continue;
        }
        if (k < 0 || k >= static_cast<int>(out.size()) || i + 1 >= lines.size()) break;
        std::string place = lines[++i];
        place = place.substr(0, place.find(" ("));  // "(discriminator 2)"
        const std::size_t colon = place.rfind(':');
        SourceFrame f{lines[i - 1], place.substr(0, colon), 0};
        if (colon != std::string::npos) f.line = std::atoi(place.c_str() + colon + 1);
        out[static_cast<std::size_t>(k)].push_back(f);
    }
    return out;
}

// "./part3_merge_sort/../common/x.hpp" -> "common/x.hpp" (an include's path as written)
std::string plainPath(const std::string& path) {
    std::vector<std::string> parts;
    std::istringstream in(path);
    for (std::string part; std::getline(in, part, '/');) {
        if (part.empty() || part == ".") continue;
        if (part == ".." && !parts.empty() && parts.back() != "..") parts.pop_back();
        else parts.push_back(part);
    }
    std::string out = !path.empty() && path[0] == '/' ? "/" : "";
    for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? "/" : "") + parts[i];
    return out;
}

// Each address is looked up once (a fault's report may ask for several
// threads stopped at the same line); files of the lab by their names in it.
std::vector<std::vector<SourceFrame>> sourceFrames(const std::vector<std::uintptr_t>& returns) {
    static std::map<std::uintptr_t, std::vector<SourceFrame>> known;
    std::vector<std::uintptr_t> asked;
    for (std::uintptr_t r : returns)
        if (!known.count(r) && std::find(asked.begin(), asked.end(), r) == asked.end()) asked.push_back(r);
    std::vector<std::vector<SourceFrame>> found = lookUp(asked);
    // The Makefile has the compiler name the lab's folder "." (wherever it
    // is); GCC files some code (template instances) under the copy rewrite.py
    // made rather than under the name its #line gives, the lines the same.
    const std::string copies = "build/emu/src/";
    for (auto& inlined : found)
        for (SourceFrame& f : inlined) {
            f.file = plainPath(f.file);
            if (f.file.compare(0, copies.size(), copies) == 0) f.file.erase(0, copies.size());
        }
    for (std::size_t i = 0; i < asked.size(); ++i) known[asked[i]] = found[i];
    std::vector<std::vector<SourceFrame>> out;
    for (std::uintptr_t r : returns) out.push_back(known[r]);
    return out;
}

// The lines of the kernel's own code in a stack (return addresses, innermost
// first), innermost first: the emulator's, the standard library's and those
// it cannot place left out, up to the launch. `kernel`: the function the
// last of them is in, when the walk got to the launch (the kernel itself:
// emu.hpp makes kernels real functions).
struct Chain {
    std::vector<SourceFrame> frames;
    std::string kernel;
};
bool inLab(const SourceFrame& f) {
    return !f.file.empty() && f.file != "??" && f.file[0] != '/' && f.line > 0 &&
           f.file.rfind("emulator/emu.", 0) != 0;
}
Chain kernelChain(const std::vector<std::uintptr_t>& stack) {
    Chain chain;
    const auto inlined = sourceFrames(stack);
    std::uintptr_t last = 0;  // the return address of the last line taken
    bool launch = false;
    for (std::size_t i = 0; i < stack.size() && !launch; ++i) {
        const std::vector<SourceFrame>& group = inlined[i];  // its last: the function the address is in
        if (group.empty()) continue;
        if (group.back().file.rfind("emulator/emu.", 0) == 0) {  // the emulator's code: below the
            launch = last != 0;                                  // kernel the fault's report, above it the launch
            continue;
        }
        for (const SourceFrame& f : group) {
            // rewrite.py's launch, [](auto... a) { kernel(a...); } in the launcher
            // (binutils spell its name either way)
            launch = f.function.find("{lambda((auto:1)...)") != std::string::npos ||
                     f.function.find("{lambda(auto:1...)") != std::string::npos;
            if (launch) break;
            if (inLab(f)) {
                chain.frames.push_back(f);
                last = stack[i];
            }
        }
    }
    if (launch && last) chain.kernel = shortFunction(symbolAt(reinterpret_cast<const void*>(last - 1)));
    return chain;
}

// " at part1_merge_path/student.cu:63", or for code in a function the kernel
// calls, " at common/x.cuh:20, called from part1_merge_path/student.cu:63".
std::string placeText(const std::vector<SourceFrame>& frames) {
    constexpr std::size_t kMost = 4;
    std::string out;
    for (std::size_t i = 0; i < frames.size() && i < kMost; ++i)
        out += (i == 0 ? " at " : ", called from ") + frames[i].file + ":" + std::to_string(frames[i].line);
    if (frames.size() > kMost) out += ", ...";
    return out;
}

// The lines of the kernel's code at one return address (a shared access
// recorded earlier; the functions inlined there): " at file:line...", or "".
std::string placeOf(std::uintptr_t returnAddress) {
    return returnAddress ? placeText(kernelChain({returnAddress}).frames) : "";
}

// The return addresses of the calling thread's stack, innermost first.
std::vector<std::uintptr_t> stackHere() {
    void* frames[64];
    const int n = backtrace(frames, 64);
    std::vector<std::uintptr_t> out;
    for (int i = 0; i < n; ++i) out.push_back(reinterpret_cast<std::uintptr_t>(frames[i]));
    return out;
}

bool inRange(const void* p, const void* lo, const void* hi) {
    return reinterpret_cast<std::uintptr_t>(p) >= reinterpret_cast<std::uintptr_t>(lo) &&
           reinterpret_cast<std::uintptr_t>(p) < reinterpret_cast<std::uintptr_t>(hi);
}

// Shared memory: one arena, the launch's dynamic shared memory at its start,
// then every __shared__ variable of the program (rewrite.py turns each into
// a reference to its place here, made on first use). Blocks run one at a
// time, so one copy of each serves them all.
constexpr std::size_t kArenaBytes = 64 << 20;
struct SharedVariable {
    const char* start;
    std::size_t bytes;
    std::string name;
};
char* arena = nullptr;
std::size_t arenaUsed = kDynamicSharedLimit;
std::deque<SharedVariable> sharedVariables;  // in address order; references stay valid

void ensureArena() {
    if (arena) return;
    void* m = mmap(nullptr, kArenaBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        std::fprintf(stderr, "emulator: cannot map shared memory\n");
        std::exit(1);
    }
    arena = static_cast<char*>(m);
}

bool inShared(const void* p) { return arena && inRange(p, arena, arena + arenaUsed); }

const SharedVariable* sharedVariableAt(const char* p) {
    auto it = std::upper_bound(sharedVariables.begin(), sharedVariables.end(), p,
                               [](const char* x, const SharedVariable& v) { return x < v.start; });
    if (it == sharedVariables.begin()) return nullptr;
    --it;
    return p < it->start + it->bytes ? &*it : nullptr;
}

// ================================================================ 2. fibers

enum class State { Ready, AtBarrier, AtWarp, Done };
enum class Barrier { Plain, Count, And, Or };

struct Thread {
    ucontext_t context;
    State state = State::Ready;
    Barrier barrier = Barrier::Plain;
    int predicate = 0, result = 0;
    // a warp operation: 0 syncwarp, 1 ballot, 2 shuffle
    int warpOp = 0, shuffleKind = 0, shuffleLane = 0, shuffleWidth = 32;
    unsigned mask = 0;
    unsigned long long value = 0, warpResult = 0;
};

struct Launch {
    const char* name = "";
    dim3 grid, block;
    int threads = 0;
    uint3 blockIndex{0, 0, 0};
    Body body = nullptr;
    std::size_t closureBytes = 0;
    const void* closure = nullptr;
    std::vector<Thread> thread;
    int current = -1;
    bool aborted = false;
    std::uint32_t warpSyncs[kMaxThreads / 32] = {};
    bool firstBlock = true;
    std::size_t dynamicShared = 0;
    std::vector<const SharedVariable*> sharedVariables;  // the static shared variables it touched
    std::size_t staticShared = 0;              // their bytes
    bool capturing = false;                    // stackOf: a waiting thread reports its stack
    std::vector<std::uintptr_t> captured;      // ... here
};

Launch* active = nullptr;  // the launch running now, if any
bool inKernel = false;     // a fiber is running (the access checks are on)
ucontext_t scheduler;
char* stacks = nullptr;    // kMaxThreads stacks, each with a guard page below

std::uint32_t blockGeneration = 0;  // one per block run: shared memory starts unwritten
std::uint32_t interval = 0;         // one per block start and per barrier

// ---------------------------------------------------------------- order
enum class Order { Forward, Reverse, Random };
struct OrderSetting {
    Order order = Order::Random;
    unsigned long long seed = 0;
    std::string text;
};
const OrderSetting& orderSetting() {
    static const OrderSetting setting = [] {
        OrderSetting s;
        const char* env = std::getenv("EMU_ORDER");
        const std::string value = env ? env : "random";
        if (value == "forward") s.order = Order::Forward;
        else if (value == "reverse") s.order = Order::Reverse;
        else if (value != "random") {
            std::fprintf(stderr, "EMU_ORDER must be forward, reverse or random, not '%s'\n", value.c_str());
            std::exit(2);
        }
        const char* seed = std::getenv("EMU_SEED");
        s.seed = seed ? std::strtoull(seed, nullptr, 10) : std::random_device{}();
        s.text = "threads run between barriers in " + value + " order" +
                 (s.order == Order::Random ? " (EMU_SEED=" + std::to_string(s.seed) + ")" : "");
        return s;
    }();
    return setting;
}
std::mt19937_64& rng() {
    static std::mt19937_64 r(orderSetting().seed);
    return r;
}

// ---------------------------------------------------------------- faults
// "thread (x,y,z) of block (x,y,z)"
std::string where(const Launch& l, int t) {
    const unsigned bx = l.block.x, by = l.block.y;
    std::ostringstream os;
    os << "thread (" << t % bx << "," << (t / bx) % by << "," << t / (bx * by) << ") of block (" << l.blockIndex.x
       << "," << l.blockIndex.y << "," << l.blockIndex.z << ")";
    return os.str();
}

// Ends the launch: "EMULATED GPU FAULT: <what> in <kernel> at <file:line>" is
// printed with the test case's context and kept (without it), and every
// later CUDA call returns the error, as after a fault on a GPU, until
// clearFault. `stack`: the return addresses of the thread at fault (stackHere,
// stackOf), which name the kernel as compiled (template arguments filled in)
// and, when `placed`, the line; without them, the kernel as written at the
// launch.
void reportFault(const std::string& what, const std::vector<std::uintptr_t>& stack = {}, bool placed = true) {
    const Chain chain = kernelChain(stack);
    const std::string kernel = chain.kernel.empty() ? active->name : chain.kernel;
    lastFault = "EMULATED GPU FAULT: " + what + " in " + kernel + (placed ? placeText(chain.frames) : "");
    ++faults;
    std::fprintf(stderr, "%s%s\n", lastFault.c_str(), caseContext.empty() ? "" : (" [" + caseContext + "]").c_str());
    std::fflush(stderr);
    stickyError = cudaErrorIllegalAddress;
    active->aborted = true;
}

// The same from inside a thread, whose fiber is then dropped.
[[noreturn]] void faultHere(const std::string& what) {
    reportFault(what + " by " + where(*active, active->current), stackHere());
    inKernel = false;
    setcontext(&scheduler);  // back into resume(), never to this fiber
    std::abort();
}

// ---------------------------------------------------------------- running
Thread& me() { return active->thread[active->current]; }

// The emulator's own work inside a kernel's thread (a check, a message, a
// new shared variable) goes unchecked: the library code it calls may be the
// instrumented copy the linker took from a kernel file.
struct Unchecked {
    bool was = inKernel;
    Unchecked() { inKernel = false; }
    ~Unchecked() { inKernel = was; }
};

void yieldToScheduler() {
    Launch& l = *active;
    const int self = l.current;
    inKernel = false;
    swapcontext(&l.thread[self].context, &scheduler);
    // resumed by the scheduler, which has set l.current = self and inKernel;
    // or, after a fault, asked for this thread's stack (stackOf)
    while (l.capturing) {
        inKernel = false;
        l.captured = stackHere();
        swapcontext(&l.thread[self].context, &scheduler);
    }
}

void fiberEntry() {
    Launch& l = *active;
    char* top = stacks + static_cast<std::size_t>(l.current) * kStackBytes + kStackBytes;
    l.body(top - kParamBytes);
    l.thread[l.current].state = State::Done;
    inKernel = false;
    swapcontext(&l.thread[l.current].context, &scheduler);
}

void resume(Launch& l, int t) {
    l.current = t;
    const unsigned u = static_cast<unsigned>(t);
    ::threadIdx = {u % l.block.x, (u / l.block.x) % l.block.y, u / (l.block.x * l.block.y)};
    inKernel = true;
    swapcontext(&scheduler, &l.thread[t].context);
    inKernel = false;
}

// The stack of a thread waiting at a barrier or warp operation (from the
// scheduler, after a fault): it wakes up just to read it.
std::vector<std::uintptr_t> stackOf(Launch& l, int t) {
    const State s = l.thread[t].state;
    if (s != State::AtBarrier && s != State::AtWarp) return {};
    l.capturing = true;
    resume(l, t);
    l.capturing = false;
    return std::move(l.captured);
}

// Threads, each with the line it waits at when `placed` (a barrier or warp
// operation): up to three, then how many more.
std::string list(const std::vector<int>& ids, Launch& l, bool placed = false) {
    std::ostringstream os;
    for (std::size_t i = 0; i < ids.size() && i < 3; ++i) {
        os << (i ? "; " : "") << where(l, ids[i]);
        if (placed) os << placeText(kernelChain(stackOf(l, ids[i])).frames);
    }
    if (ids.size() > 3) os << " and " << ids.size() - 3 << " more";
    return os.str();
}

// The warps whose every thread of the mask waits at a warp operation go on.
bool releaseWarps(Launch& l) {
    bool any = false;
    for (int w = 0; w * 32 < l.threads; ++w) {
        const int first = w * 32, last = std::min(l.threads, first + 32);
        int waiting = -1;
        for (int t = first; t < last; ++t)
            if (l.thread[t].state == State::AtWarp) waiting = t;
        if (waiting < 0) continue;
        const unsigned mask = l.thread[waiting].mask;
        bool ready = true;
        for (int t = first; t < last; ++t) {
            const bool named = (mask >> (t - first)) & 1u;
            if (!named) continue;
            if (l.thread[t].state == State::Done) {
                reportFault("a warp operation names lane " + std::to_string(t - first) + ", which has exited, by " +
                            where(l, waiting), stackOf(l, waiting));
                return false;
            }
            if (l.thread[t].state != State::AtWarp) ready = false;
        }
        if (!ready) continue;
        unsigned ballot = 0;
        for (int t = first; t < last; ++t)
            if (((mask >> (t - first)) & 1u) && l.thread[t].predicate) ballot |= 1u << (t - first);
        for (int t = first; t < last; ++t) {
            Thread& th = l.thread[t];
            if (!((mask >> (t - first)) & 1u)) continue;
            if (th.warpOp == 1) th.warpResult = ballot;
            if (th.warpOp == 2) {
                const int lane = t - first, width = th.shuffleWidth, segment = lane & ~(width - 1);
                int src = lane;
                switch (th.shuffleKind) {
                    case kShflIdx: src = segment + (th.shuffleLane & (width - 1)); break;
                    case kShflUp: src = (lane - segment) >= th.shuffleLane ? lane - th.shuffleLane : lane; break;
                    case kShflDown: src = (lane - segment) + th.shuffleLane < width ? lane + th.shuffleLane : lane; break;
                    case kShflXor: src = lane ^ th.shuffleLane; if ((src & ~(width - 1)) != segment) src = lane; break;
                }
                const int from = first + src;
                th.warpResult = (from < last && ((mask >> src) & 1u)) ? l.thread[from].value : th.value;
            }
            th.state = State::Ready;
        }
        ++l.warpSyncs[w];
        any = true;
    }
    return any;
}

// Every thread at __syncthreads: all go on (the reduction computed), the
// next interval starts. A thread that has exited never arrives: a fault.
bool releaseBlock(Launch& l) {
    std::vector<int> at, done, elsewhere;
    for (int t = 0; t < l.threads; ++t) {
        const State s = l.thread[t].state;
        (s == State::AtBarrier ? at : s == State::Done ? done : elsewhere).push_back(t);
    }
    if (at.empty()) {
        reportFault("deadlock: " + list(elsewhere, l, true) + " wait at warp operations that cannot complete",
                    stackOf(l, elsewhere[0]), false);
        return false;
    }
    if (!elsewhere.empty()) {
        reportFault("deadlock: " + list(at, l, true) + " wait at __syncthreads while " + list(elsewhere, l, true) +
                        " wait at a warp operation that cannot complete",
                    stackOf(l, at[0]), false);
        return false;
    }
    if (!done.empty()) {
        reportFault("a barrier some threads never reach: " + list(at, l, true) + " wait at __syncthreads, but " +
                        list(done, l) + " returned without reaching it",
                    stackOf(l, at[0]), false);
        return false;
    }
    int count = 0;
    for (int t : at) count += l.thread[t].predicate != 0;
    for (int t : at) {
        Thread& th = l.thread[t];
        switch (th.barrier) {
            case Barrier::Plain: th.result = 0; break;
            case Barrier::Count: th.result = count; break;
            case Barrier::And: th.result = count == l.threads; break;
            case Barrier::Or: th.result = count > 0; break;
        }
        th.state = State::Ready;
    }
    ++interval;
    return true;
}

void runBlock(Launch& l) {
    ++blockGeneration;
    ++interval;
    // Shared memory starts as the poison (0xA5 bytes), never zero: the
    // launch's dynamic part, and the variables its first block used.
    std::memset(arena, 0xA5, l.dynamicShared);
    for (const SharedVariable* v : l.sharedVariables) std::memset(const_cast<char*>(v->start), 0xA5, v->bytes);
    std::fill(std::begin(l.warpSyncs), std::end(l.warpSyncs), 0u);
    for (int t = 0; t < l.threads; ++t) {
        Thread& th = l.thread[t];
        th = Thread{};
        char* base = stacks + static_cast<std::size_t>(t) * kStackBytes;
        std::memcpy(base + kStackBytes - kParamBytes, l.closure, l.closureBytes);
        getcontext(&th.context);
        th.context.uc_stack.ss_sp = base;
        th.context.uc_stack.ss_size = kStackBytes - kParamBytes;
        th.context.uc_link = nullptr;
        makecontext(&th.context, fiberEntry, 0);
    }
    std::vector<int> order(static_cast<std::size_t>(l.threads));
    for (;;) {
        for (int t = 0; t < l.threads; ++t) order[static_cast<std::size_t>(t)] = t;
        switch (orderSetting().order) {
            case Order::Forward: break;
            case Order::Reverse: std::reverse(order.begin(), order.end()); break;
            case Order::Random: std::shuffle(order.begin(), order.end(), rng()); break;
        }
        for (int t : order) {
            if (l.thread[t].state != State::Ready) continue;
            // getcontext above returns here after a fault's setcontext
            resume(l, t);
            if (l.aborted) return;
        }
        bool allDone = true;
        for (const Thread& th : l.thread) allDone = allDone && th.state == State::Done;
        if (allDone) return;
        if (releaseWarps(l)) continue;
        if (l.aborted) return;
        if (!releaseBlock(l)) return;  // it has reported why nothing can go on
    }
}

void ensureStacks() {
    if (stacks) return;
    void* p = mmap(nullptr, kStackBytes * kMaxThreads, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        std::fprintf(stderr, "emulator: cannot map the threads' stacks\n");
        std::exit(1);
    }
    stacks = static_cast<char*>(p);
    for (int t = 0; t < kMaxThreads; ++t) mprotect(stacks + static_cast<std::size_t>(t) * kStackBytes, 4096, PROT_NONE);
}

// ================================================================ 3. checks

// One shadow entry per shared byte: who last wrote and read it, when, and
// from where (codeOffset).
struct Shadow {
    std::uint32_t generation;  // the block it was last touched in
    std::uint32_t writeInterval, readInterval;
    std::uint32_t writeWarpSync, readWarpSync;
    std::uint32_t writeCode, readCode;
    std::uint16_t writer, reader;
    std::int16_t readWarp;  // the warp of every reader in this interval, -1 for several warps
    std::uint8_t written, manyReaders;
};
Shadow* shadow = nullptr;

// A return address in the program's code as 32 bits, and back.
std::uint32_t codeOffset(const void* returnAddress) {
    return static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(returnAddress) -
                                      reinterpret_cast<std::uintptr_t>(__executable_start));
}
std::uintptr_t codeAddress(std::uint32_t offset) {
    return offset ? reinterpret_cast<std::uintptr_t>(__executable_start) + offset : 0;
}

Shadow& shadowOf(const char* p) {
    if (!shadow) {
        const std::size_t n = kArenaBytes;
        void* m = mmap(nullptr, n * sizeof(Shadow), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
        if (m == MAP_FAILED) {
            std::fprintf(stderr, "emulator: cannot map the shared-memory shadow\n");
            std::exit(1);
        }
        shadow = static_cast<Shadow*>(m);
    }
    return shadow[p - arena];
}

std::string sharedName(const char* p) {
    if (p < arena + kDynamicSharedLimit) return "dynamic shared memory, byte " + std::to_string(p - arena);
    const SharedVariable* v = sharedVariableAt(p);
    if (!v) return "shared memory at " + hex(p);
    return "shared variable '" + v->name + "', byte " + std::to_string(p - v->start);
}

bool orderedInWarp(const Launch& l, int earlier, std::uint32_t warpSyncThen, int now) {
    return earlier / 32 == now / 32 && l.warpSyncs[now / 32] != warpSyncThen;
}

// A GPU refuses a kernel with more than 48 KB of static shared memory (nvcc
// at compile time): here the first block adds up the variables it touches.
void countStaticShared(Launch& l, const char* p) {
    const SharedVariable* v = sharedVariableAt(p);
    if (!v || std::find(l.sharedVariables.begin(), l.sharedVariables.end(), v) != l.sharedVariables.end()) return;
    l.sharedVariables.push_back(v);
    l.staticShared += v->bytes;
    if (l.staticShared > kStaticSharedLimit)
        faultHere(std::to_string(l.staticShared) + " bytes of static shared memory, more than a block's 48 KB (" +
                  std::to_string(kStaticSharedLimit) + "), used");
}

// A read of shared memory no thread of the block has written is no error:
// a GPU reads whatever is there (a kernel may read a slot it then leaves
// unused); here that is the poison each block starts with (runBlock), never
// zero.
void checkShared(const char* p, std::size_t bytes, bool write, const void* from) {
    Launch& l = *active;
    const int t = l.current;
    const std::uint32_t ws = l.warpSyncs[t / 32];
    const std::uint32_t code = codeOffset(from);
    for (std::size_t i = 0; i < bytes; ++i) {
        Shadow& s = shadowOf(p + i);
        if (s.generation != blockGeneration) {
            s = Shadow{};
            s.generation = blockGeneration;
            if (l.firstBlock) countStaticShared(l, p + i);
        }
        if (!write) {
            if (s.writeInterval == interval && s.writer != t && !orderedInWarp(l, s.writer, s.writeWarpSync, t))
                faultHere("shared-memory race on " + sharedName(p + i) + ": written by " + where(l, s.writer) +
                          placeOf(codeAddress(s.writeCode)) + " and read, with no barrier between,");
            if (s.readInterval != interval) {
                s.readInterval = interval;
                s.reader = static_cast<std::uint16_t>(t);
                s.manyReaders = 0;
                s.readWarp = static_cast<std::int16_t>(t / 32);
                s.readWarpSync = ws;
                s.readCode = code;
            } else {
                if (s.reader != t) s.manyReaders = 1;
                if (s.readWarp != t / 32) s.readWarp = -1;
                s.readWarpSync = std::max(s.readWarpSync, ws);
            }
        } else {
            if (s.written && s.writeInterval == interval && s.writer != t &&
                !orderedInWarp(l, s.writer, s.writeWarpSync, t))
                faultHere("shared-memory race on " + sharedName(p + i) + ": written by " + where(l, s.writer) +
                          placeOf(codeAddress(s.writeCode)) + " and written again, with no barrier between,");
            if (s.readInterval == interval && (s.manyReaders || s.reader != t) &&
                !(s.readWarp == t / 32 && l.warpSyncs[t / 32] > s.readWarpSync))
                faultHere("shared-memory race on " + sharedName(p + i) + ": read by " +
                          (s.manyReaders ? "several threads (the last" + placeOf(codeAddress(s.readCode)) + ")"
                                         : where(l, s.reader) + placeOf(codeAddress(s.readCode))) +
                          " and written, with no barrier between,");
            s.written = 1;
            s.writeInterval = interval;
            s.writer = static_cast<std::uint16_t>(t);
            s.writeWarpSync = ws;
            s.writeCode = code;
        }
    }
}

const Allocation* allocationNear(std::uintptr_t a) {
    auto it = allocations.upper_bound(a);
    const Allocation* before = it == allocations.begin() ? nullptr : &std::prev(it)->second;
    const Allocation* after = it == allocations.end() ? nullptr : &it->second;
    if (before && a < reinterpret_cast<std::uintptr_t>(before->start) + before->bytes + 4096) return before;
    if (after && reinterpret_cast<std::uintptr_t>(after->start) - a < 4096) return after;
    return nullptr;
}

const Allocation* lastHit = nullptr;

// `from`: the return address of the instrumentation's call, in the kernel's code.
void access(const void* address, std::size_t bytes, bool write, const void* from) {
    if (!inKernel) return;
    Unchecked unchecked;
    const char* p = static_cast<const char*>(address);
    if (inShared(p)) {
        checkShared(p, bytes, write, from);
        return;
    }
    char* stack = stacks + static_cast<std::size_t>(active->current) * kStackBytes;
    if (inRange(p, stack, stack + kStackBytes)) return;
    if (inRange(p, __executable_start, _end)) return;  // the program's own data (__device__ variables)
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    auto inside = [&](const Allocation* m) {
        return m && a >= reinterpret_cast<std::uintptr_t>(m->start) &&
               a + bytes <= reinterpret_cast<std::uintptr_t>(m->start) + m->bytes;
    };
    if (inside(lastHit)) return;
    auto it = allocations.upper_bound(a);
    if (it != allocations.begin() && inside(&std::prev(it)->second)) {
        lastHit = &std::prev(it)->second;
        return;
    }
    std::ostringstream os;
    os << (write ? "write" : "read") << " of " << bytes << " bytes at " << hex(p);
    if (const Allocation* m = allocationNear(a)) {
        const long long off = static_cast<long long>(a - reinterpret_cast<std::uintptr_t>(m->start));
        os << ", out of bounds: " << (off < 0 ? std::to_string(-off) + " bytes before" : std::to_string(off - static_cast<long long>(m->bytes)) + " bytes past the end of")
           << " a " << m->bytes << "-byte " << (m->device ? "device allocation" : "host allocation") << ",";
    } else {
        os << ", which is not device memory (a host pointer? memory already freed?),";
    }
    faultHere(os.str());
}

}  // namespace

// ================================================================ the emulator's API

void run(const char* name, const Config& config, Body body, const void* closure, std::size_t bytes) {
    if (stickyError != cudaSuccess) return;
    if (active) {
        std::fprintf(stderr, "emulator: a kernel launched %s from device code (dynamic parallelism is not emulated)\n",
                     name);
        std::exit(1);
    }
    const dim3 g = config.grid, b = config.block;
    const unsigned long long threads = 1ull * b.x * b.y * b.z;
    if (threads == 0 || threads > kMaxThreads || b.z > 64 || g.x == 0 || g.y == 0 || g.z == 0 || g.x > 2147483647u ||
        g.y > 65535 || g.z > 65535 || config.shared > kDynamicSharedLimit || bytes > kParamBytes) {
        lastError = cudaErrorInvalidConfiguration;
        return;
    }
    if (trace.on) {
        trace.names.push_back(name);
        trace.blocks.push_back(1ll * g.x * g.y * g.z);
        trace.threads.push_back(static_cast<int>(threads));
    }
    ensureStacks();
    Launch l;
    l.name = name;
    l.grid = g;
    l.block = b;
    l.threads = static_cast<int>(threads);
    l.body = body;
    l.closure = closure;
    l.closureBytes = bytes;
    l.dynamicShared = config.shared;
    ensureArena();
    l.thread.resize(threads);
    active = &l;
    ::blockDim = b;
    ::gridDim = g;
    deviceMemoryOpen(true);
    for (unsigned z = 0; z < g.z && !l.aborted; ++z)
        for (unsigned y = 0; y < g.y && !l.aborted; ++y)
            for (unsigned x = 0; x < g.x && !l.aborted; ++x) {
                l.blockIndex = {x, y, z};
                ::blockIdx = l.blockIndex;
                runBlock(l);
                l.firstBlock = false;
            }
    deviceMemoryOpen(false);
    active = nullptr;
    inKernel = false;
}

const char* kernelName(const void* function) {
    static std::map<const void*, std::string> names;
    auto it = names.find(function);
    if (it == names.end()) {
        std::string name = symbolAt(function);
        it = names.emplace(function, name.empty() ? "(a kernel)" : name).first;
    }
    return it->second.c_str();
}

void* dynamicShared() {
    ensureArena();
    return arena;
}

void* sharedVariable(std::size_t bytes, std::size_t alignment, const char* name) {
    Unchecked unchecked;
    ensureArena();
    alignment = std::max<std::size_t>(alignment, 16);
    const std::size_t start = (arenaUsed + alignment - 1) / alignment * alignment;
    if (start + bytes > kArenaBytes) {
        std::fprintf(stderr, "emulator: the program's __shared__ variables exceed %zu MB\n", kArenaBytes >> 20);
        std::exit(1);
    }
    arenaUsed = start + bytes;
    std::memset(arena + start, 0xA5, bytes);  // the poison, never zero
    sharedVariables.push_back({arena + start, bytes, name});
    return arena + start;
}

namespace {
int blockBarrier(Barrier kind, int predicate) {
    if (!active) {
        std::fprintf(stderr, "emulator: __syncthreads called outside a kernel\n");
        std::exit(1);
    }
    Thread& th = me();
    th.state = State::AtBarrier;
    th.barrier = kind;
    th.predicate = predicate;
    yieldToScheduler();
    return me().result;
}
unsigned long long warpOperation(int op, unsigned mask, unsigned long long value, int predicate) {
    if (!active) {
        std::fprintf(stderr, "emulator: a warp operation called outside a kernel\n");
        std::exit(1);
    }
    const int lane = active->current % 32;
    if (!((mask >> lane) & 1u)) {
        Unchecked unchecked;
        faultHere("a warp operation whose mask (" + hex(reinterpret_cast<void*>(static_cast<std::uintptr_t>(mask))) +
                  ") leaves out the calling lane");
    }
    Thread& th = me();
    th.state = State::AtWarp;
    th.warpOp = op;
    th.mask = mask;
    th.value = value;
    th.predicate = predicate;
    yieldToScheduler();
    return me().warpResult;
}
}  // namespace

void syncthreads() { blockBarrier(Barrier::Plain, 0); }
int syncthreadsCount(int p) { return blockBarrier(Barrier::Count, p != 0); }
int syncthreadsAnd(int p) { return blockBarrier(Barrier::And, p != 0); }
int syncthreadsOr(int p) { return blockBarrier(Barrier::Or, p != 0); }
void syncwarp(unsigned mask) { warpOperation(0, mask, 0, 0); }
unsigned ballot(unsigned mask, int p) { return static_cast<unsigned>(warpOperation(1, mask, 0, p != 0)); }
unsigned activemask() {
    const Launch& l = *active;
    const int first = l.current / 32 * 32;
    unsigned m = 0;
    for (int t = first; t < std::min(l.threads, first + 32); ++t)
        if (l.thread[t].state != State::Done) m |= 1u << (t - first);
    return m;
}
unsigned long long shuffle(unsigned mask, unsigned long long value, int kind, int lane, int width) {
    if (width <= 0 || width > 32 || (width & (width - 1))) {
        Unchecked unchecked;
        faultHere("a shuffle with width " + std::to_string(width) + " (a power of two up to 32)");
    }
    Thread& th = me();
    th.shuffleKind = kind;
    th.shuffleLane = lane;
    th.shuffleWidth = width;
    return warpOperation(2, mask, value, 0);
}

void checkAtomic(const void* address, std::size_t bytes) {
    if (!inKernel) return;
    const char* p = static_cast<const char*>(address);
    if (inShared(p)) return;
    access(address, bytes, true, __builtin_return_address(0));
}

void recordLaunches(bool on) {
    trace.on = on;
    if (on) {
        trace.names.clear();
        trace.blocks.clear();
        trace.threads.clear();
        trace.copies.clear();
    }
}
std::size_t launchCount() { return trace.names.size(); }
const char* launchName(std::size_t i) { return trace.names[i].c_str(); }
long long launchBlocks(std::size_t i) { return trace.blocks[i]; }
int launchThreads(std::size_t i) { return trace.threads[i]; }
std::size_t hostCopyCount() { return trace.copies.size(); }
const char* hostCopy(std::size_t i) { return trace.copies[i].c_str(); }
std::size_t hostMemoryCallCount() { return trace.memoryCalls.size(); }
const char* hostMemoryCall(std::size_t i) { return trace.memoryCalls[i].c_str(); }
const char* faultMessage() { return lastFault.c_str(); }
std::size_t faultCount() { return faults; }

void clearFault() {
    stickyError = cudaSuccess;
    lastError = cudaSuccess;
    lastFault.clear();
}

CaseContext::CaseContext(const char* text) { caseContext = text ? text : ""; }
CaseContext::~CaseContext() { caseContext.clear(); }

const char* describe() {
    static const std::string text = "EMULATED on the CPU: correctness only; a GPU may still disagree (warp timing, "
                                    "memory ordering, speed); " + orderSetting().text;
    return text.c_str();
}

}  // namespace emu

// ================================================================ the compiler's calls
// -fsanitize=thread makes the compiler call these before each load and store
// of the kernel files.
extern "C" {
void __tsan_init() {}
void __tsan_func_entry(void*) {}
void __tsan_func_exit() {}
#define EMU_TSAN_HERE __builtin_return_address(0)
#define EMU_TSAN_SIZE(n)                                                                          \
    void __tsan_read##n(void* p) { emu::access(p, n, false, EMU_TSAN_HERE); }                     \
    void __tsan_write##n(void* p) { emu::access(p, n, true, EMU_TSAN_HERE); }                     \
    void __tsan_unaligned_read##n(void* p) { emu::access(p, n, false, EMU_TSAN_HERE); }           \
    void __tsan_unaligned_write##n(void* p) { emu::access(p, n, true, EMU_TSAN_HERE); }           \
    void __tsan_volatile_read##n(void* p) { emu::access(p, n, false, EMU_TSAN_HERE); }            \
    void __tsan_volatile_write##n(void* p) { emu::access(p, n, true, EMU_TSAN_HERE); }
EMU_TSAN_SIZE(1)
EMU_TSAN_SIZE(2)
EMU_TSAN_SIZE(4)
EMU_TSAN_SIZE(8)
EMU_TSAN_SIZE(16)
#undef EMU_TSAN_SIZE
void __tsan_read_range(void* p, unsigned long n) { emu::access(p, n, false, EMU_TSAN_HERE); }
void __tsan_write_range(void* p, unsigned long n) { emu::access(p, n, true, EMU_TSAN_HERE); }
#undef EMU_TSAN_HERE
void __tsan_vptr_update(void**, void*) {}
void __tsan_vptr_read(void**) {}

// Atomics in instrumented code (a function-local static's guard, std::atomic):
// done here, unchecked.
#define EMU_TSAN_ATOMIC(bits, T)                                                                   \
    T __tsan_atomic##bits##_load(const volatile T* a, int) { return __atomic_load_n(a, __ATOMIC_SEQ_CST); } \
    void __tsan_atomic##bits##_store(volatile T* a, T v, int) { __atomic_store_n(a, v, __ATOMIC_SEQ_CST); } \
    T __tsan_atomic##bits##_exchange(volatile T* a, T v, int) { return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST); } \
    T __tsan_atomic##bits##_fetch_add(volatile T* a, T v, int) { return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST); } \
    T __tsan_atomic##bits##_fetch_sub(volatile T* a, T v, int) { return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST); } \
    T __tsan_atomic##bits##_fetch_and(volatile T* a, T v, int) { return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST); } \
    T __tsan_atomic##bits##_fetch_or(volatile T* a, T v, int) { return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST); } \
    T __tsan_atomic##bits##_fetch_xor(volatile T* a, T v, int) { return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST); } \
    T __tsan_atomic##bits##_fetch_nand(volatile T* a, T v, int) { return __atomic_fetch_nand(a, v, __ATOMIC_SEQ_CST); } \
    int __tsan_atomic##bits##_compare_exchange_strong(volatile T* a, T* c, T v, int, int) {       \
        return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);     \
    }                                                                                              \
    int __tsan_atomic##bits##_compare_exchange_weak(volatile T* a, T* c, T v, int, int) {         \
        return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);     \
    }                                                                                              \
    T __tsan_atomic##bits##_compare_exchange_val(volatile T* a, T c, T v, int, int) {             \
        __atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);           \
        return c;                                                                                  \
    }
EMU_TSAN_ATOMIC(8, std::uint8_t)
EMU_TSAN_ATOMIC(16, std::uint16_t)
EMU_TSAN_ATOMIC(32, std::uint32_t)
EMU_TSAN_ATOMIC(64, std::uint64_t)
#undef EMU_TSAN_ATOMIC
void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
void __tsan_atomic_signal_fence(int) {}
}

// ================================================================ 4. the runtime API

namespace emu {
namespace {

// Device memory is out of the host's reach, as on a GPU: its pages are
// readable only while the emulator itself touches them (a launch, a copy),
// so host code that dereferences a device pointer crashes here as there.
void deviceMemoryOpen(bool open) {
    for (auto& [start, m] : allocations)
        if (m.device) mprotect(m.mapping, m.mapped, open ? PROT_READ | PROT_WRITE : PROT_NONE);
}
struct Open {
    Open() { deviceMemoryOpen(true); }
    ~Open() { deviceMemoryOpen(false); }
};

cudaError_t fail(cudaError_t err) {
    lastError = err;
    return err;
}

cudaError_t allocate(void** ptr, std::size_t bytes, bool device, const char* call) {
    if (stickyError != cudaSuccess) return stickyError;
    if (!ptr) return fail(cudaErrorInvalidValue);
    if (!device) hostMemoryCallMade(call);
    *ptr = nullptr;
    if (bytes == 0) return cudaSuccess;
    if (device && allocatedBytes + bytes > memoryLimit()) return fail(cudaErrorMemoryAllocation);
    const std::size_t page = 4096, mapped = (bytes + page - 1) / page * page + page;  // a guard page after
    void* m = mmap(nullptr, mapped, device ? PROT_NONE : PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return fail(cudaErrorMemoryAllocation);
    char* start = static_cast<char*>(m);
    if (!device) mprotect(start + mapped - page, page, PROT_NONE);
    allocations[reinterpret_cast<std::uintptr_t>(start)] = {start, bytes, start, mapped - page, device};
    if (device) allocatedBytes += bytes;
    *ptr = start;
    return cudaSuccess;
}

// After a fault it still frees (and returns the error), so that the memory
// of a test case that faulted is back when clearFault starts the next.
cudaError_t release(void* ptr, bool device) {
    if (!ptr) return stickyError;
    auto it = allocations.find(reinterpret_cast<std::uintptr_t>(ptr));
    if (it == allocations.end() || it->second.device != device)
        return stickyError != cudaSuccess ? stickyError : fail(cudaErrorInvalidDevicePointer);
    if (lastHit == &it->second) lastHit = nullptr;
    munmap(it->second.mapping, it->second.mapped + 4096);
    if (device) allocatedBytes -= it->second.bytes;
    allocations.erase(it);
    return stickyError;
}

// The allocation holding all of [p, p + bytes), if any.
const Allocation* holding(const void* p, std::size_t bytes) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    auto it = allocations.upper_bound(a);
    if (it == allocations.begin()) return nullptr;
    const Allocation& m = std::prev(it)->second;
    const auto s = reinterpret_cast<std::uintptr_t>(m.start);
    return a >= s && a + bytes <= s + m.bytes ? &m : nullptr;
}

const char* const kKindNames[] = {"host-to-host", "host-to-device", "device-to-host", "device-to-device", "default"};

cudaError_t copy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
    if (stickyError != cudaSuccess) return stickyError;
    if (bytes == 0) return cudaSuccess;
    if (!dst || !src || kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault) return fail(cudaErrorInvalidValue);
    const Allocation* d = holding(dst, bytes);
    const Allocation* s = holding(src, bytes);
    const bool dDevice = d && d->device, sDevice = s && s->device;
    if (kind == cudaMemcpyDefault)
        kind = sDevice ? (dDevice ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost)
                       : (dDevice ? cudaMemcpyHostToDevice : cudaMemcpyHostToHost);
    // a device side must lie inside one device allocation
    const bool dWanted = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    const bool sWanted = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    if ((dWanted && !d) || (sWanted && !s)) return fail(cudaErrorInvalidValue);
    if (trace.on && (kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToHost))
        trace.copies.push_back(std::string(kKindNames[kind]) + " copy of " + std::to_string(bytes) + " bytes");
    Open open;
    std::memmove(dst, src, bytes);
    return cudaSuccess;
}

struct Event {
    std::chrono::steady_clock::time_point at;
    bool recorded = false;
};

cudaDeviceProp properties() {
    cudaDeviceProp p{};
    std::snprintf(p.name, sizeof p.name, "EMULATED on the CPU (no GPU)");
    p.totalGlobalMem = memoryLimit();
    p.sharedMemPerBlock = kStaticSharedLimit;
    p.sharedMemPerBlockOptin = kStaticSharedLimit;
    p.sharedMemPerMultiprocessor = 2 * kStaticSharedLimit;
    p.regsPerBlock = 65536;
    p.warpSize = 32;
    p.maxThreadsPerBlock = kMaxThreads;
    p.maxThreadsDim[0] = p.maxThreadsDim[1] = kMaxThreads;
    p.maxThreadsDim[2] = 64;
    p.maxGridSize[0] = 2147483647;
    p.maxGridSize[1] = p.maxGridSize[2] = 65535;
    p.clockRate = 1000000;
    p.major = 0;  // no compute capability: nothing real runs here
    p.minor = 0;
    p.multiProcessorCount = 1;
    p.maxThreadsPerMultiProcessor = 2048;
    p.maxBlocksPerMultiProcessor = 32;
    p.canMapHostMemory = 1;
    return p;
}

}  // namespace

}  // namespace emu

using emu::fail;

long long clock64() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

cudaError_t cudaGetDeviceCount(int* count) {
    *count = 1;
    return cudaSuccess;
}
cudaError_t cudaGetDevice(int* device) {
    *device = 0;
    return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : fail(cudaErrorInvalidValue); }
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
    if (device != 0 || !prop) return fail(cudaErrorInvalidValue);
    *prop = emu::properties();
    return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize() { return emu::stickyError; }
cudaError_t cudaDeviceReset() { return cudaSuccess; }
cudaError_t cudaGetLastError() {
    if (emu::stickyError != cudaSuccess) return emu::stickyError;
    const cudaError_t e = emu::lastError;
    emu::lastError = cudaSuccess;
    return e;
}
cudaError_t cudaPeekAtLastError() { return emu::stickyError != cudaSuccess ? emu::stickyError : emu::lastError; }

const char* cudaGetErrorName(cudaError_t err) {
    switch (err) {
        case cudaSuccess: return "cudaSuccess";
        case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
        case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
        case cudaErrorInitializationError: return "cudaErrorInitializationError";
        case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
        case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
        case cudaErrorInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
        case cudaErrorInvalidMemcpyDirection: return "cudaErrorInvalidMemcpyDirection";
        case cudaErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
        case cudaErrorNoDevice: return "cudaErrorNoDevice";
        case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
        case cudaErrorLaunchOutOfResources: return "cudaErrorLaunchOutOfResources";
        case cudaErrorNotSupported: return "cudaErrorNotSupported";
        default: return "cudaErrorUnknown";
    }
}
const char* cudaGetErrorString(cudaError_t err) {
    switch (err) {
        case cudaSuccess: return "no error";
        case cudaErrorInvalidValue: return "invalid argument";
        case cudaErrorMemoryAllocation: return "out of memory (emulated device; EMU_MEMORY_MB sets its size)";
        case cudaErrorInvalidConfiguration: return "invalid configuration argument";
        case cudaErrorInvalidDevicePointer: return "invalid device pointer";
        case cudaErrorIllegalAddress: return "an illegal memory access was encountered (see the EMULATED GPU FAULT line)";
        default: return cudaGetErrorName(err);
    }
}
cudaError_t cudaMemGetInfo(std::size_t* free, std::size_t* total) {
    *total = emu::memoryLimit();
    *free = emu::memoryLimit() - emu::allocatedBytes;
    return emu::stickyError;
}

cudaError_t cudaMalloc(void** ptr, std::size_t bytes) { return emu::allocate(ptr, bytes, true, "cudaMalloc"); }
cudaError_t cudaFree(void* ptr) { return emu::release(ptr, true); }
cudaError_t cudaMallocAsync(void** ptr, std::size_t bytes, cudaStream_t) { return cudaMalloc(ptr, bytes); }
cudaError_t cudaFreeAsync(void* ptr, cudaStream_t) { return cudaFree(ptr); }
cudaError_t cudaMallocManaged(void** ptr, std::size_t bytes, unsigned) {
    return emu::allocate(ptr, bytes, false, "cudaMallocManaged");
}
cudaError_t cudaMallocHost(void** ptr, std::size_t bytes) { return emu::allocate(ptr, bytes, false, "cudaMallocHost"); }
cudaError_t cudaHostAlloc(void** ptr, std::size_t bytes, unsigned) {
    return emu::allocate(ptr, bytes, false, "cudaHostAlloc");
}
cudaError_t cudaFreeHost(void* ptr) { return emu::release(ptr, false); }
cudaError_t cudaHostRegister(void* ptr, std::size_t bytes, unsigned) {
    emu::hostMemoryCallMade("cudaHostRegister");
    if (!ptr || bytes == 0) return fail(cudaErrorInvalidValue);
    emu::allocations[reinterpret_cast<std::uintptr_t>(ptr)] = {static_cast<char*>(ptr), bytes, nullptr, 0, false};
    return cudaSuccess;
}
cudaError_t cudaHostUnregister(void* ptr) {
    auto it = emu::allocations.find(reinterpret_cast<std::uintptr_t>(ptr));
    if (it == emu::allocations.end() || it->second.mapping) return fail(cudaErrorInvalidValue);
    if (emu::lastHit == &it->second) emu::lastHit = nullptr;
    emu::allocations.erase(it);
    return cudaSuccess;
}
cudaError_t cudaHostGetDevicePointer(void** device, void* host, unsigned) {
    emu::hostMemoryCallMade("cudaHostGetDevicePointer");
    *device = host;
    return cudaSuccess;
}
cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
    return emu::copy(dst, src, bytes, kind);
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind, cudaStream_t) {
    return emu::copy(dst, src, bytes, kind);
}
cudaError_t cudaMemset(void* dst, int value, std::size_t bytes) {
    if (emu::stickyError != cudaSuccess) return emu::stickyError;
    if (bytes == 0) return cudaSuccess;
    if (!emu::holding(dst, bytes)) return fail(cudaErrorInvalidValue);
    emu::Open open;
    std::memset(dst, value, bytes);
    return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* dst, int value, std::size_t bytes, cudaStream_t) {
    return cudaMemset(dst, value, bytes);
}
cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int) {
    *pool = nullptr;
    return cudaSuccess;
}
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t, cudaMemPoolAttr, void*) { return cudaSuccess; }

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
    *stream = nullptr;
    return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return emu::stickyError; }
cudaError_t cudaEventCreate(cudaEvent_t* event) {
    *event = reinterpret_cast<cudaEvent_t>(new emu::Event);
    return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {
    delete reinterpret_cast<emu::Event*>(event);
    return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t) {
    auto* e = reinterpret_cast<emu::Event*>(event);
    e->at = std::chrono::steady_clock::now();
    e->recorded = true;
    return emu::stickyError;
}
cudaError_t cudaEventSynchronize(cudaEvent_t) { return emu::stickyError; }
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
    const auto* a = reinterpret_cast<emu::Event*>(start);
    const auto* b = reinterpret_cast<emu::Event*>(end);
    if (!a->recorded || !b->recorded) return fail(cudaErrorInvalidValue);
    *ms = std::chrono::duration<float, std::milli>(b->at - a->at).count();
    return cudaSuccess;
}
