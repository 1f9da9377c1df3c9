// The naive GPU peers of the Part 3 tables: the merges the lab is meant to beat.
// [instructor reference: files named reference* are not in the student release]
//
// They hold a search, a merge and a sort, so they answer questions; the
// student copy's tables leave them out (main.cu) and compare with CCCL and
// std:: only (bench_peers.hpp).
#pragma once

namespace lab::peers {

// Naive 1: one GPU thread merges everything, sequentially.
void oneThreadMerge(const int* dA, long long nA, const int* dB, long long nB, int* dM);

// Naive 2: one thread per input element, which finds its rank in the other
// array by binary search; its output position is its own index plus that rank.
void rankMerge(const int* dA, long long nA, const int* dB, long long nB, int* dM);

// Naive 2 as a sort: passes of rank merges, runs of 1, 2, 4, ... (dTemp holds n).
void rankMergeSort(int* dData, int* dTemp, long long n);

}  // namespace lab::peers
