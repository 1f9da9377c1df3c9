// ./part1's drawings: the merge path grid of A and B, one thread's binary
// search on its diagonal, and every thread's crossing as found by the LINKED
// diagonalSearch (the student's in a student build), checked against the path.
#pragma once

#include <vector>

namespace lab {

// Draws the grid, traces thread `thread`'s search (pausing between probes
// with --step), lists what every thread writes, and compares the linked
// search with the path on every diagonal. Returns how many diagonals the
// linked search gets wrong.
int drawMergePath(const std::vector<int>& A, const std::vector<int>& B, long long thread);

}  // namespace lab
