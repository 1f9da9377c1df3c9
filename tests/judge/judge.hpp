// The grading's judge: the graders' own test programs, built with every
// expected answer and check, whose student functions are stubs (remote_*.cpp)
// that have a graded process run the student's code on arrays the judge owns.
//
//   the judge                                 the graded process (serve.cpp)
//   allocates every checked array in          maps the arrays it is sent,
//   memory it can share (shared_memory.hpp),  calls the student's function in
//   fills, poisons and guards it, calls a     the launch trace, synchronises,
//   student function: the stub sends the      replies with what it returned or
//   call ----------------------------------->  threw and the trace
//   <-----------------------------------------
//   reads the outputs and guards itself and   ... and exits when told; it never
//   checks them (the test's own checks)       sees the seed or an expected answer
//
// A test program is the judge when LAB_JUDGE_FD names its end of the socket
// (the harness's grading); without it, a judge build refuses to run.
#pragma once

#include "wire.hpp"

#include "../../common/tagged.hpp"

#include <string>
#include <type_traits>

namespace lab::judge {

// A call's name on the wire: "mergeSmall<int>", "mergeSmall<Tagged>".
template <class T>
std::string named(const char* function) {
    static_assert(std::is_same_v<T, int> || std::is_same_v<T, Tagged>, "the lab's element types are int and Tagged");
    return std::string(function) + (std::is_same_v<T, int> ? "<int>" : "<Tagged>");
}

// Encodes an argument of a call (wire.hpp); pointers by what they point to.
void putPointer(Writer& w, const void* p);
void putHostArray(Writer& w, const void* p, std::size_t bytes);

// A host array argument (diagonalSearchOnHost's): its values go with the call.
struct HostArray {
    const void* data;
    std::size_t bytes;
};
template <class T, class N>
HostArray host(const T* data, N n) {
    return {data, n > 0 ? static_cast<std::size_t>(n) * sizeof(T) : 0};
}

template <class A>
void putArg(Writer& w, const A& a) {
    if constexpr (std::is_same_v<A, HostArray>) {
        putHostArray(w, a.data, a.bytes);
    } else if constexpr (std::is_pointer_v<A>) {
        putPointer(w, a);
    } else {
        w.put(Arg::Value);
        w.put(a);
    }
}

// Sends the call and waits for its reply: the return value's bytes (none for
// void), after storing the reply's trace for traceCall (trace.cpp). Throws
// lab::Error with the graded process's message when its function threw.
std::string send(const std::string& name, const Writer& args);

template <class R>
R decode(const std::string& bytes) {
    if constexpr (std::is_void_v<R>) {
        return;
    } else {
        static_assert(std::is_trivially_copyable_v<R>, "a student function's result crosses the socket as bytes");
        Reader r(bytes);
        R v = r.get<R>();
        if (!r.done()) throw Error("the graded process's reply holds more than the result");
        return v;
    }
}

// A call of the student's function `name` ("mergeSmall<int>") with `args`.
template <class R, class... A>
R call(const std::string& name, const A&... args) {
    Writer w;
    (putArg(w, args), ...);
    return decode<R>(send(name, w));
}

// The trace relayed from the graded process (trace.cpp, LAB_JUDGE):
// beginRemoteTrace() opens a window, endRemoteTrace() returns what the calls
// in it reported; the watch's violations wait for takeRemoteViolations().
void beginRemoteTrace();
test::TraceLog endRemoteTrace();
std::vector<std::string> takeRemoteViolations();

// The student's name of its implementation ("student"), asked once.
const char* remoteImplementation(const char* part);

}  // namespace lab::judge
