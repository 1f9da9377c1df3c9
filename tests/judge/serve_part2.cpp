// Part 2's student functions, by their names on the wire (serve.hpp).
#include "serve.hpp"

#include "../../part2_batch/part2.cuh"

namespace lab::judge {

Calls partCalls() {
    return {{"part2Implementation", serveHost(&part2Implementation)},
            {"mergeSmallBatch<int>", serve(&mergeSmallBatch<int>)},
            {"mergeSmallBatch<Tagged>", serve(&mergeSmallBatch<Tagged>)},
            {"sortSmall<int>", serve(&sortSmall<int>)},
            {"sortSmall<Tagged>", serve(&sortSmall<Tagged>)}};
}

}  // namespace lab::judge
