// An emulated build (make EMULATE=1) prints no timing tables: it links each
// part's *_emulated.cpp in place of the GPU peers those tables time (CUB,
// Thrust, the naive GPU merges), whose functions refuse with this, should
// anything call them.
#pragma once

#include "cuda_check.hpp"

#include <string>

namespace lab::peers {

[[noreturn]] inline void notEmulated(const char* what) {
    throw Error(std::string(what) + " is not emulated: timing tables need a GPU");
}

}  // namespace lab::peers
