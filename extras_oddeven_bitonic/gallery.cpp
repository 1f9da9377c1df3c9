// The bug gallery's runner: trials in child processes, with a timeout.
//
// A hung kernel cannot be stopped from inside its process, and a kernel fault
// leaves the process's CUDA context unusable; so the parent never touches
// CUDA: it forks a child that runs trials and reports one line per trial
// through a pipe, kills it when a trial takes too long, and starts a new one
// for the remaining trials after a hang or a fault.
#include "bug_gallery.hpp"

#include "../common/checks.hpp"
#include "../common/cli.hpp"
#include "../common/gpu.hpp"
#include "../common/term.hpp"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <poll.h>
#include <signal.h>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace lab {

#ifdef LAB_NO_BUG_GALLERY
const std::vector<Bug>& bugGallery() {
    static const std::vector<Bug> none;
    return none;
}
#endif

namespace {

// "correct", or what went wrong, and an example.
std::pair<std::string, std::string> classify(const BugTrial& t) {
    if (t.got == t.expected) return {"correct", ""};
    std::size_t wrong = 0, first = t.got.size();
    for (std::size_t i = 0; i < t.got.size() && i < t.expected.size(); ++i)
        if (t.got[i] != t.expected[i] && wrong++ == 0) first = i;
    std::ostringstream ex;
    if (first < t.got.size())
        ex << "index " << first << ": got " << t.got[first] << ", expected " << t.expected[first] << " (" << wrong
           << " of " << t.got.size() << " differ)";
    if (std::any_of(t.got.begin(), t.got.end(), [](int v) { return isPoison(v); }))
        return {"wrong: outputs never written", ex.str()};
    if (!std::is_sorted(t.got.begin(), t.got.end())) return {"wrong: unsorted output", ex.str()};
    return {"wrong: sorted, but values lost or duplicated", ex.str()};
}

// One trial, as a line "outcome\texample".
std::string runTrial(const Bug& bug, std::uint64_t seed) {
    try {
        const auto [outcome, example] = classify(bug.trial(seed));
        return outcome + "\t" + example;
    } catch (const Error& e) {
        return "kernel fault\t" + std::string(e.what());
    }
}

struct Tally {
    std::map<std::string, int> count;
    std::map<std::string, std::string> example;
    void add(const std::string& line, int trial) {
        const auto tab = line.find('\t');
        const std::string outcome = line.substr(0, tab), ex = tab == std::string::npos ? "" : line.substr(tab + 1);
        if (count[outcome]++ == 0 && !ex.empty()) example[outcome] = "trial " + std::to_string(trial) + ": " + ex;
    }
};

// Runs trials [from, trials) in a child; returns how many it answered for
// before it ended or was killed (a hang: the next one is then counted).
int childRun(const Bug& bug, int from, int trials, double timeoutS, std::uint64_t seed, Tally& tally) {
    int fds[2];
    if (pipe(fds) != 0) throw Error("pipe failed");
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid < 0) throw Error("fork failed");
    if (pid == 0) {  // the child: the only process that touches CUDA
        close(fds[0]);
        if (!detectGpu().available) {
            const std::string line = "no GPU\t" + detectGpu().reason + "\n";
            (void)!write(fds[1], line.data(), line.size());
            _exit(0);
        }
        for (int t = from; t < trials; ++t) {
            const std::string line = runTrial(bug, seed + t) + "\n";
            (void)!write(fds[1], line.data(), line.size());
            if (line.rfind("kernel fault", 0) == 0) break;  // the context is gone
        }
        _exit(0);
    }
    close(fds[1]);
    int t = from;
    std::string buffer;
    for (;;) {
        pollfd p{fds[0], POLLIN, 0};
        if (poll(&p, 1, static_cast<int>(timeoutS * 1000)) == 0) {  // no answer in time: a hang
            kill(pid, SIGKILL);
            tally.add("hang (killed after " + std::to_string(static_cast<int>(timeoutS)) + " s)\t", t++);
            break;
        }
        char chunk[4096];
        const ssize_t got = read(fds[0], chunk, sizeof chunk);
        if (got <= 0) break;  // the child is done (or died)
        buffer.append(chunk, static_cast<std::size_t>(got));
        for (std::size_t nl; (nl = buffer.find('\n')) != std::string::npos; buffer.erase(0, nl + 1)) {
            const std::string line = buffer.substr(0, nl);
            if (line.rfind("no GPU", 0) == 0) throw Error("the bug gallery needs a GPU: " + line.substr(7));
            tally.add(line, t++);
        }
    }
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (t < trials && WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL)
        tally.add("process crashed (signal " + std::to_string(WTERMSIG(status)) + ")\t", t++);
    return t;
}

}  // namespace

int runBugGallery(const std::string& name, int trials, double timeoutS, bool inProcess, std::uint64_t seed) {
    const std::vector<Bug>& bugs = bugGallery();
    if (bugs.empty()) {
        std::cout << "The bug gallery is instructor material and is not in this copy of the lab.\n";
        return 2;
    }
    if (name == "list") {
        std::cout << "Known-buggy variants (./extras --bug NAME):\n";
        for (const Bug& b : bugs) std::cout << "  " << b.name << " (" << b.question << "): " << b.what << "\n";
        return 0;
    }
    const auto it = std::find_if(bugs.begin(), bugs.end(), [&](const Bug& b) { return b.name == name; });
    if (it == bugs.end()) throw UsageError("no bug named '" + name + "'; --bug list names them");
    std::cout << paint("Bug gallery: " + it->name, Colour::Bold) << " (" << it->question << ")\n"
              << "  the bug:  " << it->what << "\n  avoided:  " << it->avoided << "\n  " << trials
              << " trials on fresh random inputs (seed " << seed << ")"
              << (inProcess ? ", in this process\n\n" : ", in child processes, a trial killed after " +
                                                          std::to_string(static_cast<int>(timeoutS)) + " s\n\n");
    Tally tally;
    if (inProcess) {
        if (!detectGpu().available) throw Error("the bug gallery needs a GPU: " + detectGpu().reason);
        for (int t = 0; t < trials; ++t) {
            const std::string line = runTrial(*it, seed + t);
            tally.add(line, t);
            if (line.rfind("kernel fault", 0) == 0) break;
        }
    } else {
        for (int t = 0; t < trials;) {
            const int next = childRun(*it, t, trials, timeoutS, seed, tally);
            if (next == t) tally.add("no answer from the child process\t", t);
            t = std::max(next, t + 1);
        }
    }
    for (const auto& [outcome, n] : tally.count) {
        char row[128];
        std::snprintf(row, sizeof row, "  %-46s %5d", outcome.c_str(), n);
        std::cout << (outcome == "correct" ? std::string(row) : paint(row, Colour::Red));
        if (tally.example.count(outcome)) std::cout << "   e.g. " << tally.example.at(outcome);
        std::cout << "\n";
    }
    return 0;
}

}  // namespace lab
