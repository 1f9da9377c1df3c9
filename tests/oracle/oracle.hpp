// The trusted implementation of the launchers, for the grading harness.
//
// The harness never believes a report written by a process that ran student
// code. It runs every test case a second time, on the same seed, in a build
// that links these files instead of the submission (build/oracle/test_*),
// and passes a student's test only when both runs read back the same results
// (compared by the harness: tests/grading/results.py). So these launchers must produce
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
#include <cstddef>
#include <thread>
#include <type_traits>
#include <vector>

namespace lab::oracle {

template <class T>
std::vector<T> download(const T* device, long long n) {
    std::vector<T> host(static_cast<std::size_t>(n));
    if (n > 0) CUDA_CHECK(cudaMemcpy(host.data(), device, host.size() * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
}

template <class T>
void upload(T* device, const std::vector<T>& host) {
    if (!host.empty()) CUDA_CHECK(cudaMemcpy(device, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
}

// f(first, last) over [0, n) split among the machine's cores, each taking
// at least `grain` indices.
template <class F>
void parallelFor(long long n, F f, long long grain = 1 << 16) {
    const long long workers = std::max(1LL, std::min<long long>(std::thread::hardware_concurrency(), n / grain));
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

// std::stable_sort, on several threads for large arrays: sorted chunks, then
// rounds of pairwise stable merges. (ints are indistinguishable when equal,
// so std::sort gives them the same result, faster.)
template <class T>
void stableSort(std::vector<T>& v) {
    const long long n = static_cast<long long>(v.size());
    long long chunk = std::max(1LL << 20, n / static_cast<long long>(std::max(1u, std::thread::hardware_concurrency())));
    forEachSegment(n, chunk, [&](long long p) {
        const auto first = v.begin() + p * chunk, last = v.begin() + std::min(n, (p + 1) * chunk);
        if constexpr (std::is_same_v<T, int>) std::sort(first, last);
        else std::stable_sort(first, last);
    });
    std::vector<T> tmp(v.size());
    for (; chunk < n; chunk *= 2) {
        for (long long a = 0; a < n; a += 2 * chunk) {
            const long long mid = std::min(n, a + chunk), end = std::min(n, a + 2 * chunk);
            merge(v.begin() + a, mid - a, v.begin() + mid, end - mid, tmp.begin() + a);
        }
        v.swap(tmp);
    }
}

}  // namespace lab::oracle
