// Part 1's student functions, by their names on the wire (serve.hpp).
#include "serve.hpp"

#include "../../part1_merge_path/part1.cuh"

namespace lab::judge {

Calls partCalls() {
    using Search = int (*)(const int*, int, const int*, int, int);
    using SearchTagged = int (*)(const Tagged*, int, const Tagged*, int, int);
    using SearchLong = long long (*)(const int*, long long, const int*, long long, long long);
    using SearchProbe = int (*)(const Probe*, int, const Probe*, int, int);
    return {{"part1Implementation", serveHost(&part1Implementation)},
            {"diagonalSearchOnHost<int>", serveHost(static_cast<Search>(&diagonalSearchOnHost))},
            {"diagonalSearchOnHost<Tagged>", serveHost(static_cast<SearchTagged>(&diagonalSearchOnHost))},
            {"diagonalSearchOnHost<int, long long>", serveHost(static_cast<SearchLong>(&diagonalSearchOnHost))},
            {"diagonalSearchOnHost<Probe>", serveHost(static_cast<SearchProbe>(&diagonalSearchOnHost))},
            {"mergeSmall<int>", serve(&mergeSmall<int>)},
            {"mergeSmall<Tagged>", serve(&mergeSmall<Tagged>)},
            {"mergeSmallMany<int>", serve(&mergeSmallMany<int>)},
            {"mergeSmallMany<Tagged>", serve(&mergeSmallMany<Tagged>)}};
}

}  // namespace lab::judge
