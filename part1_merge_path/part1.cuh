// Part 1 (Q1-Q2): merge path in one block, then many independent merges.
//
// This is the interface the graders and the demo call; students implement it
// in student.cu (and student_search.cuh) and do not change this file.
//
// Conventions of the whole lab:
//   - ascending order; merges are stable: on equal keys, A's element comes first;
//   - pointers named d* are device pointers; the launchers take device memory,
//     launch on the default stream and return without waiting for the kernel;
//   - a launcher refuses unsupported arguments by throwing lab::Error with a
//     message; it never runs a kernel on them.
// Element types: int keys, and lab::Tagged (key + tag) to check stability.
#pragma once

#include "../common/probe.hpp"
#include "../common/tagged.hpp"

namespace lab {

// Largest |A| + |B| one block merges: one thread per output element.
constexpr int kMaxSmallMerge = 1024;

// Which implementation this build links: "reference" or "student".
const char* part1Implementation();

// The launchers' argument checks, shared by every implementation (they are
// not part of the questions): throws lab::Error unless 0 <= nA, 0 <= nB,
// nA + nB <= kMaxSmallMerge, 0 <= count <= 2^31 - 1, and no pointer is null
// where there is something to merge.
void checkSmallMerge(const void* dA, int nA, const void* dB, int nB, const void* dM, long long count);

// Q1, step 1: the diagonal search (co-rank), run on the host for the graders.
// Returns how many of the first k outputs of the stable merge of A and B come
// from A: the i of the point (i, k - i) where the merge path crosses diagonal k.
// Requires A, B sorted, 0 <= k <= nA + nB.
int diagonalSearchOnHost(const int* A, int nA, const int* B, int nB, int k);
int diagonalSearchOnHost(const Tagged* A, int nA, const Tagged* B, int nB, int k);
long long diagonalSearchOnHost(const int* A, long long nA, const int* B, long long nB, long long k);
// The same search on values that record each comparison (common/probe.hpp):
// the Part 1 demo draws its probes.
int diagonalSearchOnHost(const Probe* A, int nA, const Probe* B, int nB, int k);

// Q1: dM[0, nA+nB) = stable merge of dA[0, nA) and dB[0, nB), in ONE block of
// threads (mergeSmall_k), one thread per output element.
// Requires 0 <= nA, 0 <= nB, nA + nB <= kMaxSmallMerge, dA and dB sorted,
// dM not overlapping the inputs. Nothing is launched when nA + nB == 0.
template <class T>
void mergeSmall(const T* dA, int nA, const T* dB, int nB, T* dM);

// Q2: `count` independent merges in one launch, one block per merge, all with
// the same sizes. Pair p is dA[p*nA, (p+1)*nA) and dB[p*nB, (p+1)*nB); its
// merge goes to dM[p*(nA+nB), (p+1)*(nA+nB)).
// Requires what mergeSmall requires, and 0 <= count <= 2^31 - 1.
template <class T>
void mergeSmallMany(const T* dA, int nA, const T* dB, int nB, T* dM, long long count);

}  // namespace lab
