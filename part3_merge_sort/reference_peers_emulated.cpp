// The emulated build's stand-ins for the naive GPU merges of
// reference_peers.cu, an instructor file like it: emulated demos print no
// timing tables, so they only refuse.
// [instructor reference: files named reference* are not in the student release]
#include "reference_peers.hpp"

#include "../common/not_emulated.hpp"

namespace lab::peers {

void oneThreadMerge(const int*, long long, const int*, long long, int*) { notEmulated("the one-thread merge"); }
void rankMerge(const int*, long long, const int*, long long, int*) { notEmulated("the rank merge"); }
void rankMergeSort(int*, int*, long long) { notEmulated("the rank merge sort"); }

}  // namespace lab::peers
