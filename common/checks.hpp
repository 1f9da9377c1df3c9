// Checkers for merge and sort outputs, shared by graders and demos.
//
// Each returns a Check: ok, or a message that names the first wrong index,
// what was there, what was expected, and the caller's context (sizes, seed),
// so a failing grader line is enough to reproduce and debug the case.
#pragma once

#include "tagged.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

namespace lab {

// Device buffers start filled with this byte (device_buffer.hpp), so a value
// made only of it is almost surely an output nobody wrote.
constexpr unsigned char kPoisonByte = 0xA7;

template <class T>
bool isPoison(const T& value) {
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    return std::all_of(bytes, bytes + sizeof(T), [](unsigned char b) { return b == kPoisonByte; });
}

struct Check {
    bool ok = true;
    std::string message;
    explicit operator bool() const { return ok; }
};

inline Check failCheck(const std::string& message) { return Check{false, message}; }

// Total order on whole values (key, then tag): the multiset view of an array.
inline bool identityLess(int x, int y) { return x < y; }
inline bool identityLess(const Tagged& x, const Tagged& y) {
    return x.key != y.key ? x.key < y.key : x.tag < y.tag;
}

// Ascending by key (equal neighbours allowed).
template <class T>
Check checkSorted(const std::vector<T>& v, const std::string& context) {
    for (std::size_t i = 1; i < v.size(); ++i) {
        if (v[i] < v[i - 1]) {
            std::ostringstream os;
            os << "not sorted: index " << i << " holds " << v[i] << " after " << v[i - 1] << " ["
               << context << "]";
            return failCheck(os.str());
        }
    }
    return {};
}

// Same values, counted with multiplicity (tags included).
template <class T>
Check checkPermutation(std::vector<T> got, std::vector<T> input, const std::string& context) {
    std::ostringstream os;
    if (got.size() != input.size()) {
        os << "not a permutation of the input: " << got.size() << " values instead of "
           << input.size() << " [" << context << "]";
        return failCheck(os.str());
    }
    const auto less = [](const T& x, const T& y) { return identityLess(x, y); };
    std::sort(got.begin(), got.end(), less);
    std::sort(input.begin(), input.end(), less);
    const auto bad = std::mismatch(got.begin(), got.end(), input.begin(),
                                   [](const T& x, const T& y) { return x == y; });
    if (bad.first != got.end()) {
        os << "not a permutation of the input: the output holds " << *bad.first
           << " where the input's sorted values hold " << *bad.second
           << " (a value was lost, duplicated or overwritten) [" << context << "]";
        return failCheck(os.str());
    }
    return {};
}

// Element by element; the message names the first difference and how many differ.
template <class T>
Check checkEqual(const std::vector<T>& got, const std::vector<T>& expected, const std::string& context) {
    std::ostringstream os;
    if (got.size() != expected.size()) {
        os << "size " << got.size() << " instead of " << expected.size() << " [" << context << "]";
        return failCheck(os.str());
    }
    std::size_t first = got.size(), wrong = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        if (!(got[i] == expected[i])) {
            if (wrong++ == 0) first = i;
        }
    }
    if (wrong == 0) return {};
    os << "index " << first << ": got " << got[first] << ", expected " << expected[first] << " ("
       << wrong << " of " << got.size() << " elements differ) [" << context << "]";
    return failCheck(os.str());
}

// An output made of independent pieces of `length` values each (a batch's
// merged pairs or sorted segments), named `name` in messages; length 0: one
// array.
struct Segments {
    std::size_t length = 0;
    const char* name = "segment";
};

// The full verdict on a merge or sort: equal to the stable reference. On a
// mismatch it says which property broke first (order, permutation, then
// stability), the most useful hint for whoever debugs the kernel. With
// `segments`, the verdict is the first wrong piece's, in its own indices
// ("pair 3 (outputs 24 to 31): not stable ..."), never a step from one piece
// to the next.
template <class T>
Check checkOutput(const std::vector<T>& got, const std::vector<T>& expected, const std::string& context,
                  Segments segments = {}) {
    const std::size_t len = segments.length;
    if (len > 0 && got.size() == expected.size() && got.size() > len && got.size() % len == 0) {
        const auto bad = std::mismatch(got.begin(), got.end(), expected.begin(),
                                       [](const T& x, const T& y) { return x == y; });
        if (bad.first == got.end()) return {};
        const std::size_t first = static_cast<std::size_t>(bad.first - got.begin()) / len * len;
        const std::vector<T> mine(got.begin() + first, got.begin() + first + len);
        const std::vector<T> want(expected.begin() + first, expected.begin() + first + len);
        Check c = checkOutput(mine, want, context);
        std::ostringstream os;
        os << segments.name << " " << first / len << " (outputs " << first << " to " << first + len - 1
           << "): " << c.message;
        c.message = os.str();
        return c;
    }
    Check equal = checkEqual(got, expected, context);
    if (equal) return equal;
    const auto unwritten = std::count_if(got.begin(), got.end(), [](const T& v) { return isPoison(v); });
    const auto notPoisonExpected = std::none_of(expected.begin(), expected.end(), [](const T& v) { return isPoison(v); });
    if (unwritten > 0 && notPoisonExpected) {
        const auto first = std::find_if(got.begin(), got.end(), [](const T& v) { return isPoison(v); });
        std::ostringstream os;
        os << unwritten << " of " << got.size() << " outputs were never written (they still hold the poison "
           << "pattern), the first at index " << (first - got.begin()) << "; " << equal.message;
        return failCheck(os.str());
    }
    if (Check c = checkSorted(got, context); !c) return c;
    if (Check c = checkPermutation(got, expected, context); !c) return c;
    equal.message = "sorted and a permutation, but not stable (equal keys out of input order): " +
                    equal.message;
    return equal;
}

}  // namespace lab
