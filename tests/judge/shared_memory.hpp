// Device memory that one process owns and another maps, for grading: the
// trusted process (the judge) allocates a test case's arrays, the graded
// process maps them and runs the student's launcher on them, and the judge
// reads them back itself when the call returns. What is judged is then never
// handed over by the graded process's host side.
//
// CUDA's virtual memory management (cuMemCreate with a POSIX file-descriptor
// handle): the descriptor crosses a Unix socket (SCM_RIGHTS), which works
// across the sandbox's PID and IPC namespaces, where the legacy cudaIpc*
// handles may not open.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace lab::judge {

// An allocation the judge owns, mapped in its own address space.
struct SharedAllocation {
    void* device = nullptr;        // where the judge sees it
    std::size_t bytes = 0;         // the mapped size: the request rounded up to the granularity
    int fd = -1;                   // the descriptor another process imports it from
    unsigned long long handle = 0; // CUmemGenericAllocationHandle
};

// The size allocations are rounded up to (the device's minimum granularity).
std::size_t sharedGranularity();
// What an allocation of `bytes` maps: `bytes` rounded up to the granularity, at least one.
std::size_t sharedBytes(std::size_t bytes);

// Allocates, maps and exports `bytes` (rounded up) on the current device.
// Throws lab::Error with the driver's message where VMM or export is missing.
SharedAllocation allocateShared(std::size_t bytes);
void freeShared(SharedAllocation& a);

// In the other process: maps an exported allocation of `bytes` (as the owner
// rounded them) and returns where this process sees it. The address range
// reserved is exactly the allocation, so one element past it is unmapped.
void* mapShared(int fd, std::size_t bytes);
void unmapShared(void* device, std::size_t bytes);

// One message over a Unix socket, with descriptors riding along.
void sendMessage(int socket, const std::string& text, const std::vector<int>& fds = {});
// The next message (at most `cap` bytes) and its descriptors; "" at the end of the stream.
std::string receiveMessage(int socket, std::vector<int>* fds = nullptr, std::size_t cap = 1 << 16);

}  // namespace lab::judge
