#include "drawing.hpp"

#include "extras.cuh"

#include "../common/device_buffer.hpp"
#include "../common/term.hpp"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <utility>

namespace lab {
namespace {

using Comparators = std::vector<std::pair<int, int>>;  // (lower wire, upper wire)
constexpr int kWire = 4;                                 // characters per wire

std::string label(const std::string& text) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%-16s", text.c_str());
    return buf;
}

std::string valuesRow(const std::vector<int>& v, const std::vector<bool>& moved) {
    std::string row;
    for (std::size_t w = 0; w < v.size(); ++w) {
        char cell[32];
        std::snprintf(cell, sizeof cell, "%*d", kWire, v[w]);
        row += moved[w] ? paint(cell, Colour::Yellow) : std::string(cell);
    }
    return row;
}

// One step: its comparators drawn as o---o between the wires they join (in as
// many rows as it takes for them not to overlap), then the values after it,
// those that moved in colour. Returns whether anything moved.
bool drawStep(const std::string& name, const Comparators& cs, std::vector<int>& v) {
    std::vector<std::string> rows;
    std::vector<std::vector<std::pair<int, int>>> used;  // per row: occupied wire spans
    for (auto [lo, hi] : cs) {
        std::size_t r = 0;
        for (; r < rows.size(); ++r) {
            bool free = true;
            for (auto [a, b] : used[r]) free &= hi < a || lo > b;
            if (free) break;
        }
        if (r == rows.size()) rows.emplace_back(kWire * v.size(), ' '), used.emplace_back();
        used[r].push_back({lo, hi});
        for (int c = kWire * lo + kWire - 1; c <= kWire * hi + kWire - 1; ++c) rows[r][c] = '-';
        rows[r][kWire * lo + kWire - 1] = rows[r][kWire * hi + kWire - 1] = 'o';
    }
    std::vector<bool> moved(v.size(), false);
    for (auto [lo, hi] : cs)
        if (v[hi] < v[lo]) std::swap(v[lo], v[hi]), moved[lo] = moved[hi] = true;
    for (std::size_t r = 0; r < rows.size(); ++r)
        std::cout << label(r == 0 ? name : "") << paint(rows[r].erase(rows[r].find_last_not_of(' ') + 1), Colour::Cyan)
                  << "\n";
    std::cout << label("") << valuesRow(v, moved);
    pauseStep();
    std::cout << "\n";
    for (bool m : moved)
        if (m) return true;
    return false;
}

void header(const std::vector<int>& v) {
    std::string wires;
    for (std::size_t w = 0; w < v.size(); ++w) {
        char cell[32];
        std::snprintf(cell, sizeof cell, "%*zu", kWire, w);
        wires += cell;
    }
    std::cout << label("wire") << paint(wires, Colour::Dim) << "\n"
              << label("input") << valuesRow(v, std::vector<bool>(v.size(), false)) << "\n";
}

// The linked one-block kernel on the same values, against the network's result.
long long compareLinked(const std::vector<int>& values, const std::vector<int>& expected, const char* kernel,
                        void (*sort)(int*, int)) {
    DeviceBuffer<int> d(values.size());
    d.upload(values);
    sort(d.data(), static_cast<int>(values.size()));
    const std::vector<int> got = d.download();
    long long wrong = 0;
    std::vector<bool> bad(got.size());
    for (std::size_t i = 0; i < got.size(); ++i) wrong += bad[i] = got[i] != expected[i];
    std::string row;
    for (std::size_t w = 0; w < got.size(); ++w) {
        char cell[32];
        std::snprintf(cell, sizeof cell, "%*d", kWire, got[w]);
        row += bad[w] ? paint(cell, Colour::Red) : std::string(cell);
    }
    std::cout << label(std::string("linked ") + kernel) << row << "\n"
              << (wrong == 0 ? paint("The linked kernel (" + std::string(extrasImplementation()) + ") agrees.", Colour::Green)
                             : paint("The linked kernel (" + std::string(extrasImplementation()) + ") got " +
                                         std::to_string(wrong) + " values wrong (red).", Colour::Red))
              << "\n";
    return wrong;
}

}  // namespace

long long drawOddEvenNetwork(const std::vector<int>& values, bool gpu) {
    const int n = static_cast<int>(values.size());
    std::cout << paint("Odd-even transposition sort (X1)", Colour::Bold) << ", n = " << n
              << ": phase p compares wires (i, i + 1) for every i of p's parity;\n"
              << "rounds of an even and an odd phase go on until a round moves nothing (o---o: a comparator,\n"
              << "the smaller value goes to the left wire; moved values in colour).\n\n";
    std::vector<int> v = values;
    header(v);
    for (int round = 0;; ++round) {
        bool moved = false;
        for (int p = 0; p < 2; ++p) {
            Comparators cs;
            for (int i = p; i + 1 < n; i += 2) cs.push_back({i, i + 1});
            moved |= drawStep("phase " + std::to_string(2 * round + p) + (p ? " odd" : " even"), cs, v);
        }
        if (!moved) {
            std::cout << label("") << "round " << round << " moved nothing: sorted, after " << 2 * round + 2
                      << " phases (n = " << n << " phases always suffice)\n";
            break;
        }
    }
    const long long wrong = gpu ? compareLinked(values, v, "X1", [](int* d, int m) { oddEvenSortBlock(d, m); }) : 0;
    std::cout << "\n";
    return wrong;
}

long long drawBitonicNetwork(const std::vector<int>& values, bool gpu) {
    const int n = static_cast<int>(values.size());
    std::vector<int> v = values;
#ifdef LAB_BITONIC_NETWORK
    std::cout << paint("Bitonic sort (X3)", Colour::Bold) << ", n = " << n << ": stages of size 2, 4, ..., the next "
              << "power of two; a stage's first step compares wire i\nwith its mirror, the next ones with i + half. "
              << "Comparators past wire " << n - 1 << " are skipped (+infinity there).\n\n";
    header(v);
    for (const NetworkStep& step : bitonicNetwork(n)) drawStep(step.name, step.comparators, v);
#else
    // The student copy has no network to draw (it would be X3's answer): the
    // linked kernel's result is compared with the sorted values instead.
    std::cout << paint("Bitonic sort (X3)", Colour::Bold) << ", n = " << n << ": your bitonicSortBlock against the "
              << "sorted values (the network's drawing is in the instructors' copy).\n\n";
    header(v);
    std::sort(v.begin(), v.end());
    std::cout << label("sorted") << valuesRow(v, std::vector<bool>(v.size(), false)) << "\n";
#endif
    const long long wrong = gpu ? compareLinked(values, v, "X3", [](int* d, int m) { bitonicSortBlock(d, m); }) : 0;
    std::cout << "\n";
    return wrong;
}

}  // namespace lab
