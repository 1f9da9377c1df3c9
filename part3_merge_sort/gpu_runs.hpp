// ./part3's checked GPU runs: a random merge and sort checked against std::,
// and --huge, a sort of any size (past 2^31 where memory allows) checked by
// order and an order-independent fingerprint.
#pragma once

#include <cstdint>

namespace lab {

bool checkedRun(long long n, std::uint64_t seed);
bool hugeSort(long long n, std::uint64_t seed);

}  // namespace lab
