#include "inputs.hpp"

#include <algorithm>
#include <climits>

namespace lab {

std::uint64_t Rng::next() {
    // SplitMix64 (Steele, Lea, Flood 2014).
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

std::uint64_t Rng::below(std::uint64_t bound) {
    // Rejection keeps it exactly uniform.
    const std::uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    std::uint64_t x;
    do x = next();
    while (x >= limit);
    return x % bound;
}

std::uint64_t caseSeed(std::uint64_t base, std::uint64_t a, std::uint64_t b) {
    Rng r(base ^ (a * 0x9E3779B97F4A7C15ull) ^ (b * 0xC2B2AE3D27D4EB4Full));
    r.next();
    return r.next();
}

const char* inputKindName(InputKind kind) {
    switch (kind) {
    case InputKind::Random: return "random";
    case InputKind::FewDistinct: return "few-distinct";
    case InputKind::AllEqual: return "all-equal";
    case InputKind::Ascending: return "ascending";
    case InputKind::Descending: return "descending";
    case InputKind::Extremes: return "extremes";
    }
    return "?";
}

const std::vector<InputKind>& allInputKinds() {
    static const std::vector<InputKind> kinds = {InputKind::Random,    InputKind::FewDistinct,
                                                 InputKind::AllEqual,  InputKind::Ascending,
                                                 InputKind::Descending, InputKind::Extremes};
    return kinds;
}

std::vector<int> randomKeys(std::size_t n, std::uint64_t seed, std::uint32_t distinct) {
    Rng rng(seed);
    std::vector<int> keys(n);
    const std::uint64_t span = 1ull << 32;
    for (auto& k : keys) {
        const std::uint64_t bits =
            distinct == 0 ? (rng.next() >> 32) : rng.below(distinct) * (span / distinct);
        k = static_cast<int>(static_cast<std::int64_t>(bits) + INT_MIN);
    }
    return keys;
}

std::vector<int> makeKeys(InputKind kind, std::size_t n, std::uint64_t seed) {
    switch (kind) {
    case InputKind::Random: return randomKeys(n, seed);
    case InputKind::FewDistinct: return randomKeys(n, seed, 8);
    case InputKind::AllEqual: return std::vector<int>(n, static_cast<int>(seed % 1000) - 500);
    case InputKind::Ascending:
    case InputKind::Descending: {
        // Consecutive values; beyond 2^30 keys, evenly spread over the int range.
        std::vector<int> keys(n);
        const int start = static_cast<int>(seed % 1000) - 500;
        const bool consecutive = n <= (1u << 30);
        for (std::size_t i = 0; i < n; ++i)
            keys[i] = consecutive ? start + static_cast<int>(i)
                                  : static_cast<int>(static_cast<std::int64_t>(
                                        static_cast<double>(i) / static_cast<double>(n) * 4294967296.0) + INT_MIN);
        if (kind == InputKind::Descending) std::reverse(keys.begin(), keys.end());
        return keys;
    }
    case InputKind::Extremes: {
        static const int pool[] = {INT_MIN, INT_MIN + 1, -1, 0, 1, INT_MAX - 1, INT_MAX};
        Rng rng(seed);
        std::vector<int> keys(n);
        for (auto& k : keys) k = pool[rng.below(sizeof pool / sizeof pool[0])];
        return keys;
    }
    }
    return {};
}

std::vector<int> sortedKeys(InputKind kind, std::size_t n, std::uint64_t seed) {
    std::vector<int> keys = makeKeys(kind, n, seed);
    std::sort(keys.begin(), keys.end());
    return keys;
}

std::vector<Tagged> tagKeys(const std::vector<int>& keys, int firstTag) {
    std::vector<Tagged> out(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) out[i] = {keys[i], firstTag + static_cast<int>(i)};
    return out;
}

}  // namespace lab
