// The extras' student functions, by their names on the wire (serve.hpp).
#include "serve.hpp"

#include "../../extras_oddeven_bitonic/extras.cuh"

namespace lab::judge {

Calls partCalls() {
    return {{"extrasImplementation", serveHost(&extrasImplementation)},
            {"oddEvenSortBlock<int>", serve(&oddEvenSortBlock<int>)},
            {"oddEvenSortBlock<Tagged>", serve(&oddEvenSortBlock<Tagged>)},
            {"oddEvenSort<int>", serve(&oddEvenSort<int>)},
            {"oddEvenSort<Tagged>", serve(&oddEvenSort<Tagged>)},
            {"bitonicSortBlock<int>", serve(&bitonicSortBlock<int>)},
            {"bitonicSortBlock<Tagged>", serve(&bitonicSortBlock<Tagged>)},
            {"bitonicSort<int>", serve(&bitonicSort<int>)},
            {"bitonicSort<Tagged>", serve(&bitonicSort<Tagged>)}};
}

}  // namespace lab::judge
