// The trusted implementation of the launchers, for the grading harness.
//
// The harness never believes a report written by a process that ran student
// code. It runs every test case a second time, on the same seed, in a build
// that links these files instead of the submission (build/oracle/test_*),
// and passes a student's test only when both runs read back the same results
// (compared by the harness: tests/grading/harness/results.py). So these launchers must produce
// exactly the outputs a correct GPU implementation produces: they copy the
// inputs to the host, merge or sort there with std::merge / std::stable_sort
// (stable, A first on ties), and copy the result back. No kernel, no Merge
// Path: they give nothing away, and ship with the student copy.
//
// They call the same argument checks as the skeleton and the reference
// (the parts' shared files), so the refusal tests behave alike. The [large]
// tier's arrays (past 2^31 values) are merged and sorted on several threads.
#pragma once

#include "../../common/cuda_check.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <utility>
#include <cstddef>
#include <thread>
#include <type_traits>
#include <vector>

namespace lab::oracle {

// f(first, last) over [0, n) split among the machine's cores, each taking
// at least `grain` indices.
template <class F>
void parallelFor(long long n, F f, long long grain = 1 << 16) {
    const long long workers = std::max(1LL, std::min<long long>(std::thread::hardware_concurrency(), n / grain));
    if (workers == 1) return f(0LL, n);  // no thread for small work: most calls are small
    std::vector<std::thread> threads;
    for (long long w = 0; w < workers; ++w)
        threads.emplace_back([=] { f(n * w / workers, n * (w + 1) / workers); });
    for (auto& t : threads) t.join();
}

// Segment p of `seg` values is [p * seg, (p + 1) * seg); f(p) for every segment.
template <class F>
void forEachSegment(long long n, long long seg, F f) {
    const long long segments = seg > 0 ? (n + seg - 1) / seg : 0;
    parallelFor(
        segments,
        [&](long long first, long long last) {
            for (long long p = first; p < last; ++p) f(p);
        },
        std::max(1LL, (1LL << 16) / std::max(1LL, seg)));  // about 2^16 values a worker at least
}

// A host array whose values start undefined: std::vector<T>(n) would write
// n zeros on one thread first, seconds for the [large] tier's arrays.
template <class T>
struct Uninitialized : std::allocator<T> {
    template <class U>
    struct rebind {
        using other = Uninitialized<U>;
    };
    Uninitialized() = default;
    template <class U>
    Uninitialized(const Uninitialized<U>&) {}
    template <class U>
    void construct(U* p) { ::new (static_cast<void*>(p)) U; }
    template <class U, class... Args>
    void construct(U* p, Args&&... args) { ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...); }
};
template <class T>
using Host = std::vector<T, Uninitialized<T>>;

// n values of T on the host, their pages touched on every core (one thread
// faulting in gigabytes of pages is the slow part of a large copy).
template <class T>
Host<T> hostArray(long long n) {
    Host<T> host(static_cast<std::size_t>(n));
    parallelFor(n, [&](long long first, long long last) {
        std::memset(static_cast<void*>(host.data() + first), 0, static_cast<std::size_t>(last - first) * sizeof(T));
    }, 1 << 22);
    return host;
}

template <class T>
Host<T> download(const T* device, long long n) {
    Host<T> host = hostArray<T>(n);
    if (n > 0) CUDA_CHECK(cudaMemcpy(host.data(), device, host.size() * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
}

template <class T>
void upload(T* device, const Host<T>& host) {
    if (!host.empty()) CUDA_CHECK(cudaMemcpy(device, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
}

// std::merge of [a, a + na) and [b, b + nb) into out, on several threads for
// large inputs. The pieces are cut at values of A: the piece that starts at
// A[i] starts in B at the first value not less than A[i], so every equal key
// of A still comes before those of B (stable).
template <class It, class Out>
void merge(It a, long long na, It b, long long nb, Out out) {
    const long long pieces = std::max(1LL, std::min<long long>(std::thread::hardware_concurrency(), (na + nb) >> 20));
    if (pieces == 1 || na == 0) {
        std::merge(a, a + na, b, b + nb, out);
        return;
    }
    std::vector<long long> cutA(pieces + 1), cutB(pieces + 1);
    for (long long p = 0; p <= pieces; ++p) {
        cutA[p] = na * p / pieces;
        cutB[p] = p == pieces ? nb : std::lower_bound(b, b + nb, a[cutA[p]]) - b;
    }
    cutB[0] = 0;
    parallelFor(
        pieces,
        [&](long long first, long long last) {
            for (long long p = first; p < last; ++p)
                std::merge(a + cutA[p], a + cutA[p + 1], b + cutB[p], b + cutB[p + 1], out + cutA[p] + cutB[p]);
        },
        1);
}

// Ints sorted by their bits, least significant byte first (an LSD radix
// sort): four passes, each a stable scatter by one byte on every core. Each
// worker counts its own slice's bytes, so it knows where each of its values
// goes; the sign bit is flipped so that negative keys come first.
inline void radixSort(Host<int>& v) {
    const long long n = static_cast<long long>(v.size());
    const long long workers = std::max(1LL, std::min<long long>(std::thread::hardware_concurrency(), n >> 20));
    const auto slice = [&](long long w) { return n * w / workers; };
    const auto byteOf = [](int x, int shift) { return ((static_cast<unsigned>(x) ^ 0x80000000u) >> shift) & 255u; };
    Host<int> tmp = hostArray<int>(n);
    std::vector<std::array<long long, 256>> place(static_cast<std::size_t>(workers));
    for (int shift = 0; shift < 32; shift += 8) {
        // Step 1: each worker counts the bytes of its slice.
        parallelFor(workers, [&](long long first, long long last) {
            for (long long w = first; w < last; ++w) {
                place[w].fill(0);
                for (long long i = slice(w); i < slice(w + 1); ++i) ++place[w][byteOf(v[i], shift)];
            }
        }, 1);
        // Step 2: where each worker's run of each byte starts (byte, then worker).
        long long at = 0;
        for (unsigned b = 0; b < 256; ++b)
            for (long long w = 0; w < workers; ++w) {
                const long long count = place[w][b];
                place[w][b] = at;
                at += count;
            }
        // Step 3: each worker moves its values there, in order.
        parallelFor(workers, [&](long long first, long long last) {
            for (long long w = first; w < last; ++w)
                for (long long i = slice(w); i < slice(w + 1); ++i) tmp[place[w][byteOf(v[i], shift)]++] = v[i];
        }, 1);
        v.swap(tmp);
    }
}

// std::stable_sort, on several threads for large arrays: sorted chunks, then
// rounds of pairwise stable merges. Ints are indistinguishable when equal,
// so any sort gives them the same result: a radix sort, for large arrays.
template <class T>
void stableSort(Host<T>& v) {
    const long long n = static_cast<long long>(v.size());
    if constexpr (std::is_same_v<T, int>) {
        if (n >= (1LL << 24)) return radixSort(v);
        return std::sort(v.begin(), v.end());
    }
    long long chunk = std::max(1LL << 20, n / static_cast<long long>(std::max(1u, std::thread::hardware_concurrency())));
    forEachSegment(n, chunk, [&](long long p) {
        std::stable_sort(v.begin() + p * chunk, v.begin() + std::min(n, (p + 1) * chunk));
    });
    Host<T> tmp = hostArray<T>(n);
    for (; chunk < n; chunk *= 2) {
        for (long long a = 0; a < n; a += 2 * chunk) {
            const long long mid = std::min(n, a + chunk), end = std::min(n, a + 2 * chunk);
            merge(v.begin() + a, mid - a, v.begin() + mid, end - mid, tmp.begin() + a);
        }
        v.swap(tmp);
    }
}

}  // namespace lab::oracle
