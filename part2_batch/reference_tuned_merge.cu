// The tuned batch merges alone: see the end of reference_tuned.cu.
#define LAB_TUNED_MERGES_ONLY 1
#include "reference_tuned.cu"
