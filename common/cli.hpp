// Small command-line parsing for the demos, with clear errors.
//
//   Cli cli("part1", "Merge path in one block ...");
//   cli.option("a", "LIST", "first sorted array, e.g. 1,3,5").flag("no-draw", "...");
//   if (!cli.parse(argc, argv)) return 0;  // --help; throws UsageError on bad input
//   auto a = cli.intList("a");
//
// Accepts --name VALUE and --name=VALUE. Unknown options, missing values,
// non-numbers and out-of-range numbers are refused with a message naming them.
#pragma once

#include "cuda_check.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace lab {

// A bad command line (exit status 2), as opposed to a failed run (1).
struct UsageError : Error {
    using Error::Error;
};

class Cli {
public:
    Cli(std::string program, std::string summary);

    Cli& option(const std::string& name, const std::string& valueName, const std::string& help);
    Cli& flag(const std::string& name, const std::string& help);

    // The options every demo shares: --seed S, --runs N (default `runs`),
    // --csv FILE, --step (pauses between `steps`), --no-draw, --no-bench;
    // emulated, --profile (profileEveryLaunch, gpu.hpp, when parsed).
    Cli& demoOptions(int runs, const std::string& steps);

    // false when --help was given: the usage is printed and the demo should exit 0.
    bool parse(int argc, char** argv);
    std::string usage() const;

    bool has(const std::string& name) const;  // given on the command line
    std::string string(const std::string& name, const std::string& fallback) const;
    long long integer(const std::string& name, long long fallback, long long min, long long max) const;
    std::uint64_t seed(const std::string& name, std::uint64_t fallback) const;
    std::vector<int> intList(const std::string& name) const;  // "1,3,5" (empty list: "")

private:
    struct Spec {
        std::string valueName, help;
        bool takesValue;
    };
    std::string program_, summary_;
    std::vector<std::string> order_;
    std::map<std::string, Spec> specs_;
    std::map<std::string, std::string> given_;
};

// Runs a demo's body: prints lab::Error as "program: error: ..." and returns
// 2 for usage errors, 1 for other failures, the body's status otherwise.
int runMain(const char* program, const std::function<int()>& body);

}  // namespace lab
