// Part 3 beyond the questions: the merge sort tuned for speed, with k-way merge passes.
// [instructor reference: files named reference* are not in the student release]
//
// Same contract as Q6's mergeSort (part3.cuh): sorts dData[0, n) stably, in
// place, for any n >= 0 (64-bit sizes, past 2^31 included), and throws
// lab::Error for a negative n or a null pointer with work to do. Where Q6's
// passes merge pairs of runs, these merge groups of four: a sort of 2^28 keys
// makes 8 passes over memory instead of 16. ./part3 and `make bench` time it
// as the "Q6 tuned" rows, next to the questions' reference; test_tuned tests it.
#pragma once

#include <vector>

namespace lab::tuned {

template <class T>
void mergeSort(T* dData, long long n);

// Its tiles, for the tests' edge sizes: the tile sort's (the length of the
// first runs; pass p = 0, 1, ... merges runs of 4^p tiles) and the merge
// passes' (each block writes one merge tile).
template <class T>
int mergeSortTile();
template <class T>
int mergeSortMergeTile();

// For the tests: the k-way split of every rank 0 .. total of 4 runs of ints,
// as the partition kernel computes it on the device with indices of type I
// (int or long long); split j of rank r is element r * 4 + j.
template <class I>
std::vector<long long> kwaySplitsOnDevice(const std::vector<std::vector<int>>& runs);

}  // namespace lab::tuned
