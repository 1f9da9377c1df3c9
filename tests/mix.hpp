// SplitMix64's finaliser: a well-mixed 64-bit hash step, on the host and the
// device (the [large] tier's hashes of arrays too large to record whole).
#pragma once

#include "../common/hd.hpp"

#include <cstdint>

namespace lab::test {

LAB_HD inline std::uint64_t mix64(std::uint64_t x) {
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

}  // namespace lab::test
