// Barriers and warp operations: __syncthreads and its counting variants,
// __syncwarp, votes and shuffles. A thread that calls one waits at it (its
// fiber back to the scheduler); the scheduler releases the warp or the block
// when every thread it names has arrived, and reports a fault when they
// never can.
#include "emu_internal.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace emu {
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
        faultHere(Fault::Warp, "a warp operation whose mask (" +
                                   hex(reinterpret_cast<void*>(static_cast<std::uintptr_t>(mask))) +
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

// The lane a shuffle of `lane` reads, as CUDA picks it: its own where the
// source falls outside its segment of `width` lanes.
int shuffleSource(const Thread& th, int lane) {
    const int width = th.shuffleWidth, segment = lane & ~(width - 1);
    int src = lane;
    switch (th.shuffleKind) {
        case kShflIdx: src = segment + (th.shuffleLane & (width - 1)); break;
        case kShflUp: src = (lane - segment) >= th.shuffleLane ? lane - th.shuffleLane : lane; break;
        case kShflDown: src = (lane - segment) + th.shuffleLane < width ? lane + th.shuffleLane : lane; break;
        case kShflXor: src = lane ^ th.shuffleLane; if ((src & ~(width - 1)) != segment) src = lane; break;
    }
    return src;
}

}  // namespace

// ---------------------------------------------------------------- from the scheduler
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
                reportFault(Fault::Warp,
                            "a warp operation names lane " + std::to_string(t - first) + ", which has exited, by " +
                                where(l, waiting),
                            stackOf(l, waiting));
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
                const int src = shuffleSource(th, t - first), from = first + src;
                th.warpResult = (from < last && ((mask >> src) & 1u)) ? l.thread[from].value : th.value;
            }
            th.state = State::Ready;
        }
        ++l.warpSyncs[w];
        if (profileOn) profileWarpMet(l, w, mask);
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
        reportFault(Fault::Barrier,
                    "deadlock: " + threadList(elsewhere, l, true) + " wait at warp operations that cannot complete",
                    stackOf(l, elsewhere[0]), false);
        return false;
    }
    if (!elsewhere.empty()) {
        reportFault(Fault::Barrier,
                    "deadlock: " + threadList(at, l, true) + " wait at __syncthreads while " +
                        threadList(elsewhere, l, true) + " wait at a warp operation that cannot complete",
                    stackOf(l, at[0]), false);
        return false;
    }
    if (!done.empty()) {
        reportFault(Fault::Barrier,
                    "a barrier some threads never reach: " + threadList(at, l, true) + " wait at __syncthreads, but " +
                        threadList(done, l) + " returned without reaching it",
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
    if (profileOn) profileBarrier(l);
    return true;
}

// ---------------------------------------------------------------- the calls (emu_kernel.hpp)
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
        faultHere(Fault::Warp, "a shuffle with width " + std::to_string(width) + " (a power of two up to 32)");
    }
    Thread& th = me();
    th.shuffleKind = kind;
    th.shuffleLane = lane;
    th.shuffleWidth = width;
    return warpOperation(2, mask, value, 0);
}

}  // namespace emu
