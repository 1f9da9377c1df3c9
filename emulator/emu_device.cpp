// The emulated device: a launch runs block after block, each CUDA thread a
// fiber (ucontext) on a stack of its own, switched by the scheduler here at
// every barrier and warp operation, in the order EMU_ORDER asks; and the
// shared memory the blocks use.
#include "emu_internal.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <random>

// ---------------------------------------------------------------- built-ins (emu_kernel.hpp)
uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;

long long clock64() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

namespace emu {

// ---------------------------------------------------------------- state (emu_internal.hpp)
Launch* active = nullptr;
bool inKernel = false;
ucontext_t scheduler;
char* stacks = nullptr;

std::uint32_t blockGeneration = 0;
bool sparse = false;
std::uint32_t interval = 0;

// ---------------------------------------------------------------- shared memory
char* arena = nullptr;
std::size_t arenaUsed = kDynamicSharedLimit;

namespace {

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

}  // namespace

const SharedVariable* sharedVariableAt(const char* p) {
    auto it = std::upper_bound(sharedVariables.begin(), sharedVariables.end(), p,
                               [](const char* x, const SharedVariable& v) { return x < v.start; });
    if (it == sharedVariables.begin()) return nullptr;
    --it;
    return p < it->start + it->bytes ? &*it : nullptr;
}

const SharedVariable* sharedVariableBefore(const char* p) {
    auto it = std::upper_bound(sharedVariables.begin(), sharedVariables.end(), p,
                               [](const char* x, const SharedVariable& v) { return x < v.start; });
    return it == sharedVariables.begin() ? nullptr : &*std::prev(it);
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
    // A gap after each variable, which no variable takes: an access that runs
    // past a variable's end lands there, and is reported (emu_memcheck.cpp).
    arenaUsed = start + bytes + kSharedGap;
    std::memset(arena + start, 0xA5, bytes);  // the poison, never zero
    sharedVariables.push_back({arena + start, bytes, name});
    return arena + start;
}

namespace {

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

// ---------------------------------------------------------------- fibers
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

}  // namespace

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

namespace {

// ---------------------------------------------------------------- blocks
// A block's start: its shared memory poisoned, a fresh fiber per thread, each
// with its own copy of the kernel's parameters at the top of its stack.
void startBlock(Launch& l) {
    forgetWrites();
    ++blockGeneration;
    ++interval;
    // Shared memory starts as the poison (0xA5 bytes), never zero: the
    // launch's dynamic part, and the variables its first block used.
    std::memset(arena, 0xA5, l.dynamicShared);
    for (const SharedVariable* v : l.sharedVariables) std::memset(const_cast<char*>(v->start), 0xA5, v->bytes);
    std::fill(std::begin(l.warpSyncs), std::end(l.warpSyncs), 0u);
    if (profileOn) profileBlockStart(l);
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
}

// Runs the ready threads, each up to its next barrier or warp operation (or
// its end), then releases what waits, until the block is done or faults.
void runBlock(Launch& l) {
    startBlock(l);
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
            // a fault's setcontext(&scheduler) returns here too, through resume()
            resume(l, t);
            if (l.aborted || !settleWrites()) return;
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

}  // namespace

// ---------------------------------------------------------------- launches
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
    const bool profiled = profileOn;  // the whole launch or none of it
    if (profiled) profileLaunchStart(l);
    // Blocks in x, then y, then z order: every one, or under a SparseRun the
    // few sparseBlocks names.
    const long long all = 1ll * g.x * g.y * g.z;
    const std::vector<long long> picked = sparse ? sparseBlocks(all) : std::vector<long long>{};
    for (long long i = 0, n = sparse ? static_cast<long long>(picked.size()) : all; i < n && !l.aborted; ++i) {
        const long long b = sparse ? picked[static_cast<std::size_t>(i)] : i;
        l.blockIndex = {static_cast<unsigned>(b % g.x), static_cast<unsigned>(b / g.x % g.y),
                        static_cast<unsigned>(b / g.x / g.y)};
        ::blockIdx = l.blockIndex;
        runBlock(l);
        if (profiled) profileBlockEnd(l);
        l.firstBlock = false;
    }
    if (profiled) profileLaunchEnd(l);
    deviceMemoryOpen(false);
    active = nullptr;
    inKernel = false;
}

std::vector<long long> sparseBlocks(long long blocks) {
    std::vector<long long> b = {0, blocks / 2, blocks - 2, blocks - 1};
    b.erase(std::remove_if(b.begin(), b.end(), [&](long long x) { return x < 0 || x >= blocks; }), b.end());
    std::sort(b.begin(), b.end());
    b.erase(std::unique(b.begin(), b.end()), b.end());
    return b;
}

SparseRun::SparseRun() { sparse = true; }
SparseRun::~SparseRun() { sparse = false; }

const char* kernelName(const void* function) {
    static std::map<const void*, std::string> names;
    auto it = names.find(function);
    if (it == names.end()) {
        std::string name = symbolAt(function);
        it = names.emplace(function, name.empty() ? "(a kernel)" : name).first;
    }
    return it->second.c_str();
}

const char* describe() {
    static const std::string text = "EMULATED on the CPU: correctness only; a GPU may still disagree (warp timing, "
                                    "memory ordering, speed); " + orderSetting().text;
    return text.c_str();
}

}  // namespace emu
