#include "drawing.hpp"

#include "part3.cuh"

#include "../common/device_buffer.hpp"
#include "../common/merge_grid.hpp"
#include "../common/merge_path_host.hpp"
#include "../common/term.hpp"

#include <algorithm>
#include <iostream>
#include <string>

namespace lab {
namespace {

// "{0 0 8}": the values v[from, to), the first 8 and a count past them.
std::string slice(const std::vector<int>& v, long long from, long long to) {
    std::string s = "{";
    for (long long i = from; i < to && i < from + 8; ++i) s += (i > from ? " " : "") + std::to_string(v[i]);
    if (to - from > 8) s += " ... " + std::to_string(to - from - 8) + " more";
    return s + "}";
}

}  // namespace

long long drawPartition(const std::vector<int>& A, const std::vector<int>& B, int tile, bool gpu) {
    const long long nA = static_cast<long long>(A.size()), nB = static_cast<long long>(B.size()), n = nA + nB;
    const long long numTiles = (n + tile - 1) / tile;
    std::vector<Step> steps;
    mergePathSequential(A, B, &steps);
    const std::vector<GridPoint> path = pathPoints(steps);

    // Tile t begins at diagonal t * tile; the linked partition stage says
    // where the path crosses it (A's share of the outputs before the tile).
    std::vector<long long> bounds;
    std::vector<GridPoint> found;
    for (long long t = 0; t <= numTiles; ++t) bounds.push_back(std::min(t * tile, n));
    if (gpu && numTiles > 0) {
        DeviceBuffer<int> dA(A.size()), dB(B.size());
        DeviceBuffer<long long> dSplits(numTiles);
        dA.upload(A);
        dB.upload(B);
        mergePartition(dA.data(), nA, dB.data(), nB, tile, dSplits.data());
        const std::vector<long long> splits = dSplits.download();
        for (long long t = 0; t < numTiles; ++t) found.push_back({splits[t], t * tile - splits[t]});
    } else {
        for (long long t = 0; t < numTiles; ++t) found.push_back(path[t * tile]);
    }
    found.push_back({nA, nB});  // the last tile ends at the corner

    std::cout << "The partition stage with tiles of " << tile << " outputs: each tile boundary is a diagonal ("
              << paint("/", Colour::Cyan) << "),\nand one diagonal search per boundary finds where it meets the path ("
              << paint("@", Colour::Magenta) << (gpu ? "; a red X: the linked partition_k found a point off the path"
                                                     : "; no GPU: the host's crossings")
              << ").\nBlock t then merges only what lies between its two crossings.\n\n";
    if (A.size() <= kMaxDrawnSide && B.size() <= kMaxDrawnSide) drawMergeGrid(std::cout, A, B, bounds, found);
    else std::cout << "(the grid is drawn for inputs up to " << kMaxDrawnSide << " x " << kMaxDrawnSide << ")\n";
    std::cout << "\n";
    long long wrong = 0;
    for (long long t = 0; t < numTiles; ++t) {
        const GridPoint p = found[t], q = found[t + 1];
        const auto inGrid = [&](GridPoint g) { return g.i >= 0 && g.i <= nA && g.j >= 0 && g.j <= nB; };
        std::cout << "  block " << t << ": outputs [" << bounds[t] << ", " << bounds[t + 1] << ")";
        if (inGrid(p) && inGrid(q))
            std::cout << "  from A[" << p.i << ", " << q.i << ") = " << slice(A, p.i, q.i) << " and B[" << p.j << ", "
                      << q.j << ") = " << slice(B, p.j, q.j);
        else
            std::cout << "  from nowhere: crossing " << (inGrid(p) ? t + 1 : t) << " is outside the grid (i = "
                      << (inGrid(p) ? q.i : p.i) << ", never written or out of range)";
        if (p.i != path[bounds[t]].i) {
            ++wrong;
            std::cout << paint("  wrong: the path crosses diagonal " + std::to_string(bounds[t]) + " at (" +
                                   std::to_string(path[bounds[t]].i) + ", " + std::to_string(path[bounds[t]].j) + ")",
                               Colour::Red);
        }
        pauseStep();
        std::cout << "\n";
    }
    if (gpu)
        std::cout << (wrong == 0 ? paint("The linked partition_k finds every tile boundary.", Colour::Green)
                                 : paint("The linked partition_k (" + std::string(part3Implementation()) + ") gets " +
                                             std::to_string(wrong) + " of " + std::to_string(numTiles) +
                                             " tile boundaries wrong.", Colour::Red))
                  << "\n";
    std::cout << "\n";
    return wrong;
}

}  // namespace lab
