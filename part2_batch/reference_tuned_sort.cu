// The tuned batch sorts alone: see the end of reference_tuned.cu.
#define LAB_TUNED_SORTS_ONLY 1
#include "reference_tuned.cu"
