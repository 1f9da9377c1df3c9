// Part 3's student functions, by their names on the wire (serve.hpp).
#include "serve.hpp"

#include "../../part3_merge_sort/part3.cuh"

namespace lab::judge {

Calls partCalls() {
    return {{"part3Implementation", serveHost(&part3Implementation)},
            {"mergeLarge<int>", serve(&mergeLarge<int>)},
            {"mergeLarge<Tagged>", serve(&mergeLarge<Tagged>)},
            {"mergeSort<int>", serve(&mergeSort<int>)},
            {"mergeSort<Tagged>", serve(&mergeSort<Tagged>)},
            {"mergePartition", serve(&mergePartition)},
            {"mergeLargeShaped", serve(&mergeLargeShaped)},
            {"mergeSortShaped", serve(&mergeSortShaped)},
            {"mergeLargeDefaultShape", serveHost(&mergeLargeDefaultShape)},
            {"mergeSortDefaultShape", serveHost(&mergeSortDefaultShape)}};
}

}  // namespace lab::judge
