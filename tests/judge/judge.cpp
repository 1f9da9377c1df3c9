// The judge's side of a call (judge.hpp): its arrays in shareable memory, the
// call sent, the reply read, the trace kept for traceCall.
#include "judge.hpp"

#include "pcie.hpp"
#include "shared_memory.hpp"

#include "../../common/device_buffer.hpp"

#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>

namespace lab::judge {

namespace {

// The judge's end of the socket (LAB_JUDGE_FD, set by the harness).
int socketFd() {
    static const int fd = [] {
        const char* env = std::getenv("LAB_JUDGE_FD");
        return env != nullptr && *env != '\0' ? std::atoi(env) : -1;
    }();
    if (fd < 0)
        throw Error("this is the grading's judge (build/judge/): it runs only under make grade, which gives it a "
                    "graded process to call (LAB_JUDGE_FD)");
    return fd;
}

// Every array of the judge's, by where it starts in the judge's space.
struct Array {
    SharedAllocation memory;
    std::uint32_t id = 0;
    std::size_t offset = 0;  // where the array starts in its allocation
    bool sent = false;       // its descriptor has gone to the graded process
};

// Released allocations of at most kPooledMost bytes, kPoolMost in all, are
// kept, still mapped by the graded process, for the next array of the same
// mapped size: a grader that calls thousands of times with small arrays
// (every size from 0 to 1024) otherwise creates, exports, maps and unmaps
// each of them, which made one such test case take 93 s on an H100.
constexpr std::size_t kPooledMost = std::size_t(16) << 20;
constexpr std::size_t kPoolMost = std::size_t(256) << 20;

struct Arrays {
    std::mutex mutex;
    std::map<std::uintptr_t, Array> byStart;  // key: the array's first byte
    std::multimap<std::size_t, Array> pool;   // released, kept for reuse; key: the mapped size
    std::size_t pooled = 0;                   // their mapped bytes
    std::vector<std::uint32_t> released;      // ids the graded process should unmap
    std::uint32_t nextId = 1;
    // The new arrays of the call being encoded, and their descriptors.
    std::vector<std::pair<std::uint32_t, std::uint64_t>> fresh;
    std::vector<int> freshFds;
    std::uint64_t callBytes = 0;  // the bytes of the judge's arrays the call names (PcieMeter's log)
};

Arrays& arrays() {
    static Arrays* const a = new Arrays;
    return *a;
}

// The checked arrays' memory (DeviceBuffer, the [large] tier): shareable, and
// placed so that the array ends where the mapping ends (an access past it
// faults, and the sanitizer sees it: shared_memory.cpp).
cudaError_t allocate(void** p, std::size_t bytes) {
    try {
        const std::size_t rounded = (bytes + 255) / 256 * 256;
        const std::size_t mapped = sharedBytes(bytes);
        std::lock_guard<std::mutex> lock(arrays().mutex);
        Array array;
        const auto kept = arrays().pool.find(mapped);
        if (kept != arrays().pool.end()) {  // the same id: the graded process has it mapped already
            array = kept->second;
            arrays().pooled -= mapped;
            arrays().pool.erase(kept);
        } else {
            array.memory = allocateShared(bytes);
            array.id = arrays().nextId++;
        }
        array.offset = array.memory.bytes - rounded;
        *p = static_cast<char*>(array.memory.device) + array.offset;
        arrays().byStart[reinterpret_cast<std::uintptr_t>(*p)] = array;
        return cudaSuccess;
    } catch (const Error&) {
        return cudaErrorMemoryAllocation;
    }
}

void release(void* p) {
    std::lock_guard<std::mutex> lock(arrays().mutex);
    const auto it = arrays().byStart.find(reinterpret_cast<std::uintptr_t>(p));
    if (it == arrays().byStart.end()) return;
    Array& array = it->second;
    if (array.memory.bytes <= kPooledMost && arrays().pooled + array.memory.bytes <= kPoolMost) {
        arrays().pooled += array.memory.bytes;
        arrays().pool.emplace(array.memory.bytes, array);
    } else {
        if (array.sent) arrays().released.push_back(array.id);
        freeShared(array.memory);
    }
    arrays().byStart.erase(it);
}

// Installed before any test runs.
const bool installed = [] {
    arrayMemory() = ArrayMemory{&allocate, &release};
    return true;
}();

// The array holding `p` (the caller holds the lock); null for none.
Array* arrayOf(const void* p) {
    const auto at = reinterpret_cast<std::uintptr_t>(p);
    auto& map = arrays().byStart;
    auto it = map.upper_bound(at);
    if (it == map.begin()) return nullptr;
    --it;
    const std::uintptr_t base = reinterpret_cast<std::uintptr_t>(it->second.memory.device);
    return at >= base && at < base + it->second.memory.bytes ? &it->second : nullptr;
}

// The trace of the calls in the current traceCall window.
struct Relay {
    bool open = false;
    test::TraceLog log;
    std::vector<std::string> violations;
};

Relay& relay() {
    static Relay* const r = new Relay;
    return *r;
}

}  // namespace

void putPointer(Writer& w, const void* p) {
    if (p == nullptr) {
        w.put(Arg::Null);
        return;
    }
    std::lock_guard<std::mutex> lock(arrays().mutex);
    Array* a = arrayOf(p);
    if (a == nullptr) {
        w.put(Arg::Other);
        w.put(reinterpret_cast<std::uint64_t>(p));
        return;
    }
    if (!a->sent) {
        a->sent = true;
        arrays().fresh.emplace_back(a->id, a->memory.bytes);
        arrays().freshFds.push_back(a->memory.fd);
    }
    arrays().callBytes += a->memory.bytes - a->offset;
    w.put(Arg::Device);
    w.put(a->id);
    w.put(static_cast<std::uint64_t>(static_cast<const char*>(p) - static_cast<const char*>(a->memory.device)));
}

void putHostArray(Writer& w, const void* p, std::size_t bytes) {
    if (p == nullptr) {
        w.put(Arg::Null);
        return;
    }
    if (bytes > kMessageCap / 2) throw Error("a host array too large to send to the graded process");
    w.put(Arg::Host);
    w.put(static_cast<std::uint64_t>(bytes));
    w.bytes(p, bytes);
}

std::string send(const std::string& name, const Writer& args) {
    const int fd = socketFd();
    static const bool ready = [fd] {  // serve.cpp says so once its context is made
        if (receiveMessage(fd, nullptr, kMessageCap) != "ready")
            throw Error("the graded process ended, or said something else, before its first call");
        return true;
    }();
    (void)ready;
    Writer head;
    std::vector<int> fds;
    std::uint64_t arrayBytes = 0;
    {
        std::lock_guard<std::mutex> lock(arrays().mutex);
        arrayBytes = std::exchange(arrays().callBytes, 0);
        head.text("call");
        head.text(name);
        head.put(static_cast<std::uint32_t>(arrays().released.size()));
        for (std::uint32_t id : arrays().released) head.put(id);
        head.put(static_cast<std::uint32_t>(arrays().fresh.size()));
        for (const auto& [id, bytes] : arrays().fresh) {
            head.put(id);
            head.put(bytes);
        }
        fds = arrays().freshFds;
        arrays().released.clear();
        arrays().fresh.clear();
        arrays().freshFds.clear();
    }
    if (fds.size() > 16) throw Error("a call with more than 16 new arrays (the lab's have at most 5)");
    const std::string message = head.str() + args.str();
    if (message.size() > kMessageCap) throw Error("a call too large to send to the graded process");
    // The inputs written and the outputs poisoned before the graded process
    // looks: a copy from pageable memory and a memset return before the GPU
    // has done them, and no stream of this process orders the other's work.
    CUDA_CHECK(cudaDeviceSynchronize());
    // The bytes PCIe moves from here to the reply are the graded process's
    // (pcie.hpp): this process waits, and nothing else runs on the GPU. A call
    // given none of the judge's arrays (diagonalSearchOnHost's are the host's,
    // sent with it) has nothing of the judge's to copy, and is not metered:
    // the meter's reads would add about 0.3 ms to each of its tens of thousands.
    PcieMeter* const meter = arrayBytes > 0 ? PcieMeter::get() : nullptr;
    if (meter != nullptr) meter->open();
    const auto sent = std::chrono::steady_clock::now();
    sendMessage(fd, message, fds);
    const std::string reply = receiveMessage(fd, nullptr, kMessageCap);
    const std::uint64_t moved = meter != nullptr ? meter->close() : 0;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
    if (reply.empty())
        throw Error("the graded process ended during a call of " + name + " (a crash, exit() or a kill)");
    Reader r(reply);
    const std::string status = r.text(16);
    const std::string value = r.text(status == "ok" ? 64 : 4096);
    std::vector<std::string> violations;
    const test::TraceLog log = getTrace(r, &violations);
    if (meter != nullptr) {
        std::uint64_t launches = 0;
        for (const test::KernelLaunch& k : log.kernels) launches += k.count;
        meter->record(name, arrayBytes, launches, moved, seconds);
    }
    Relay& relay_ = relay();
    for (const std::string& v : violations) relay_.violations.push_back(v);
    if (relay_.open) {  // the lab's graders make one call per window; more add up
        test::TraceLog& into = relay_.log;
        into.traced = log.traced;
        into.why = log.why;
        if (into.fault.empty()) into.fault = log.fault;
        into.kernels.insert(into.kernels.end(), log.kernels.begin(), log.kernels.end());
        into.hostCopies.insert(into.hostCopies.end(), log.hostCopies.begin(), log.hostCopies.end());
        into.violations.insert(into.violations.end(), log.violations.begin(), log.violations.end());
        into.canaryKernels = log.canaryKernels;  // the canaries of each window: the last call's
        into.canaryCopies = log.canaryCopies;
        into.copyCalls += log.copyCalls;
        into.launchCalls += log.launchCalls;
        into.copyRecords += log.copyRecords;
    }
    if (status == "error") throw Error(value);
    if (status != "ok") throw Error("the graded process's reply is malformed");
    return value;
}

void beginRemoteTrace() {  // the violations stay: they wait for takeRemoteViolations
    relay().log = test::TraceLog{};
    relay().open = true;
}

test::TraceLog endRemoteTrace() {
    relay().open = false;
    return std::exchange(relay().log, test::TraceLog{});
}

std::vector<std::string> takeRemoteViolations() { return std::exchange(relay().violations, {}); }

const char* remoteImplementation(const char* part) {
    static std::map<std::string, std::string> names;
    auto it = names.find(part);
    if (it == names.end()) {
        it = names.emplace(part, send(std::string(part) + "Implementation", Writer{})).first;
    }
    return it->second.c_str();
}

}  // namespace lab::judge
