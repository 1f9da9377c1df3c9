// The graded process of a judged test case (judge.hpp): it runs the student's
// functions on what the judge sends, and nothing else. serve.cpp holds its
// main; serve_<part>.cpp lists the part's functions by their names on the wire.
#pragma once

#include "wire.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace lab::judge {

// The judge's arrays as this process maps them, and the host arrays of the call.
struct Mapped {
    struct Region {
        char* device = nullptr;
        std::uint64_t bytes = 0;
    };
    std::map<std::uint32_t, Region> regions;
    std::vector<std::unique_ptr<std::string>> hostArrays;  // the current call's
};

// An argument of type A from the wire.
template <class A>
A getArg(Reader& r, Mapped& m) {
    const auto kind = r.get<Arg>();
    if constexpr (std::is_pointer_v<A>) {
        using Pointee = std::remove_cv_t<std::remove_pointer_t<A>>;
        switch (kind) {
            case Arg::Null: return nullptr;
            case Arg::Other: return reinterpret_cast<A>(static_cast<std::uintptr_t>(r.get<std::uint64_t>()));
            case Arg::Device: {
                const auto id = r.get<std::uint32_t>();
                const auto offset = r.get<std::uint64_t>();
                const auto it = m.regions.find(id);
                if (it == m.regions.end() || offset > it->second.bytes)
                    throw Error("the judge named an array this process was not sent");
                return reinterpret_cast<A>(it->second.device + offset);
            }
            case Arg::Host: {
                const auto bytes = r.get<std::uint64_t>();
                if (bytes > kMessageCap) throw Error("a host array larger than a message");
                auto copy = std::make_unique<std::string>(bytes, '\0');
                r.bytes(copy->data(), bytes);
                m.hostArrays.push_back(std::move(copy));
                return reinterpret_cast<A>(reinterpret_cast<Pointee*>(m.hostArrays.back()->data()));
            }
            default: break;
        }
        throw Error("a pointer argument of an unknown kind");
    } else {
        if (kind != Arg::Value) throw Error("a value argument of another kind");
        return r.get<A>();
    }
}

// A student function as the server calls it: arguments read in order, the
// result's bytes returned ("" for void; the text of a const char*). A
// launcher runs in the launch trace's window; a host function (traced =
// false: the search on the host, the implementation's name) does not.
struct Served {
    std::function<std::string(Reader&, Mapped&)> call;
    bool traced = true;
};

template <class R, class... A>
Served serve(R (*f)(A...), bool traced = true) {
    return {[f](Reader& r, Mapped& m) -> std::string {
        std::tuple<std::decay_t<A>...> args{getArg<std::decay_t<A>>(r, m)...};  // braces: read left to right
        if (!r.done()) throw Error("a call with more arguments than its function takes");
        if constexpr (std::is_void_v<R>) {
            std::apply(f, args);
            return {};
        } else if constexpr (std::is_same_v<R, const char*>) {
            const char* text = std::apply(f, args);
            return text != nullptr ? std::string(text).substr(0, 64) : std::string();
        } else {
            const R value = std::apply(f, args);
            return std::string(reinterpret_cast<const char*>(&value), sizeof value);
        }
    }, traced};
}

template <class F>
Served serveHost(F f) {
    return serve(f, false);
}

using Calls = std::map<std::string, Served>;

// The part's functions (serve_<part>.cpp).
Calls partCalls();

}  // namespace lab::judge
