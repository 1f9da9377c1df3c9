// One table for every timing study of the lab: the demos print it and write
// the same rows as CSV, with one schema for all of them.
//
// A row is one measurement of the lab's kernel (its median time over runs)
// at one configuration, next to one peer measured in the same run:
//
//   study,implementation,n,d,shape,median_ms,keys_per_s,peer,peer_ms,ratio,gpu
//   Q5,student,1000000,0,,0.5,2e+09,thrust::merge,0.25,2,<the GPU's name>   (made-up figures)
//
// n is the number of keys processed, d the segment size (0 when there is
// none), shape "threads x items" (empty when fixed); ratio = median_ms /
// peer_ms, lower is better (below 1: ours is faster). A measurement without a
// peer has empty peer columns.
#pragma once

#include <string>
#include <vector>

namespace lab {

struct Peer {
    std::string name;
    double ms;  // < 0: not measured at this size (too slow); shown as "-"
};

struct StudyRow {
    long long n = 0;
    int d = 0;
    std::string shape;
    double ms = 0;            // the lab's kernel
    std::vector<Peer> peers;  // in the order they are to be shown
};

class StudyTable {
public:
    // `study` is the question's label ("Q2"); `implementation` the build's.
    StudyTable(std::string study, std::string title, std::string implementation);
    void add(StudyRow row);

    // Whether a row that holds about `bytes` of device memory at once fits in
    // what the GPU has free now (with a margin). When not, the row is left
    // out: one line says so now, with what it needs, and print() lists it
    // again under the table (make bench collects those lines).
    bool fits(long long n, double bytes, const std::string& shape = "");

    // Terminal: one line per row: n, d and shape where used, our time, our
    // keys/s, each peer's time and our ratio to it.
    void print() const;

    // Appends the rows to `path` (started by startStudyCsv) in the lab's CSV
    // schema; nothing when path is empty. Throws lab::Error when the file
    // cannot be written.
    void appendCsv(const std::string& path) const;

private:
    std::string study_, title_, implementation_;
    std::vector<StudyRow> rows_;
    std::vector<std::string> leftOut_;
};

// Creates (or empties) the CSV file at `path` and writes the schema's header;
// nothing when path is empty. Throws lab::Error when it cannot.
void startStudyCsv(const std::string& path);

}  // namespace lab
