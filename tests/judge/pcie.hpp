// What crossed PCIe between the host and the judge's GPU while a graded
// process answered a call that names the judge's arrays (judge.cpp): NVML's
// byte counters, read by the judge just before it sends the call and just
// after the reply. The harness turns
// the meter on (LAB_PCIE_GPU, the GPU's UUID) only where its grading holds the
// GPU alone and runs one test case at a time, so that the bytes of a call are
// the graded process's own; each call's figures go to LAB_PCIE_LOG, which the
// harness reads (tests/grading/harness/pcie.py).
#pragma once

#include <cstdint>
#include <string>

namespace lab::judge {

class PcieMeter {
public:
    // The meter of the GPU LAB_PCIE_GPU names, or null: unset, or NVML cannot read that GPU.
    static PcieMeter* get();

    // A call's window: open() before the call is sent, close() after its
    // reply; close() returns the bytes moved both ways in between.
    void open();
    std::uint64_t close();

    // One call's line in LAB_PCIE_LOG: its name, the bytes of the judge's
    // arrays it was given, its kernel launches, the bytes PCIe moved while it
    // ran, and its seconds.
    void record(const std::string& name, std::uint64_t arrayBytes, std::uint64_t launches, std::uint64_t moved,
                double seconds);

    PcieMeter(const PcieMeter&) = delete;
    PcieMeter& operator=(const PcieMeter&) = delete;

private:
    PcieMeter() = default;
    struct State;
    State* state_ = nullptr;
};

}  // namespace lab::judge
