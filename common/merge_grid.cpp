#include "merge_grid.hpp"

#include "merge_path_host.hpp"
#include "term.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>

namespace lab {

std::vector<GridPoint> pathPoints(const std::vector<Step>& path) {
    std::vector<GridPoint> points{{0, 0}};
    for (Step s : path) {
        GridPoint p = points.back();
        (s == Step::Down ? p.i : p.j) += 1;
        points.push_back(p);
    }
    return points;
}

namespace {

std::string padLeft(const std::string& s, std::size_t width) {
    return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

}  // namespace

void drawMergeGrid(std::ostream& out, const std::vector<int>& A, const std::vector<int>& B,
                   const std::vector<long long>& diagonals, const std::vector<GridPoint>& found) {
    std::ostringstream os;
    const long long nA = static_cast<long long>(A.size()), nB = static_cast<long long>(B.size());
    std::vector<Step> steps;
    mergePathSequential(A, B, &steps);
    const std::vector<GridPoint> points = pathPoints(steps);

    // onPath[i][j]; down[i][j]: the path leaves (i, j) downwards; right likewise.
    std::vector<std::vector<char>> onPath(nA + 1, std::vector<char>(nB + 1, 0));
    auto down = onPath, right = onPath;
    for (std::size_t k = 0; k < points.size(); ++k) {
        const GridPoint p = points[k];
        onPath[p.i][p.j] = 1;
        if (k < steps.size()) (steps[k] == Step::Down ? down : right)[p.i][p.j] = 1;
    }
    const auto marked = [&](long long i, long long j) {
        return std::find(diagonals.begin(), diagonals.end(), i + j) != diagonals.end();
    };
    const auto isFound = [&](long long i, long long j) {
        return std::any_of(found.begin(), found.end(), [&](GridPoint p) { return p.i == i && p.j == j; });
    };
    // The mark of point (i, j): '@' where a marked diagonal meets the path (or,
    // given `found`, where a found crossing is on the path), 'X' where a found
    // crossing is off the path, '/' elsewhere on a marked diagonal.
    const auto mark = [&](long long i, long long j) {
        if (!found.empty() && isFound(i, j))
            return onPath[i][j] ? paint("@", Colour::Magenta) : paint("X", Colour::Red);
        if (onPath[i][j])
            return found.empty() && marked(i, j) ? paint("@", Colour::Magenta) : paint("o", Colour::Yellow);
        return marked(i, j) ? paint("/", Colour::Cyan) : paint(".", Colour::Dim);
    };

    // Row labels "A[12]=-345 " all get the same width.
    std::size_t labelWidth = 0;
    for (long long i = 0; i < nA; ++i)
        labelWidth = std::max(labelWidth, ("A[" + std::to_string(i) + "]=" + std::to_string(A[i])).size());
    labelWidth += 1;
    const std::string margin(labelWidth, ' ');

    // Header: B's values centred over their columns.
    os << padLeft("B:", labelWidth);
    for (long long j = 0; j < nB; ++j) os << padLeft(std::to_string(B[j]), 3) << (j + 1 < nB ? " " : "");
    os << "\n";

    for (long long i = 0; i <= nA; ++i) {
        // Points of grid row i and the rightward steps between them.
        os << margin;
        for (long long j = 0; j <= nB; ++j) {
            os << mark(i, j);
            if (j < nB) os << (right[i][j] ? paint("---", Colour::Yellow) : "   ");
        }
        os << "\n";
        if (i == nA) break;
        // Cells of row i: 1 when A[i] <= B[j], and the downward steps.
        os << padLeft("A[" + std::to_string(i) + "]=" + std::to_string(A[i]), labelWidth - 1) << " ";
        for (long long j = 0; j <= nB; ++j) {
            os << (down[i][j] ? paint("|", Colour::Yellow) : " ");
            if (j < nB) {
                const bool aFirst = !bGoesFirst(B[j], A[i]);
                os << " " << (aFirst ? paint("1", Colour::Green) : paint("0", Colour::Dim)) << " ";
            }
        }
        os << "\n";
    }
    // Same text without trailing blanks.
    std::istringstream lines(os.str());
    for (std::string line; std::getline(lines, line);) out << line.erase(line.find_last_not_of(' ') + 1) << "\n";
}

}  // namespace lab
