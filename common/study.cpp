#include "study.hpp"

#include "cuda_check.hpp"
#include "gpu.hpp"

#include <cstdio>
#include <fstream>
#include <iostream>

namespace lab {

void startStudyCsv(const std::string& path) {
    if (path.empty()) return;
    std::ofstream csv(path, std::ios::trunc);
    csv << "study,implementation,n,d,shape,median_ms,keys_per_s,peer,peer_ms,ratio,gpu\n";
    if (!csv) throw Error("cannot write " + path);
}

StudyTable::StudyTable(std::string study, std::string title, std::string implementation)
    : study_(std::move(study)), title_(std::move(title)), implementation_(std::move(implementation)) {}

void StudyTable::add(StudyRow row) { rows_.push_back(std::move(row)); }

bool StudyTable::fits(long long n, double bytes, const std::string& shape) {
    const double free = static_cast<double>(freeDeviceBytes());
    if (bytes * 1.1 + 64.0 * (1 << 20) <= free) return true;
    const std::string line = "left out: " + study_ + " n = " + std::to_string(n) +
                             (shape.empty() ? "" : " shape " + shape) + ": needs about " + formatBytes(bytes) +
                             " of device memory, " + formatBytes(free) + " free";
    std::cout << line << std::endl;
    leftOut_.push_back(line);
    return false;
}

void StudyTable::print() const {
    bool anyD = false, anyShape = false;
    for (const StudyRow& r : rows_) anyD |= r.d > 0, anyShape |= !r.shape.empty();
    std::cout << study_ << ": " << title_ << "\n";
    std::printf("%11s", "n");
    if (anyD) std::printf(" %5s", "d");
    if (anyShape) std::printf(" %7s", "shape");
    std::printf(" %10s %9s", "ours ms", "Gkeys/s");
    if (!rows_.empty())
        for (const Peer& p : rows_[0].peers) std::printf("  %s ms, ours/it", p.name.c_str());
    std::printf("\n");
    for (const StudyRow& r : rows_) {
        std::printf("%11lld", r.n);
        if (anyD) std::printf(" %5d", r.d);
        if (anyShape) std::printf(" %7s", r.shape.c_str());
        std::printf(" %10.3f %9.2f", r.ms, r.n / (r.ms * 1e6));
        for (const Peer& p : r.peers) {
            const int width = static_cast<int>(p.name.size()) + 3;
            if (p.ms < 0) std::printf("  %*s %7s", width, "-", "-");
            else std::printf("  %*.3f %7.2f", width, p.ms, r.ms / p.ms);
        }
        std::printf("\n");
    }
    for (const std::string& line : leftOut_) std::cout << line << "\n";
    std::cout << "(ours/it = our time / its time: below 1, ours is faster)\n\n";
}

void StudyTable::appendCsv(const std::string& path) const {
    if (path.empty()) return;
    std::ofstream csv(path, std::ios::app);
    if (!csv) throw Error("cannot write " + path);
    std::string gpu = detectGpu().name;
    for (char& c : gpu)
        if (c == ',') c = ' ';
    for (const StudyRow& r : rows_) {
        const std::string head = study_ + "," + implementation_ + "," + std::to_string(r.n) + "," +
                                 std::to_string(r.d) + "," + r.shape + ",";
        char ours[64];
        std::snprintf(ours, sizeof ours, "%.6g,%.6g,", r.ms, r.n / (r.ms * 1e-3));
        if (r.peers.empty()) csv << head << ours << ",,," << gpu << "\n";
        for (const Peer& p : r.peers) {
            if (p.ms < 0) continue;
            char tail[64];
            std::snprintf(tail, sizeof tail, "%.6g,%.6g,", p.ms, r.ms / p.ms);
            csv << head << ours << p.name << "," << tail << gpu << "\n";
        }
    }
    if (!csv) throw Error("cannot write " + path);
}

}  // namespace lab
