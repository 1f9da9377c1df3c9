// Part 3's jobs (given): where tile t of a merge reads and writes. The
// kernels see a merge only through a job's mergeOf(t, tile), so that Q5's
// one merge (TwoArrays) and Q6's many merges of a sort pass (SortPass) run
// the same partition_k and mergeTiles_k.
#pragma once

namespace lab {

// The merge that tile t belongs to (inputs A, B, output M) and k0, the
// tile's first output (its first diagonal) counted from that merge's start.
template <class T>
struct TileMerge {
    const T* A;
    long long nA;
    const T* B;
    long long nB;
    T* M;
    long long k0;
};

// Q5: one merge of two arrays; tile t starts at diagonal t * tile.
template <class T>
struct TwoArrays {
    TileMerge<T> whole;  // k0 unused
    __device__ TileMerge<T> mergeOf(long long t, int tile) const {
        TileMerge<T> m = whole;
        m.k0 = t * tile;
        return m;
    }
};

// Q6: one pass of the sort: neighbouring sorted runs of `width` values of src
// are merged pairwise into dst. 2 * width is a multiple of the tile, so no
// tile straddles two merges: mergeOf(t) is the merge that tile t belongs to.
template <class T>
struct SortPass {
    const T* src;
    T* dst;
    long long n, width;
    __device__ TileMerge<T> mergeOf(long long t, int tile) const;  // Q6: defined in student.cu
};

}  // namespace lab
