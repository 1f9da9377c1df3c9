// Host tests of what the judge and a graded process say to each other
// (wire.hpp, serve.hpp): part of build/test_common, no GPU needed. The bytes
// come from the other process, so a short or malformed message must be an
// error, never a read past its end.
#include "../catch_shim.hpp"

#include "serve.hpp"

#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace lab::judge;

int sumOfBoth(const int* a, int n, const int* b) {
    int s = 0;
    for (int i = 0; i < n; ++i) s += a[i] + (b != nullptr ? b[i] : 0);
    return s;
}

}  // namespace

TEST_CASE("The judge's wire: a trace and its violations read back as written", "[judge]") {
    lab::test::TraceLog log;
    log.traced = true;
    log.fault = "cudaErrorIllegalAddress: an illegal memory access was encountered";
    log.kernels.push_back({"mergeSmall_k", "void lab::mergeSmall_k<int>(const int*, int)", 1, 1024, 3});
    log.hostCopies = {"device-to-host copy of 4096 bytes"};
    log.launchCalls = 3;
    log.canaryKernels = 2;
    Writer w;
    putTrace(w, log, {"it called cudaMallocHost, which the lab does not allow (before main)"});
    std::vector<std::string> violations;
    Reader r(w.str());
    const lab::test::TraceLog got = getTrace(r, &violations);
    CHECK(r.done());
    CHECK(got.traced);
    CHECK(got.fault == log.fault);
    REQUIRE(got.kernels.size() == 1);
    CHECK(got.kernels[0].fullName == log.kernels[0].fullName);
    CHECK(got.kernels[0].threads == 1024);
    CHECK(got.kernels[0].count == 3);
    CHECK(got.hostCopies == log.hostCopies);
    CHECK(got.launchCalls == 3);
    CHECK(got.canaryKernels == 2);
    CHECK(violations == std::vector<std::string>{"it called cudaMallocHost, which the lab does not allow (before main)"});
}

TEST_CASE("The judge's wire: a short or lying message is an error, never a read past its end", "[judge]") {
    Writer w;
    w.text("mergeSmall<int>");
    const std::string whole = w.str();
    for (std::size_t cut = 0; cut < whole.size(); ++cut) {
        const std::string part = whole.substr(0, cut);
        Reader r(part);
        CHECK_THROWS_AS(r.text(), lab::Error);
    }
    Writer liar;
    liar.put(static_cast<std::uint64_t>(1) << 40);  // a text of a terabyte, say
    Reader r(liar.str());
    CHECK_THROWS_AS(r.text(), lab::Error);
}

TEST_CASE("A served function reads its arguments in order: values, host arrays, null pointers", "[judge]") {
    const Served served = serve(&sumOfBoth);
    Mapped mapped;
    const std::vector<int> a = {1, 2, 3};
    Writer w;
    w.put(Arg::Host);
    w.put(static_cast<std::uint64_t>(a.size() * sizeof(int)));
    w.bytes(a.data(), a.size() * sizeof(int));
    w.put(Arg::Value);
    w.put(3);
    w.put(Arg::Null);
    Reader r(w.str());
    const std::string result = served.call(r, mapped);
    REQUIRE(result.size() == sizeof(int));
    int sum = 0;
    std::memcpy(&sum, result.data(), sizeof sum);
    CHECK(sum == 6);

    SECTION("one argument too many is refused") {
        Writer more(w);
        more.put(Arg::Value);
        more.put(7);
        Reader extra(more.str());
        CHECK_THROWS_AS(served.call(extra, mapped), lab::Error);
    }
    SECTION("an array the judge never sent is refused") {
        Writer other;
        other.put(Arg::Device);
        other.put(static_cast<std::uint32_t>(42));
        other.put(static_cast<std::uint64_t>(0));
        Reader unknown(other.str());
        CHECK_THROWS_AS(served.call(unknown, mapped), lab::Error);
    }
    SECTION("a value where a pointer goes is refused") {
        Writer wrong;
        wrong.put(Arg::Value);
        wrong.put(5);
        Reader bad(wrong.str());
        CHECK_THROWS_AS(served.call(bad, mapped), lab::Error);
    }
}
