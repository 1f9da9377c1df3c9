// Seeded, reproducible input generators.
//
// Every generator takes an explicit seed and gives the same values on every
// machine and compiler (SplitMix64, no std:: distributions), so a seed printed
// by a failing test reproduces the failure anywhere.
#pragma once

#include "tagged.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace lab {

class Rng {
public:
    explicit Rng(std::uint64_t seed) : state_(seed) {}
    std::uint64_t next();
    // Uniform in [0, bound), bound > 0.
    std::uint64_t below(std::uint64_t bound);

private:
    std::uint64_t state_;
};

// Derives an independent seed for one case from a base seed and case numbers.
std::uint64_t caseSeed(std::uint64_t base, std::uint64_t a, std::uint64_t b = 0);

enum class InputKind {
    Random,       // full 32-bit range, few repeats
    FewDistinct,  // 8 distinct values: long runs of equal keys
    AllEqual,     // one value
    Ascending,    // already sorted, consecutive values
    Descending,   // reverse sorted
    Extremes,     // INT_MIN, INT_MAX and their neighbours, 0, +-1
};

const char* inputKindName(InputKind kind);
const std::vector<InputKind>& allInputKinds();

// n keys of the given kind (not sorted, except Ascending).
std::vector<int> makeKeys(InputKind kind, std::size_t n, std::uint64_t seed);

// n uniformly random keys drawn from `distinct` values spread over the int
// range (distinct == 0: the whole range).
std::vector<int> randomKeys(std::size_t n, std::uint64_t seed, std::uint32_t distinct = 0);

// makeKeys, then sorted ascending: an input for a merge.
std::vector<int> sortedKeys(InputKind kind, std::size_t n, std::uint64_t seed);

// Tags keys with firstTag, firstTag + 1, ... in input order.
std::vector<Tagged> tagKeys(const std::vector<int>& keys, int firstTag);

}  // namespace lab
