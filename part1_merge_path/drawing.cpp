#include "drawing.hpp"

#include "part1.cuh"

#include "../common/merge_grid.hpp"
#include "../common/merge_path_host.hpp"
#include "../common/term.hpp"

#include <cstdio>
#include <iostream>
#include <string>

namespace lab {
namespace {

std::string join(const std::vector<int>& v) {
    std::string s;
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return "[" + s + "]";
}

int linkedSearch(const std::vector<int>& A, const std::vector<int>& B, long long k) {
    return diagonalSearchOnHost(A.data(), static_cast<int>(A.size()), B.data(), static_cast<int>(B.size()),
                                static_cast<int>(k));
}

// Thread k's binary search on its diagonal, probe by probe (the reference's
// steps), then what the linked search returns.
void traceSearch(const std::vector<int>& A, const std::vector<int>& B, long long k) {
    const long long nA = static_cast<long long>(A.size()), nB = static_cast<long long>(B.size());
    long long lo = k > nB ? k - nB : 0, hi = k < nA ? k : nA;
    std::cout << "Thread " << k << " searches diagonal i + j = " << k << " for i in [" << lo << ", " << hi << "]:\n";
    while (lo < hi) {
        const long long mid = lo + (hi - lo) / 2;
        const bool after = bGoesFirst(B[k - 1 - mid], A[mid]);
        std::cout << "  i = " << mid << ": B[" << k - 1 - mid << "] = " << B[k - 1 - mid]
                  << (after ? " <  " : " >= ") << "A[" << mid << "] = " << A[mid] << "  -> "
                  << (after ? "A[i] is not among the first k: look lower" : "A[i] is among the first k: look higher");
        (after ? hi : lo) = after ? mid : mid + 1;
        pauseStep();
        std::cout << "\n";
    }
    std::cout << "  crossing at (i, j) = (" << lo << ", " << k - lo << ")\n";
    const int linked = linkedSearch(A, B, k);
    const bool inGrid = linked >= (k > nB ? k - nB : 0) && linked <= (k < nA ? k : nA);
    std::cout << "  the linked diagonalSearch (" << part1Implementation() << ") returns i = " << linked
              << (linked == lo ? ": the same crossing\n"
                               : paint(inGrid ? ": a different crossing (the X), so this thread would write a wrong value"
                                              : ": a point outside the grid, so this thread would read outside A or B",
                                       Colour::Red) + "\n");
}

// Each thread's crossing by the linked search next to the path's.
int compareSearch(const std::vector<int>& A, const std::vector<int>& B, const std::vector<GridPoint>& points) {
    std::vector<long long> wrong;
    for (std::size_t k = 0; k < points.size(); ++k)
        if (linkedSearch(A, B, static_cast<long long>(k)) != points[k].i) wrong.push_back(static_cast<long long>(k));
    if (wrong.empty()) {
        std::cout << paint("The linked diagonalSearch finds every one of these crossings.", Colour::Green) << "\n";
        return 0;
    }
    std::cout << paint("The linked diagonalSearch (" + std::string(part1Implementation()) + ") disagrees with the "
                       "merge path on " + std::to_string(wrong.size()) + " of " + std::to_string(points.size()) +
                       " diagonals", Colour::Red) << ", first at k = " << wrong[0] << ":\n";
    for (std::size_t w = 0; w < wrong.size() && w < 8; ++w) {
        const long long k = wrong[w];
        const int i = linkedSearch(A, B, k);
        std::cout << "  k = " << k << ": path (" << points[k].i << ", " << points[k].j << "), search (" << i << ", "
                  << k - i << ")\n";
    }
    return static_cast<int>(wrong.size());
}

}  // namespace

int drawMergePath(const std::vector<int>& A, const std::vector<int>& B, long long thread) {
    std::cout << "A = " << join(A) << "\nB = " << join(B) << "\n\n";
    std::vector<Step> steps;
    const std::vector<int> M = mergePathSequential(A, B, &steps);
    const std::vector<GridPoint> points = pathPoints(steps);
    if (A.size() > kMaxDrawnSide || B.size() > kMaxDrawnSide) {
        std::cout << "(the grid is drawn for inputs up to " << kMaxDrawnSide << " x " << kMaxDrawnSide
                  << "; use smaller --a/--b to see it)\n\n";
        return compareSearch(A, B, points);
    }
    const int linked = linkedSearch(A, B, thread);
    std::cout << "The merge path grid: cell (i, j) is 1 when A[i] <= B[j]. The path (" << paint("o", Colour::Yellow)
              << ") separates the 1s from the 0s;\nthread " << thread << "'s diagonal is drawn "
              << paint("/", Colour::Cyan) << ", and the crossing the linked diagonalSearch finds is "
              << paint("@", Colour::Magenta) << "\n(on the path) or " << paint("X", Colour::Red)
              << " (off it: a wrong search).\n\n";
    drawMergeGrid(std::cout, A, B, {thread}, {{linked, thread - linked}});
    std::cout << "\n";
    if (!M.empty()) traceSearch(A, B, thread);

    std::cout << "\nEach thread k finds where the path crosses its diagonal i + j = k, then writes M[k]:\n";
    std::string line;
    for (std::size_t k = 0; k < M.size(); ++k) {
        const GridPoint p = points[k];
        char out[48], buf[96];
        std::snprintf(out, sizeof out, "M[%zu]=%s[%lld]=%d", k, steps[k] == Step::Down ? "A" : "B",
                      steps[k] == Step::Down ? p.i : p.j, M[k]);
        std::snprintf(buf, sizeof buf, "  t%-3zu (%2lld,%2lld) %-18s", k, p.i, p.j, out);
        line += buf;
        if (k % 3 == 2 || k + 1 == M.size()) {
            std::cout << line.erase(line.find_last_not_of(' ') + 1) << "\n";
            line.clear();
        }
    }
    std::cout << "\nM = " << join(M) << "\n\n";
    const int wrong = compareSearch(A, B, points);
    std::cout << "\n";
    return wrong;
}

}  // namespace lab
