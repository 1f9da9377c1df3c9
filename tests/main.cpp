// The graders' main: Catch2 v2 or v3, plus the lab's own accounting.
//
// Prints the seed and, without a GPU, one line saying the GPU tests will not
// run. Each test case ends as passed, failed, or skipped (a [gpu] test that
// could not run: never counted as passed). The last line is
//   N passed, N failed            or   N passed, N failed, N skipped
// or, when no test case ran at all, "no tests here: <why>" (never a count of
// zero); the exit status is non-zero when anything failed.
//
// For the grading harness, LAB_REPORT=<file> (or LAB_REPORT_FD=<fd>, a pipe
// of the harness's) also receives a report, one JSON
// object a line: "start" and "end" (status, skip reason, first failure, and
// the launch trace's objections to calls made outside the launchers) per test
// case, then "summary"; and LAB_RESULTS_FD=<fd> receives every result the
// tests read back (test_env.hpp), raw. The harness reads only these, never
// stdout, and a report without its summary means the process did not finish
// (a crash, a hang, or exit() in the code under test). An exit() during the
// run is also turned into exit status 3, so `make test` cannot be fooled by
// it. None of this is trusted: code under test runs in this process and can
// write anything. The harness believes a "passed" only when the results equal
// those of a trusted build (tests/oracle/) run in a process without student
// code, and graded builds (LAB_GRADED) hold no expected answer to copy.
#define CATCH_CONFIG_RUNNER  // v2: this file provides main (v3 ignores it)
#include "catch_shim.hpp"

#if LAB_CATCH_MAJOR == 3
#include <catch2/catch_session.hpp>
#include <catch2/catch_test_case_info.hpp>
#include <catch2/reporters/catch_reporter_event_listener.hpp>
#include <catch2/reporters/catch_reporter_registrars.hpp>
#endif

#include "lab_test.hpp"
#include "large_tier.hpp"
#include "trace.hpp"

#include "../common/gpu.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include <fcntl.h>
#include <unistd.h>

namespace lab::test {

namespace {

struct Tally {
    int passed = 0, failed = 0, skipped = 0;
    bool currentSkipped = false;
    std::string skipReason, firstFailure, currentTest;
    bool finished = false;
};
Tally tally;

// ---------------------------------------------------------------- the report

std::FILE* report = nullptr;

std::string jsonString(const std::string& s) {
    std::string out = "\"";
    for (const unsigned char c : s) {
        if (c == '"' || c == '\\') out += '\\', out += static_cast<char>(c);
        else if (c == '\n') out += "\\n";
        else if (c < 0x20 || c >= 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else out += static_cast<char>(c);
    }
    return out + "\"";
}

// One line of the report, flushed at once so a crash loses nothing written.
void reportLine(const std::string& fields) {
    if (report == nullptr) return;
    std::fprintf(report, "{%s}\n", fields.c_str());
    std::fflush(report);
}

// ---------------------------------------------------------------- the results

// A descriptor the harness passed in the variable `name`; -1 when it is unset,
// or not open here (a tool between the harness and this program, such as
// compute-sanitizer, may close what it does not know): then nothing is sent,
// and a graded run without its results or report simply fails.
int inheritedFd(const char* name) {
    const char* env = std::getenv(name);
    if (env == nullptr || *env == '\0') return -1;
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (*end != '\0' || v < 0 || v > 1 << 20 || fcntl(static_cast<int>(v), F_GETFD) < 0) {
        std::cerr << name << "=" << env << " is not an open file descriptor here: nothing is sent to it\n";
        return -1;
    }
    return static_cast<int>(v);
}

// LAB_RESULTS_FD: where results go, -1 for nowhere. Frames, little endian:
// 'S' u32 n + test name (a test case starts), 'R' u32 n + what, u8 n + type,
// u64 n + bytes (one result: recordBytes), 'E' (the test case ended). The
// grading harness reads them (tests/grading/harness/results.py).
int resultsFd() {
    static const int fd = inheritedFd("LAB_RESULTS_FD");
    return fd;
}

// The report goes to LAB_REPORT_FD (the harness's pipe) or the file LAB_REPORT.
void openReport() {
    if (const int fd = inheritedFd("LAB_REPORT_FD"); fd >= 0) {
        report = fdopen(fd, "w");
    } else {
        const char* path = std::getenv("LAB_REPORT");
        if (path == nullptr || *path == '\0') return;
        report = std::fopen(path, "w");
    }
    if (report == nullptr) {
        std::cerr << "cannot write the report (LAB_REPORT_FD or LAB_REPORT): " << std::strerror(errno) << "\n";
        std::exit(2);
    }
}

void writeAll(const void* data, std::size_t size) {
    const auto* p = static_cast<const char*>(data);
    while (size > 0) {
        const ssize_t n = ::write(resultsFd(), p, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            std::cerr << "cannot write results to LAB_RESULTS_FD: " << std::strerror(errno) << "\n";
            std::_Exit(2);
        }
        p += n;
        size -= static_cast<std::size_t>(n);
    }
}

template <class Size>
void writeSized(const void* data, std::size_t size) {
    const Size n = static_cast<Size>(size);
    writeAll(&n, sizeof n);
    writeAll(data, size);
}

void resultsTestStarted(const std::string& name) {
    if (resultsFd() < 0) return;
    writeAll("S", 1);
    writeSized<std::uint32_t>(name.data(), name.size());
}

void resultsTestEnded() {
    if (resultsFd() >= 0) writeAll("E", 1);
}

// exit() called by the code under test: say so, and never end with status 0.
void exitDuringRun() {
    if (tally.finished) return;
    std::fprintf(stderr, "\nexit() was called during test case \"%s\": the run did not finish\n",
                 tally.currentTest.c_str());
    std::fflush(stderr);
    std::_Exit(3);
}

std::uint64_t readSeed() {
    const char* env = std::getenv("LAB_SEED");
    if (env == nullptr || *env == '\0') return 20121125;  // default: fixed, so runs repeat
    char* end = nullptr;
    const unsigned long long v = std::strtoull(env, &end, 10);
    if (*end != '\0') {
        std::cerr << "LAB_SEED must be a non-negative whole number, got '" << env << "'\n";
        std::exit(2);
    }
    return v;
}

}  // namespace

std::uint64_t seed() {
    static const std::uint64_t s = readSeed();
    return s;
}

bool quick() {
    static const bool q = [] {
        const char* env = std::getenv("LAB_QUICK");
        return (env != nullptr && *env != '\0' && *env != '0') || underComputeSanitizer() || kEmulated;
    }();
    return q;
}

bool sanitized() { return underComputeSanitizer() && !kEmulated; }

bool gpuOrSkip() {
    if (detectGpu().available) return true;
    skip(detectGpu().reason);
    return false;
}

void skip(const std::string& reason) {
    tally.currentSkipped = true;
    tally.skipReason = reason;
    // Without a GPU every [gpu] test says the same; the reason was printed
    // once at the start.
    if (!detectGpu().available && reason == detectGpu().reason)
        std::cout << "  not run (no GPU): " << tally.currentTest << "\n";
    else
        std::cout << "  not run: " << tally.currentTest << " (" << reason << ")\n";
}

void recordBytes(const std::string& what, const char* type, const void* bytes, std::size_t size) {
    if (resultsFd() < 0) return;
    const std::string name = what.size() > 4000 ? what.substr(0, 4000) : what;
    writeAll("R", 1);
    writeSized<std::uint32_t>(name.data(), name.size());
    writeSized<std::uint8_t>(type, std::strlen(type));
    writeSized<std::uint64_t>(bytes, size);
}

std::string context(std::uint64_t caseSeed, const std::string& details) {
    return "LAB_SEED=" + std::to_string(seed()) + " case seed " + std::to_string(caseSeed) + ", " + details;
}

namespace {

// The sizes 0..max that `keep(n, nearPow2)` keeps.
template <class Keep>
std::vector<int> sizesWhere(int max, Keep keep) {
    std::vector<int> sizes;
    for (int n = 0; n <= max; ++n) {
        const bool nearPow2 = (n & (n - 1)) == 0 || ((n + 1) & n) == 0 || ((n - 1) & (n - 2)) == 0;
        if (keep(n, nearPow2)) sizes.push_back(n);
    }
    return sizes;
}

}  // namespace

std::vector<int> edgeSizesUpTo(int max) {
    return sizesWhere(max, [max](int n, bool nearPow2) { return n <= 34 || max - n <= 2 || nearPow2 || n % 97 == 0; });
}

std::vector<int> sizesUpTo(int max) {
    if (sanitized())
        return sizesWhere(max, [max](int n, bool nearPow2) {
            return n <= 3 || max - n <= 1 || (n >= 31 && nearPow2) || n % 389 == 0;
        });
    if (quick()) return edgeSizesUpTo(max);
    return sizesWhere(max, [](int, bool) { return true; });
}

#if LAB_CATCH_MAJOR == 3
using ListenerBase = Catch::EventListenerBase;
#else
using ListenerBase = Catch::TestEventListenerBase;
#endif

struct TallyListener : ListenerBase {
    using ListenerBase::ListenerBase;
    void testCaseStarting(Catch::TestCaseInfo const& info) override {
        tally.currentSkipped = false;
        tally.skipReason.clear();
        tally.firstFailure.clear();
        tally.currentTest = info.name;
        reportLine("\"event\":\"start\",\"test\":" + jsonString(info.name));
        resultsTestStarted(info.name);
        traceTestStarted();
        ListenerBase::testCaseStarting(info);
    }
#if LAB_CATCH_MAJOR == 3
    void assertionEnded(Catch::AssertionStats const& stats) override { noteFailure(stats); }
#else
    bool assertionEnded(Catch::AssertionStats const& stats) override {
        noteFailure(stats);
        return true;
    }
#endif
    void testCaseEnded(Catch::TestCaseStats const& stats) override {
        const char* status = "passed";
        if (stats.totals.assertions.failed > 0) ++tally.failed, status = "failed";
        else if (tally.currentSkipped) ++tally.skipped, status = "skipped";
        else ++tally.passed;
        traceTestEnded();
        std::string objections;  // the trace's, on calls made outside the launchers
        for (const std::string& v : takeTraceViolations()) objections += (objections.empty() ? "" : "; ") + v;
        resultsTestEnded();
        reportLine("\"event\":\"end\",\"test\":" + jsonString(tally.currentTest) + ",\"status\":\"" +
                   status + "\",\"reason\":" + jsonString(tally.skipReason) +
                   ",\"failure\":" + jsonString(tally.firstFailure) + ",\"trace\":" + jsonString(objections));
        ListenerBase::testCaseEnded(stats);
    }

private:
    // The first failed assertion of the test case: its message (or expanded
    // expression) and the INFO lines in scope, for the grading report.
    static void noteFailure(Catch::AssertionStats const& stats) {
        const auto& result = stats.assertionResult;
        if (result.isOk() || !tally.firstFailure.empty()) return;
        std::string text(result.getMessage());
        if (text.empty() && result.hasExpression()) text = result.getExpandedExpression();
        for (const auto& info : stats.infoMessages)
            if (info.message != text) text += std::string(text.empty() ? "" : "; ") + info.message;
        tally.firstFailure = text.empty() ? "an assertion failed" : text;
    }
};

// Why a run counted no test: the test specs on the command line (a tag or
// name this program does not hold, as with `make test TEST_ARGS='[Q1]'` for
// another part's graders), or none at all.
std::string whyNoTests(int argc, char* argv[]) {
    std::string specs;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg.empty() || arg[0] == '-') continue;
        specs += (specs.empty() ? "" : " ") + arg;
    }
    return specs.empty() ? "this program holds no test case"
                         : "none of this program's test cases matches " + specs;
}

}  // namespace lab::test

using lab::test::TallyListener;
CATCH_REGISTER_LISTENER(TallyListener)

int main(int argc, char* argv[]) {
    using lab::test::tally;
    lab::test::traceMainStarted();
    Catch::Session session;
    if (const int bad = session.applyCommandLine(argc, argv); bad != 0) return bad;
    lab::test::openReport();
    std::atexit(lab::test::exitDuringRun);

    std::cout << "Catch2 v" << LAB_CATCH_MAJOR << ", LAB_SEED=" << lab::test::seed()
              << (lab::kEmulated ? ", emulated: quick sizes, exact allocations"
                  : lab::underComputeSanitizer() ? ", under compute-sanitizer: sampled sizes, exact allocations, no trace"
                  : lab::test::quick()   ? ", quick mode (LAB_QUICK)"
                                         : "")
              << "\n";
    const lab::GpuInfo& gpu = lab::detectGpu();
    // LAB_PROBE_GPU=1: the grading harness asks whether grading can run here.
    if (const char* probe = std::getenv("LAB_PROBE_GPU"); probe != nullptr && *probe == '1') {
        if (!gpu.available || lab::kEmulated) {
            std::cout << "no GPU: " << (lab::kEmulated ? "an emulated build (EMULATE=1) is never graded" : gpu.reason)
                      << std::endl;
            tally.finished = true;
            return 1;
        }
        const std::string noLarge = lab::test::large::tierDoesNotFit();
        std::cout << "GPU: " << lab::describeGpu(gpu) << "\ndevices: " << gpu.deviceCount
                  << "\nfree MiB: " << (lab::freeDeviceBytes() >> 20)
                  << "\ntotal MiB: " << (gpu.globalMemBytes >> 20) << "\nuuid: " << gpu.uuid
                  << "\nlarge tier: " << (noLarge.empty() ? "fits" : noLarge) << std::endl;
        tally.finished = true;
        return 0;
    }
    if (gpu.available)
        std::cout << "GPU: " << lab::describeGpu(gpu) << "\nlaunch tracing: " << lab::test::tracingStatus() << "\n";
    else
        std::cout << "GPU tests NOT RUN: " << gpu.reason
                  << ". They are reported as skipped, never as passed.\n";
    std::cout.flush();

    const int status = session.run();
    tally.finished = true;
    lab::test::reportLine("\"event\":\"summary\",\"passed\":" + std::to_string(tally.passed) +
                          ",\"failed\":" + std::to_string(tally.failed) +
                          ",\"skipped\":" + std::to_string(tally.skipped));
    // Nothing ran: said in words, never as a count of zero tests, which a
    // reader (or CI) would take for a run that passed.
    if (tally.passed + tally.failed + tally.skipped == 0) {
        std::cout << "no tests here: " << lab::test::whyNoTests(argc, argv) << std::endl;
        return status;
    }
    std::cout << tally.passed << " passed, " << tally.failed << " failed";
    if (tally.skipped > 0) std::cout << ", " << tally.skipped << " skipped";
    std::cout << std::endl;
    if (tally.failed > 0) return 1;
    return status;
}
