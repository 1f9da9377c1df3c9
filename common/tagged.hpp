// A key that remembers where it came from, to catch unstable merges and sorts.
//
// Tagged values are ordered by key alone, so a merge or sort sees only the
// keys; the tag rides along. A stable algorithm keeps equal keys in their
// input order, so its output equals std::merge / std::stable_sort of the same
// input tag for tag. operator== compares key and tag (identity), which is what
// the checkers need.
#pragma once

#include "hd.hpp"

#include <ostream>

namespace lab {

struct alignas(8) Tagged {
    int key;
    int tag;
};

LAB_HD inline bool operator<(const Tagged& x, const Tagged& y) { return x.key < y.key; }
inline bool operator==(const Tagged& x, const Tagged& y) { return x.key == y.key && x.tag == y.tag; }
inline bool operator!=(const Tagged& x, const Tagged& y) { return !(x == y); }
inline std::ostream& operator<<(std::ostream& os, const Tagged& t) {
    return os << t.key << "#" << t.tag;
}

}  // namespace lab
