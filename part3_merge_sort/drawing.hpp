// ./part3's drawing: the partition stage on the merge path grid of small
// inputs. Tile boundaries are diagonals; where each meets the path is found by
// the LINKED partition kernel (mergePartition) when a GPU is there, and a
// crossing off the path is drawn as a red X.
#pragma once

#include <vector>

namespace lab {

// Returns how many tile boundaries the linked partition stage gets wrong (0
// without a GPU, when only the path is drawn). --step pauses between tiles.
long long drawPartition(const std::vector<int>& A, const std::vector<int>& B, int tile, bool gpu);

}  // namespace lab
