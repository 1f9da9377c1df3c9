// A value that writes down every comparison made with it. The Part 1 demo
// hands arrays of them to the linked diagonal search (yours or the
// reference's) and prints what that search compared, in order: the drawing
// shows your search's probes without holding a search of its own.
#pragma once

#include "hd.hpp"

#include <vector>

namespace lab {

struct Probe {
    int value;
    int index;    // its position in its array
    char array;   // 'A' or 'B'
};

// One comparison: left op right, and what it returned.
struct ProbeComparison {
    Probe left, right;
    const char* op;
    bool result;
};

// Where comparisons are written while the demo traces a search (host only).
inline std::vector<ProbeComparison>* probeLog = nullptr;

LAB_HD inline bool logProbe(const Probe& l, const Probe& r, const char* op, bool result) {
#ifndef __CUDA_ARCH__
    if (probeLog != nullptr) probeLog->push_back({l, r, op, result});
#else
    (void)l, (void)r, (void)op;
#endif
    return result;
}

LAB_HD inline bool operator<(const Probe& l, const Probe& r) { return logProbe(l, r, "<", l.value < r.value); }
LAB_HD inline bool operator<=(const Probe& l, const Probe& r) { return logProbe(l, r, "<=", l.value <= r.value); }
LAB_HD inline bool operator>(const Probe& l, const Probe& r) { return logProbe(l, r, ">", l.value > r.value); }
LAB_HD inline bool operator>=(const Probe& l, const Probe& r) { return logProbe(l, r, ">=", l.value >= r.value); }
LAB_HD inline bool operator==(const Probe& l, const Probe& r) { return logProbe(l, r, "==", l.value == r.value); }
LAB_HD inline bool operator!=(const Probe& l, const Probe& r) { return logProbe(l, r, "!=", l.value != r.value); }

}  // namespace lab
