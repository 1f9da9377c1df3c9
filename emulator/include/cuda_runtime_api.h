// The emulator stands in for the CUDA runtime (make EMULATE=1).
#pragma once
#include "../emu.hpp"
