// Part 3 reference: the tile helpers of Q5's merge stage and Q6's tile sort,
// shared with the tuned sort (reference_tuned_sort.cu) so that both run the
// same code.
// [instructor reference: files named reference* are not in the student release]
//
// This header includes nothing and opens no namespace: reference.cu includes
// it inside namespace lab, within its Q5 region (so that the reference and the
// student file still differ only inside their regions), and the tuned sort
// inside lab::tuned. Handed in as student files, the reference carries this
// text in place of the include (tests/redteam/faults.py, reference_submission).
#pragma once

// [Q5 begins] -------------------------------------------------------------------
// Global -> shared, coalesced: s[x] = at(x) for x in [0, len), consecutive
// threads at consecutive x. Tuning 4: a full tile issues each thread's ITEMS loads
// before its first store, so that ITEMS loads per thread are in flight at
// once (memory latency is hidden by having many loads outstanding).
template <int THREADS, int ITEMS, class T, class At>
__device__ void loadTile(T* s, int len, At at) {
    if (len == THREADS * ITEMS) {
        T r[ITEMS];
#pragma unroll
        for (int q = 0; q < ITEMS; ++q) r[q] = at(threadIdx.x + q * THREADS);
#pragma unroll
        for (int q = 0; q < ITEMS; ++q) s[threadIdx.x + q * THREADS] = r[q];
    } else {
        for (int x = threadIdx.x; x < len; x += THREADS) s[x] = at(x);
    }
}

// Outputs to global memory, coalesced: v holds outputs [kk, kk + ITEMS) of
// the tile (len outputs in all); they go to s (word kk + r: ITEMS apart
// across the warp, see reference.cu's Tuning 2 on banks), then from s to
// dst[0, len), consecutive threads at consecutive addresses. s must be free
// (a barrier after its last reads).
template <int THREADS, int ITEMS, class T>
__device__ void storeTile(T* s, const T (&v)[ITEMS], int kk, int len, T* dst) {
#pragma unroll
    for (int r = 0; r < ITEMS; ++r)
        if (kk + r < len) s[kk + r] = v[r];
    __syncthreads();
    if (len == THREADS * ITEMS) {
#pragma unroll
        for (int q = 0; q < ITEMS; ++q) dst[threadIdx.x + q * THREADS] = s[threadIdx.x + q * THREADS];
    } else {
        for (int x = threadIdx.x; x < len; x += THREADS) dst[x] = s[x];
    }
}
// [Q5 ends] ---------------------------------------------------------------------

// [Q6 begins] -------------------------------------------------------------------
// Stable odd-even transposition sort of v[0, count) in registers: ITEMS
// phases of neighbour compare-and-swaps, alternately at even and odd pairs;
// neighbours swap only when the right one is strictly smaller.
template <int ITEMS, class T>
__device__ void sortRegisters(T (&v)[ITEMS], int count) {
#pragma unroll
    for (int phase = 0; phase < ITEMS; ++phase) {
#pragma unroll
        for (int r = phase % 2; r + 1 < ITEMS; r += 2) {
            if (r + 1 < count && bGoesFirst(v[r + 1], v[r])) {
                const T x = v[r];
                v[r] = v[r + 1];
                v[r + 1] = x;
            }
        }
    }
}
// [Q6 ends] ---------------------------------------------------------------------
