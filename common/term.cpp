#include "term.hpp"

#include "gpu.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <unistd.h>

namespace lab {

bool colourEnabled() {
    static const bool enabled = [] {
        const char* noColour = std::getenv("NO_COLOR");
        const char* term = std::getenv("TERM");
        if (noColour != nullptr && noColour[0] != '\0') return false;
        if (term == nullptr || std::strcmp(term, "dumb") == 0) return false;
        return isatty(fileno(stdout)) != 0;
    }();
    return enabled;
}

std::string paint(const std::string& text, Colour colour) {
    if (!colourEnabled()) return text;
    static const char* codes[] = {"1", "2", "31", "32", "33", "34", "35", "36"};
    return std::string("\033[") + codes[static_cast<int>(colour)] + "m" + text + "\033[0m";
}

void printBanner(const std::string& title, const std::string& implementation) {
    std::cout << paint(title, Colour::Bold) << "\n"
              << "  implementation: " << implementation << "\n"
              << "  GPU:            " << describeGpu(detectGpu()) << "\n\n";
}

bool printCheck(const Check& c, const std::string& what) {
    std::cout << what << ": " << (c ? paint("OK", Colour::Green) : paint("WRONG", Colour::Red) + ": " + c.message)
              << "\n";
    return c.ok;
}

bool gpuReadyOrSayWhy() {
    const GpuInfo& gpu = detectGpu();
    if (!gpu.available) std::cout << paint("The GPU part cannot run: ", Colour::Red) << gpu.reason << "\n";
    return gpu.available;
}

namespace {
bool stepping = false;
}

void setStepping(bool on) { stepping = on; }

void pauseStep() {
    if (!stepping) return;
    std::cout << paint("  [Enter: next step]", Colour::Dim) << std::flush;
    std::string line;
    if (!std::getline(std::cin, line)) stepping = false;
}

}  // namespace lab
