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

// Thread k's search as the linked diagonalSearch runs it: the same search on
// values that record each comparison (common/probe.hpp), printed in order,
// then the crossing it returns against the path's.
void traceSearch(const std::vector<int>& A, const std::vector<int>& B, long long k, long long pathI) {
    const long long nA = static_cast<long long>(A.size()), nB = static_cast<long long>(B.size());
    std::vector<Probe> pA, pB;
    for (std::size_t i = 0; i < A.size(); ++i) pA.push_back({A[i], static_cast<int>(i), 'A'});
    for (std::size_t j = 0; j < B.size(); ++j) pB.push_back({B[j], static_cast<int>(j), 'B'});
    std::vector<ProbeComparison> log;
    probeLog = &log;
    const int found = diagonalSearchOnHost(pA.data(), static_cast<int>(nA), pB.data(), static_cast<int>(nB),
                                           static_cast<int>(k));
    probeLog = nullptr;
    const long long lo = k > nB ? k - nB : 0, hi = k < nA ? k : nA;  // the diagonal's part inside the grid
    std::cout << "Thread " << k << " on diagonal i + j = " << k << " (i from " << lo << " to " << hi
              << "): the linked diagonalSearch (" << part1Implementation() << ") compared\n";
    if (log.empty()) std::cout << "  nothing\n";
    for (const ProbeComparison& c : log) {
        std::cout << "  " << c.left.array << "[" << c.left.index << "] = " << c.left.value << " " << c.op << " "
                  << c.right.array << "[" << c.right.index << "] = " << c.right.value << ": "
                  << (c.result ? "true" : "false");
        pauseStep();
        std::cout << "\n";
    }
    const bool inGrid = found >= lo && found <= hi;
    std::cout << "  and returned i = " << found << ", the point (" << found << ", " << k - found << ")"
              << (found == pathI ? paint(": where the path crosses", Colour::Green) + "\n"
                                 : paint(inGrid ? ": not where the path crosses (the X), so this thread would write a "
                                                  "wrong value"
                                                : ": a point outside the grid, so this thread would read outside A or B",
                                         Colour::Red) + "\n");
    std::cout << "  (" << log.size() << " comparison" << (log.size() == 1 ? "" : "s") << "; a binary search needs at most "
              << "about log2 of the diagonal's length)\n";
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
    if (!M.empty()) traceSearch(A, B, thread, points[static_cast<std::size_t>(thread)].i);

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
