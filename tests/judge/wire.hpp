// What the judge and a graded process say to each other over their socket
// (one message each way per call of a student function; shared_memory.hpp
// carries them). Both ends read what the other wrote as untrusted bytes: a
// short or malformed message is an error, never a read past its end.
//
//   judge -> graded   "call" NAME, the new allocations (id, bytes; their
//                     descriptors ride along), then each argument:
//                       value   its bytes (int, long long, LaunchShape, ...)
//                       device  (allocation id, offset): an array the judge owns
//                       host    its bytes: a host array (diagonalSearchOnHost's)
//                       null    nullptr
//                       other   an address in the judge's space that is no array
//                               of its own (a refusal test's host pointer): passed
//                               on as it is, meaningless there
//                     or "exit"
//   graded -> judge   "ok" with the return value's bytes, or "error" with the
//                     message of what the function threw; then the launch
//                     trace of the call (trace.hpp's TraceLog) and the
//                     violations the graded process's watch recorded
#pragma once

#include "../../common/cuda_check.hpp"
#include "../trace.hpp"

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace lab::judge {

enum class Arg : std::uint8_t { Value = 1, Device, Host, Null, Other };

class Writer {
public:
    void bytes(const void* p, std::size_t n) { text_.append(static_cast<const char*>(p), n); }
    template <class T>
    void put(const T& v) {
        static_assert(std::is_trivially_copyable_v<T>, "only plain values cross the socket");
        bytes(&v, sizeof v);
    }
    void text(const std::string& s) {
        put(static_cast<std::uint64_t>(s.size()));
        bytes(s.data(), s.size());
    }
    const std::string& str() const { return text_; }

private:
    std::string text_;
};

class Reader {
public:
    explicit Reader(const std::string& s) : s_(s) {}
    void bytes(void* p, std::size_t n) {
        if (n > s_.size() - pos_) throw Error("a message from the other process is shorter than it says");
        std::memcpy(p, s_.data() + pos_, n);
        pos_ += n;
    }
    template <class T>
    T get() {
        static_assert(std::is_trivially_copyable_v<T>, "only plain values cross the socket");
        T v;
        bytes(&v, sizeof v);
        return v;
    }
    std::string text(std::size_t cap = 1 << 20) {
        const auto n = get<std::uint64_t>();
        if (n > cap || n > s_.size() - pos_) throw Error("a message from the other process holds a text too long");
        std::string t(s_.data() + pos_, n);
        pos_ += n;
        return t;
    }
    bool done() const { return pos_ == s_.size(); }

private:
    const std::string& s_;
    std::size_t pos_ = 0;
};

// The largest message either end sends (host arrays included) or accepts:
// under a Unix socket's default buffer, which bounds one message.
constexpr std::size_t kMessageCap = 160 << 10;

inline void putTexts(Writer& w, const std::vector<std::string>& list) {
    w.put(static_cast<std::uint32_t>(list.size()));
    for (const std::string& s : list) w.text(s);
}

inline std::vector<std::string> getTexts(Reader& r) {
    const auto n = r.get<std::uint32_t>();
    if (n > 10000) throw Error("a message from the other process lists too many texts");
    std::vector<std::string> list;
    for (std::uint32_t i = 0; i < n; ++i) list.push_back(r.text(4096));
    return list;
}

// A launch trace (trace.hpp) and the watch's violations, on the wire.
inline void putTrace(Writer& w, const test::TraceLog& log, const std::vector<std::string>& violations) {
    w.put(static_cast<std::uint8_t>(log.traced));
    w.text(log.why);
    w.text(log.fault);
    w.put(static_cast<std::uint32_t>(log.kernels.size()));
    for (const test::KernelLaunch& k : log.kernels) {
        w.text(k.name);
        w.text(k.fullName);
        w.put(k.blocks);
        w.put(k.threads);
        w.put(k.count);
    }
    putTexts(w, log.hostCopies);
    putTexts(w, log.violations);
    for (int v : {log.canaryKernels, log.canaryCopies, log.copyCalls, log.launchCalls, log.copyRecords}) w.put(v);
    putTexts(w, violations);
}

inline test::TraceLog getTrace(Reader& r, std::vector<std::string>* violations) {
    test::TraceLog log;
    log.traced = r.get<std::uint8_t>() != 0;
    log.why = r.text(4096);
    log.fault = r.text(4096);
    const auto kernels = r.get<std::uint32_t>();
    if (kernels > 100000) throw Error("a message from the other process lists too many kernels");
    for (std::uint32_t i = 0; i < kernels; ++i) {
        test::KernelLaunch k;
        k.name = r.text(4096);
        k.fullName = r.text(4096);
        k.blocks = r.get<long long>();
        k.threads = r.get<int>();
        k.count = r.get<long long>();
        log.kernels.push_back(k);
    }
    log.hostCopies = getTexts(r);
    log.violations = getTexts(r);
    for (int* v : {&log.canaryKernels, &log.canaryCopies, &log.copyCalls, &log.launchCalls, &log.copyRecords})
        *v = r.get<int>();
    *violations = getTexts(r);
    return log;
}

}  // namespace lab::judge
