// The bug gallery, for lectures: known-buggy variants of the lab's kernels,
// each run many times on fresh random inputs to show how often, and how, it
// goes wrong. The variants (reference_bugs.cu) are instructor material: the
// student release leaves them out, and ./extras then has no --bug option.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace lab {

// One run of a buggy kernel: what it wrote and what it should have.
struct BugTrial {
    std::vector<int> got, expected;
};

struct Bug {
    std::string name;      // for --bug NAME
    std::string question;  // whose reference avoids it
    std::string what;      // the bug, in one line
    std::string avoided;   // how the reference avoids it, in one line
    std::function<BugTrial(std::uint64_t seed)> trial;  // runs it once; may hang or fault
};

// The variants (defined in reference_bugs.cu, absent from the student copy).
const std::vector<Bug>& bugGallery();

// ./extras --bug NAME: `trials` runs of the named variant, each run in a
// child process that is killed after `timeoutS` seconds without an answer (a
// hang), unless `inProcess` (for compute-sanitizer: one process, no timeout).
// "list" names them all. Prints a summary; returns the exit status.
int runBugGallery(const std::string& name, int trials, double timeoutS, bool inProcess, std::uint64_t seed);

}  // namespace lab
