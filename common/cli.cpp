#include "cli.hpp"

#include "gpu.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

namespace lab {

namespace {

// Whole-string integer parse; false on junk, overflow or an empty string.
bool parseInteger(const std::string& text, long long& out) {
    if (text.empty()) return false;
    errno = 0;
    char* end = nullptr;
    out = std::strtoll(text.c_str(), &end, 10);
    return errno == 0 && end == text.c_str() + text.size();
}

}  // namespace

Cli::Cli(std::string program, std::string summary)
    : program_(std::move(program)), summary_(std::move(summary)) {
    flag("help", "print this help and exit");
}

Cli& Cli::option(const std::string& name, const std::string& valueName, const std::string& help) {
    order_.push_back(name);
    specs_[name] = Spec{valueName, help, true};
    return *this;
}

Cli& Cli::flag(const std::string& name, const std::string& help) {
    order_.push_back(name);
    specs_[name] = Spec{"", help, false};
    return *this;
}

Cli& Cli::demoOptions(int runs, const std::string& steps) {
    option("seed", "S", "seed of the random inputs (default 1)")
        .option("runs", "N", "timed runs per measurement, median reported (default " + std::to_string(runs) + ")")
        .option("csv", "FILE", "also write the timing tables to FILE (the lab's CSV schema, README.md)")
        .flag("step", "pause between " + steps + " (Enter to go on)")
        .flag("no-draw", "skip the drawing")
        .flag("no-bench", "skip the timing tables");
    if (kEmulated)
        flag("profile", "count every kernel's memory requests as a profiler does, a table at exit (as EMU_PROFILE=1)");
    return *this;
}

bool Cli::parse(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg.rfind("--", 0) != 0 || arg.size() == 2)
            throw UsageError("unexpected argument '" + arg + "' (options start with --; see --help)");
        std::string name = arg.substr(2), value;
        const auto eq = name.find('=');
        const bool inlineValue = eq != std::string::npos;
        if (inlineValue) {
            value = name.substr(eq + 1);
            name = name.substr(0, eq);
        }
        const auto spec = specs_.find(name);
        if (spec == specs_.end()) throw UsageError("unknown option --" + name + " (see --help)");
        if (spec->second.takesValue && !inlineValue) {
            if (i + 1 >= argc) throw UsageError("option --" + name + " needs a value " + spec->second.valueName);
            value = argv[++i];
        }
        if (!spec->second.takesValue && inlineValue)
            throw UsageError("option --" + name + " takes no value");
        given_[name] = value;
    }
    if (has("help")) std::cout << usage();
    if (has("profile")) profileEveryLaunch();
    return !has("help");
}

std::string Cli::usage() const {
    std::ostringstream os;
    os << "usage: ./" << program_ << " [options]\n\n" << summary_ << "\n\noptions:\n";
    for (const auto& name : order_) {
        const Spec& s = specs_.at(name);
        std::string left = "  --" + name + (s.takesValue ? " " + s.valueName : "");
        if (left.size() < 22) left.resize(22, ' ');
        else left += "\n" + std::string(22, ' ');
        os << left << s.help << "\n";
    }
    return os.str();
}

bool Cli::has(const std::string& name) const { return given_.count(name) != 0; }

std::string Cli::string(const std::string& name, const std::string& fallback) const {
    const auto it = given_.find(name);
    return it == given_.end() ? fallback : it->second;
}

long long Cli::integer(const std::string& name, long long fallback, long long min, long long max) const {
    const auto it = given_.find(name);
    if (it == given_.end()) return fallback;
    long long v = 0;
    if (!parseInteger(it->second, v))
        throw UsageError("--" + name + " expects a whole number, got '" + it->second + "'");
    if (v < min || v > max) {
        std::ostringstream os;
        os << "--" << name << " = " << v << " is out of range [" << min << ", " << max << "]";
        throw UsageError(os.str());
    }
    return v;
}

std::uint64_t Cli::seed(const std::string& name, std::uint64_t fallback) const {
    const auto it = given_.find(name);
    if (it == given_.end()) return fallback;
    const std::string& text = it->second;
    errno = 0;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
    if (text.empty() || text[0] == '-' || errno != 0 || end != text.c_str() + text.size())
        throw UsageError("--" + name + " expects a non-negative whole number, got '" + text + "'");
    return v;
}

std::vector<int> Cli::intList(const std::string& name) const {
    std::vector<int> out;
    const auto it = given_.find(name);
    if (it == given_.end() || it->second.empty()) return out;
    std::stringstream items(it->second);
    std::string item;
    while (std::getline(items, item, ',')) {
        long long v = 0;
        if (!parseInteger(item, v) || v < INT32_MIN || v > INT32_MAX)
            throw UsageError("--" + name + " expects comma-separated ints, e.g. 1,3,5; '" + item +
                             "' is not one");
        out.push_back(static_cast<int>(v));
    }
    if (it->second.back() == ',')
        throw UsageError("--" + name + " ends with a comma: '" + it->second + "'");
    return out;
}

int runMain(const char* program, const std::function<int()>& body) {
    try {
        return body();
    } catch (const UsageError& e) {
        std::cerr << program << ": error: " << e.what() << "\n";
        return 2;
    } catch (const std::exception& e) {
        std::cerr << program << ": error: " << e.what() << "\n";
        return 1;
    }
}

}  // namespace lab
