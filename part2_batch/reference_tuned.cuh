// Part 2 beyond the questions: the batch merge and batch sort tuned for speed.
// [instructor reference: files named reference* are not in the student release]
//
// Same contract as Q3's mergeSmallBatch and Q4's sortSmall (part2.cuh), without
// the threads-per-block argument: these pick their own launch shape, several
// values per thread, which is what makes them fast and what Q3 and Q4 (one
// thread per output) do not allow. ./part2 and `make bench` time them as the
// "Q3 tuned" and "Q4 tuned" rows, next to the questions' reference.
#pragma once

namespace lab::tuned {

template <class T>
void mergeSmallBatch(const T* dIn, const int* dSplit, T* dOut, int d, long long N);

template <class T>
void sortSmall(const T* dIn, T* dOut, int d, long long N);

}  // namespace lab::tuned
