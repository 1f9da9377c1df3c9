// Terminal output for the demos: colour only where it helps and is wanted.
//
// Colour is on when stdout is a terminal, TERM is not "dumb" and NO_COLOR is
// unset (https://no-color.org); everything drawn stays readable without it.
#pragma once

#include "checks.hpp"

#include <string>

namespace lab {

enum class Colour { Bold, Dim, Red, Green, Yellow, Blue, Magenta, Cyan };

bool colourEnabled();

// `text` wrapped in the colour's escape codes when colour is enabled.
std::string paint(const std::string& text, Colour colour);

// Banner every demo prints first: part, implementation linked, GPU.
void printBanner(const std::string& title, const std::string& implementation);

// "what: OK" or "what: WRONG: <message>"; returns c.ok.
bool printCheck(const Check& c, const std::string& what);

// Whether the GPU part of a demo can run; if not, says why.
bool gpuReadyOrSayWhy();

// --step: when on, pauseStep() waits for Enter between the steps of a drawing
// (a probe of a search, a round of a sort), so that a lecturer can talk
// through them. Off by default; at the end of input it stops pausing.
void setStepping(bool on);
void pauseStep();

}  // namespace lab
