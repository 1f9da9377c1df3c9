// The extras' given helpers, the same for every implementation: one
// comparator of a sorting network and the next power of two.
#pragma once

namespace lab {

// One comparator of a sorting network: the smaller value ends at a, the
// larger at b; equal values stay where they are.
template <class T>
__host__ __device__ void compareExchange(T& a, T& b) {
    if (b < a) {
        const T t = a;
        a = b;
        b = t;
    }
}

// The smallest power of two >= n (1 for n <= 1).
inline long long nextPow2(long long n) {
    long long p = 1;
    while (p < n) p *= 2;
    return p;
}

}  // namespace lab
