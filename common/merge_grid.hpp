// Draws the merge-path grid in the terminal (inputs up to about 32 x 32).
//
//             B:   4   7   8
//                o---o   .   .       o  point on the merge path
//       A[0]= 1  | 0 | 1   1         1  A[i] <= B[j]: A[i] goes out before B[j]
//                o   o---o   .       0  B[j] <  A[i]: B[j] goes out first
//
// Diagonals listed in `diagonals` are drawn through the grid ('/' on points
// off the path, '@' where the path crosses them): Part 1 marks one thread's
// diagonal, Part 3 the tile boundaries of the partition stage.
//
// `found`, when given, is where the linked code (a diagonal search, a
// partition kernel) says the path crosses those diagonals: '@' marks a found
// crossing that is on the path, a red 'X' one that is not (a wrong search).
#pragma once

#include "merge_path_host.hpp"

#include <cstddef>
#include <ostream>
#include <vector>

namespace lab {

constexpr std::size_t kMaxDrawnSide = 40;

void drawMergeGrid(std::ostream& os, const std::vector<int>& A, const std::vector<int>& B,
                   const std::vector<long long>& diagonals, const std::vector<GridPoint>& found = {});

}  // namespace lab
