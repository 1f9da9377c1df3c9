// The graded process of a judged test case (serve.hpp): maps the arrays the
// judge sends, calls the student's function under the launch trace, replies
// with its result or error and the trace, and exits when the judge says so
// (or goes away). It holds no input but what a call's arguments point to, no
// seed and no expected answer; what it replies decides nothing but the
// trace's checks, which the judge runs on the reply.
#include "serve.hpp"

#include "shared_memory.hpp"

#include "../trace.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <cstdlib>
#include <exception>

#include <unistd.h>

namespace {

using namespace lab::judge;

// The arrays the call names for the first time, mapped; those the judge
// released, unmapped.
void updateMappings(Reader& r, const std::vector<int>& fds, Mapped& m) {
    const auto released = r.get<std::uint32_t>();
    if (released > 100000) throw lab::Error("the judge released too many arrays at once");
    for (std::uint32_t i = 0; i < released; ++i) {
        const auto it = m.regions.find(r.get<std::uint32_t>());
        if (it == m.regions.end()) continue;
        unmapShared(it->second.device, it->second.bytes);
        m.regions.erase(it);
    }
    const auto fresh = r.get<std::uint32_t>();
    if (fresh != fds.size()) throw lab::Error("the judge sent arrays without their descriptors");
    for (std::uint32_t i = 0; i < fresh; ++i) {
        const auto id = r.get<std::uint32_t>();
        const auto bytes = r.get<std::uint64_t>();
        m.regions[id] = Mapped::Region{static_cast<char*>(mapShared(fds[i], bytes)), bytes};
    }
}

std::string reply(const std::string& status, const std::string& value, lab::test::TraceLog log) {
    // Launches alike folded into one with their count (what checkTrace looks
    // at: names, shapes, how many): a sort of many rounds launches thousands
    // alike, too many for a message. The first 100 kinds, the rest counted in the last.
    std::vector<lab::test::KernelLaunch> distinct;
    for (const lab::test::KernelLaunch& k : log.kernels) {
        const auto same = std::find_if(distinct.begin(), distinct.end(), [&](const lab::test::KernelLaunch& d) {
            return d.fullName == k.fullName && d.blocks == k.blocks && d.threads == k.threads;
        });
        if (same != distinct.end()) same->count += k.count;
        else if (distinct.size() < 100) distinct.push_back(k);
        else distinct.back().count += k.count;
    }
    log.kernels = std::move(distinct);
    Writer w;
    w.text(status);
    w.text(value);
    putTrace(w, log, lab::test::takeTraceViolations());
    return w.str();
}

int serveCalls(int fd) {
    const Calls calls = partCalls();
    Mapped mapped;
    for (;;) {
        // Between calls the process runs only this file's code: the watch on
        // CUDA calls leaves the main thread alone (the mapping's driver calls).
        lab::test::traceTestEnded();
        std::vector<int> fds;
        const std::string message = receiveMessage(fd, &fds, kMessageCap);
        if (message.empty()) return 0;  // the judge has gone
        Reader r(message);
        std::string value, status = "ok";
        lab::test::TraceLog log;
        try {
            if (r.text(16) == "exit") return 0;
            const std::string name = r.text(256);
            updateMappings(r, fds, mapped);
            for (int f : fds) close(f);
            const auto it = calls.find(name);
            if (it == calls.end()) throw lab::Error("no student function named " + name + " in this part");
            mapped.hostArrays.clear();
            lab::test::traceTestStarted();
            if (it->second.traced) log = lab::test::traceCall([&] { value = it->second.call(r, mapped); });
            else value = it->second.call(r, mapped);
            // Done means done: the judge reads the outputs once this reply is
            // sent, and may release arrays this process still runs kernels on
            // (the trace, when it is on, has waited already; under a sanitizer
            // it is off).
            if (const cudaError_t err = cudaDeviceSynchronize(); err != cudaSuccess)
                throw lab::Error(std::string("the launch failed on the GPU: ") + cudaGetErrorName(err) + " (" +
                                 cudaGetErrorString(err) + ")");
        } catch (const std::exception& e) {
            status = "error";
            value = e.what();
        }
        sendMessage(fd, reply(status, value.substr(0, 4000), log));
    }
}

}  // namespace

int main() {
    lab::test::traceMainStarted();
    const char* env = std::getenv("LAB_JUDGE_FD");
    if (env == nullptr || *env == '\0') {
        std::fprintf(stderr, "this is a graded process of the grading's judge: it runs only under make grade\n");
        return 2;
    }
    try {
        // Ready before the first call: the context and the kernels' code
        // (CUDA_MODULE_LOADING=EAGER, set by the harness) are on the GPU, so
        // that no call's PCIe bytes hold them (the judge meters each call).
        const int fd = std::atoi(env);
        (void)cudaFree(nullptr);  // a failure shows in the first call
        sendMessage(fd, "ready");
        return serveCalls(fd);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "graded process: %s\n", e.what());
        return 1;
    }
}
