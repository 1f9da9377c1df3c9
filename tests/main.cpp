// The graders' main: Catch2 v2 or v3, plus the lab's own accounting.
//
// Prints the seed and, without a GPU, one line saying the GPU tests will not
// run. Each test case ends as passed, failed, or skipped (a [gpu] test that
// could not run: never counted as passed). The last line is always
//   N passed, N failed            or   N passed, N failed, N skipped
// and the exit status is non-zero when anything failed.
#define CATCH_CONFIG_RUNNER  // v2: this file provides main (v3 ignores it)
#include "catch_shim.hpp"

#if LAB_CATCH_MAJOR == 3
#include <catch2/catch_session.hpp>
#include <catch2/catch_test_case_info.hpp>
#include <catch2/reporters/catch_reporter_event_listener.hpp>
#include <catch2/reporters/catch_reporter_registrars.hpp>
#endif

#include "lab_test.hpp"

#include "../common/gpu.hpp"

#include <cstdio>
#include <cstdlib>
#include <iostream>

namespace lab::test {

namespace {

struct Tally {
    int passed = 0, failed = 0, skipped = 0;
    bool currentSkipped = false;
};
Tally tally;

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
        return env != nullptr && *env != '\0' && *env != '0';
    }();
    return q;
}

bool gpuOrSkip() {
    if (detectGpu().available) return true;
    tally.currentSkipped = true;
    return false;
}

std::string context(std::uint64_t caseSeed, const std::string& details) {
    return "LAB_SEED=" + std::to_string(seed()) + " case seed " + std::to_string(caseSeed) + ", " + details;
}

std::vector<int> sizesUpTo(int max) {
    std::vector<int> sizes;
    for (int n = 0; n <= max; ++n) {
        const bool edge = n <= 34 || max - n <= 2 || (n & (n - 1)) == 0 || ((n + 1) & n) == 0 ||
                          ((n - 1) & (n - 2)) == 0;
        if (!quick() || edge || n % 97 == 0) sizes.push_back(n);
    }
    return sizes;
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
        ListenerBase::testCaseStarting(info);
    }
    void testCaseEnded(Catch::TestCaseStats const& stats) override {
        if (stats.totals.assertions.failed > 0) ++tally.failed;
        else if (tally.currentSkipped) ++tally.skipped;
        else ++tally.passed;
        ListenerBase::testCaseEnded(stats);
    }
};

}  // namespace lab::test

using lab::test::TallyListener;
CATCH_REGISTER_LISTENER(TallyListener)

int main(int argc, char* argv[]) {
    using lab::test::tally;
    Catch::Session session;
    if (const int bad = session.applyCommandLine(argc, argv); bad != 0) return bad;

    std::cout << "Catch2 v" << LAB_CATCH_MAJOR << ", LAB_SEED=" << lab::test::seed()
              << (lab::test::quick() ? ", quick mode (LAB_QUICK)" : "") << "\n";
    const lab::GpuInfo& gpu = lab::detectGpu();
    if (gpu.available)
        std::cout << "GPU: " << lab::describeGpu(gpu) << "\n";
    else
        std::cout << "GPU tests NOT RUN: " << gpu.reason
                  << ". They are reported as skipped, never as passed.\n";
    std::cout.flush();

    const int status = session.run();
    std::cout << tally.passed << " passed, " << tally.failed << " failed";
    if (tally.skipped > 0) std::cout << ", " << tally.skipped << " skipped";
    std::cout << std::endl;
    if (tally.failed > 0) return 1;
    return status;
}
