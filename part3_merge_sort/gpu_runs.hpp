// ./part3's checked GPU runs: a random merge and sort checked against std::,
// and --huge, a sort of any size (past 2^31 where memory allows) checked by
// order and an order-independent fingerprint.
#pragma once

#include "part3.cuh"

#include <cstdint>
#include <optional>

namespace lab {

// With a shape (--shape), the merge and the sort run at that study shape
// (mergeLargeShaped, mergeSortShaped) instead of the default ones.
bool checkedRun(long long n, std::uint64_t seed, std::optional<LaunchShape> shape = std::nullopt);
// --huge: sorts n random keys with `sort` (mergeSort unless the demo says otherwise).
bool hugeSort(long long n, std::uint64_t seed, void (*sort)(int*, long long) = mergeSort<int>,
              const char* name = "mergeSort");

}  // namespace lab
