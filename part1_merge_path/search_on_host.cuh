// Part 1's given host wrappers of the diagonal search, the same for every
// implementation: the graders test the search on the host, and the demo traces
// its comparisons (common/probe.hpp). Included by student.cu and reference.cu
// after their search (student_search.cuh or reference_search.cuh).
#pragma once

#include "part1.cuh"

namespace lab {

int diagonalSearchOnHost(const int* A, int nA, const int* B, int nB, int k) {
    return diagonalSearch(A, nA, B, nB, k);
}
int diagonalSearchOnHost(const Tagged* A, int nA, const Tagged* B, int nB, int k) {
    return diagonalSearch(A, nA, B, nB, k);
}
long long diagonalSearchOnHost(const int* A, long long nA, const int* B, long long nB, long long k) {
    return diagonalSearch(A, nA, B, nB, k);
}
int diagonalSearchOnHost(const Probe* A, int nA, const Probe* B, int nB, int k) {
    return diagonalSearch(A, nA, B, nB, k);
}

}  // namespace lab
