// The emulated profile (EMU_PROFILE=1): per kernel and launch shape, the
// memory requests a profiler counts. Nsight Compute counts per warp-level
// instruction (a "request"): the accesses one instruction makes for the
// active lanes of one warp. Here threads run one at a time, so the accesses
// are grouped after the fact: by block, warp, code address (the return
// address of the compiler's hook, one per load or store in the code) and how
// many times this thread has run that code since its warp last met at a
// barrier or warp operation. The n-th run of a load by each lane is one
// request, which is what lock-step execution does while a warp's lanes take
// the same path; where they do not (a branch taken by some lanes, a loop
// that runs more often for some), the lanes that do run it are the request,
// as on a GPU, but the k-th runs of lanes that got there by different paths
// are grouped together where a GPU may have run them apart.
//
// Global memory (device allocations, host memory mapped for kernels):
// sectors = the distinct 32-byte aligned sectors a request's lanes touch.
// Shared memory: 32 banks of 4-byte words; lanes reading the same word share
// it (a broadcast); a wavefront serves at most one word per bank, so a
// request of 4-byte accesses takes as many wavefronts as the most distinct
// words any bank holds among its lanes; 8-byte accesses go a half warp at a
// time, 16-byte ones a quarter warp at a time, each part as above. Bank
// conflicts = wavefronts - the fewest the request's words could take.
// Not counted: atomics, a thread's stack (local memory: its arrays, spilled
// values, the kernel's parameters), the program's own data, the emulator's
// own accesses.
#include "emu_internal.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace emu {

bool profileOn = false;

namespace {

struct Counts {
    long long launches = 0, blocks = 0, threads = 0;
    long long gld = 0, gldSectors = 0, gst = 0, gstSectors = 0;
    long long sld = 0, sldWavefronts = 0, sldIdeal = 0, sst = 0, sstWavefronts = 0, sstIdeal = 0;
    long long barriers = 0, idle = 0;
    void add(const Counts& o) {
        launches += o.launches, blocks += o.blocks, threads += o.threads;
        gld += o.gld, gldSectors += o.gldSectors, gst += o.gst, gstSectors += o.gstSectors;
        sld += o.sld, sldWavefronts += o.sldWavefronts, sldIdeal += o.sldIdeal;
        sst += o.sst, sstWavefronts += o.sstWavefronts, sstIdeal += o.sstIdeal;
        barriers += o.barriers, idle += o.idle;
    }
};

struct Row {
    std::string kernel;
    dim3 grid, block;
    std::size_t dynamicShared = 0;
    Counts counts;
};

// One access of a lane, kept until its warp's requests are counted.
struct Record {
    std::uint64_t key;  // code address, shared or global, the n-th run of it: the request
    std::uintptr_t address;
    std::uint32_t bytes;
    std::uint8_t lane, write;
};

struct Profile {
    std::deque<Row> rows;  // in the order first seen; references stay valid
    std::map<std::pair<Body, const char*>, std::string> names;  // a launch site's kernel, as compiled
    // the launch running now
    Counts launch;
    bool named = false;
    std::string kernel;
    std::vector<Record> pending[kMaxThreads / 32];                             // per warp
    std::vector<std::pair<std::uint64_t, std::uint32_t>> runs[kMaxThreads];  // per thread: code -> times run
    bool touched[kMaxThreads] = {};                                          // a counted access since the barrier
};

Profile& state() {
    static Profile* s = new Profile;  // never destroyed: the report at exit reads it
    return *s;
}

// "mergeTiles_k<256, 17, int, lab::MergeJob<int> >" -> "mergeTiles_k<256, 17, int, MergeJob<int> >"
std::string withoutQualifiers(const std::string& s) {
    std::string out;
    std::size_t word = 0;  // where the current identifier began in out
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (c == ':' && i + 1 < s.size() && s[i + 1] == ':') {
            out.erase(word);
            ++i;
            continue;
        }
        out += c;
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ')')) word = out.size();
    }
    const std::string anonymous = "(anonymous namespace)";
    for (std::size_t at; (at = out.find(anonymous)) != std::string::npos;) out.erase(at, anonymous.size());
    return out;
}

// The kernel of the launch running now, as compiled (template arguments
// filled in): from the stack of its first counted access, or the launch's
// own name. Once per launch site.
const std::string& kernelNow(const Launch& l) {
    Profile& s = state();
    auto it = s.names.find({l.body, l.name});
    if (it == s.names.end()) {
        std::string name = kernelChain(stackHere()).kernel;
        if (name.empty()) name = shortFunction(l.name);
        it = s.names.emplace(std::make_pair(l.body, l.name), withoutQualifiers(name)).first;
    }
    return it->second;
}

std::uint64_t keyOf(std::uint32_t code, bool shared, std::uint32_t run) {
    return (std::uint64_t{code} << 32) | (std::uint64_t{shared} << 31) | std::min<std::uint32_t>(run, 0x7fffffffu);
}

// One request of a warp: its lanes' accesses [first, last).
void countRequest(const Record* first, const Record* last, Counts& c) {
    const bool shared = (first->key >> 31) & 1u, write = first->write;
    std::vector<std::uintptr_t> units;
    if (!shared) {
        for (const Record* r = first; r != last; ++r)
            for (std::uintptr_t u = r->address >> 5; u <= (r->address + r->bytes - 1) >> 5; ++u) units.push_back(u);
        std::sort(units.begin(), units.end());
        const long long sectors = std::unique(units.begin(), units.end()) - units.begin();
        (write ? c.gst : c.gld) += 1;
        (write ? c.gstSectors : c.gldSectors) += sectors;
        return;
    }
    std::uint32_t widest = 0;
    for (const Record* r = first; r != last; ++r) widest = std::max(widest, r->bytes);
    const int lanesPerPart = widest <= 4 ? 32 : widest <= 8 ? 16 : 8;
    long long wavefronts = 0, ideal = 0;
    for (int part = 0; part * lanesPerPart < 32; ++part) {
        units.clear();
        for (const Record* r = first; r != last; ++r)
            if (r->lane / lanesPerPart == part)
                for (std::uintptr_t w = r->address >> 2; w <= (r->address + r->bytes - 1) >> 2; ++w) units.push_back(w);
        if (units.empty()) continue;
        std::sort(units.begin(), units.end());
        units.erase(std::unique(units.begin(), units.end()), units.end());
        int perBank[32] = {};
        for (std::uintptr_t w : units) ++perBank[w % 32];  // the arena is page-aligned: word % 32 is the bank
        wavefronts += *std::max_element(std::begin(perBank), std::end(perBank));
        ideal += (static_cast<long long>(units.size()) + 31) / 32;
    }
    (write ? c.sst : c.sld) += 1;
    (write ? c.sstWavefronts : c.sldWavefronts) += wavefronts;
    (write ? c.sstIdeal : c.sldIdeal) += ideal;
}

// The requests of warp w so far, counted; its lanes start counting runs anew.
void countWarp(int w) {
    Profile& s = state();
    std::vector<Record>& p = s.pending[w];
    std::sort(p.begin(), p.end(), [](const Record& a, const Record& b) { return a.key < b.key; });
    for (std::size_t i = 0; i < p.size();) {
        std::size_t j = i + 1;
        while (j < p.size() && p[j].key == p[i].key) ++j;
        countRequest(p.data() + i, p.data() + j, s.launch);
        i = j;
    }
    p.clear();
}

void countBlockRequests(const Launch& l) {
    Profile& s = state();
    for (int w = 0; w * 32 < l.threads; ++w) countWarp(w);
    for (int t = 0; t < l.threads; ++t) s.runs[t].clear();
}

Row& rowFor(const std::string& kernel, const Launch& l) {
    Profile& s = state();
    for (Row& r : s.rows)
        if (r.kernel == kernel && r.grid.x == l.grid.x && r.grid.y == l.grid.y && r.grid.z == l.grid.z &&
            r.block.x == l.block.x && r.block.y == l.block.y && r.block.z == l.block.z &&
            r.dynamicShared == l.dynamicShared)
            return r;
    s.rows.push_back({kernel, l.grid, l.block, l.dynamicShared, {}});
    return s.rows.back();
}

// ---------------------------------------------------------------- reports
std::string shapeText(const dim3& d) {
    std::string s = std::to_string(d.x);
    if (d.y != 1 || d.z != 1) s += "x" + std::to_string(d.y);
    if (d.z != 1) s += "x" + std::to_string(d.z);
    return s;
}

std::string ratio(long long a, long long b) {
    if (b == 0) return "-";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(a) / static_cast<double>(b));
    return buf;
}

std::string centered(const std::string& text, std::size_t width) {
    const std::size_t left = (width - text.size()) / 2;
    return std::string(left, ' ') + text + std::string(width - text.size() - left, ' ');
}

void printTable(std::FILE* out, const char* title) {
    const Profile& s = state();
    std::size_t width = 6;
    for (const Row& r : s.rows) width = std::max(width, r.kernel.size());
    const int w = static_cast<int>(width);
    std::fprintf(out, "EMULATED profile%s%s: per kernel and launch shape, memory requests as Nsight Compute counts them\n",
                 title && *title ? ", " : "", title ? title : "");
    std::fprintf(out, "%-*s %16s %6s %8s | %s | %s | %s | %s |\n", w, "", "", "", "", centered("global loads", 21).c_str(),
                 centered("global stores", 21).c_str(), centered("shared loads", 28).c_str(),
                 centered("shared stores", 28).c_str());
    std::fprintf(out, "%-*s %16s %6s %8s | %10s %10s | %10s %10s | %10s %8s %8s | %10s %8s %8s | %8s %9s %8s %8s\n",
                 w, "kernel", "grid x block", "smem", "launches", "requests", "sect/req", "requests", "sect/req",
                 "requests", "wavef/rq", "conflict", "requests", "wavef/rq", "conflict", "blocks", "threads",
                 "barriers", "idle");
    for (const Row& r : s.rows) {
        const Counts& c = r.counts;
        const std::string shape = shapeText(r.grid) + " x " + shapeText(r.block);
        std::fprintf(out,
                     "%-*s %16s %6zu %8lld | %10lld %10s | %10lld %10s | %10lld %8s %8lld | %10lld %8s %8lld | %8lld "
                     "%9lld %8lld %8lld\n",
                     w, r.kernel.c_str(), shape.c_str(), r.dynamicShared, c.launches, c.gld,
                     ratio(c.gldSectors, c.gld).c_str(), c.gst, ratio(c.gstSectors, c.gst).c_str(), c.sld,
                     ratio(c.sldWavefronts, c.sld).c_str(), c.sldWavefronts - c.sldIdeal, c.sst,
                     ratio(c.sstWavefronts, c.sst).c_str(), c.sstWavefronts - c.sstIdeal, c.blocks, c.threads,
                     c.barriers, c.idle);
    }
    std::fprintf(out,
                 "  requests: warp-level load or store instructions (a warp's lanes running one load together: one request)\n"
                 "  sect/req: 32-byte sectors per global request; 4 bytes a lane, coalesced: 4, one sector per lane: 32\n"
                 "  wavef/rq: shared-memory wavefronts per request, 1 without conflicts (2 for 8-byte values)\n"
                 "  conflict: bank conflicts, the wavefronts beyond the fewest the request needs (ncu's bank conflicts)\n"
                 "  blocks, threads: run in all launches; barriers: __syncthreads completed, once per block\n"
                 "  idle: threads that waited at a barrier having made no counted load or store since the last one\n"
                 "  counted on the CPU emulator: no caches, no timing; a warp's lanes grouped by the times each ran a load\n"
                 "  (emulator/README.md, \"The emulated profile\", says how, and where a GPU's counts may differ)\n");
    std::fflush(out);
}

void appendCsv(const char* path) {
    std::FILE* f = std::fopen(path, "a");
    if (!f) {
        std::fprintf(stderr, "emulator: cannot write the profile to EMU_PROFILE_FILE=%s\n", path);
        return;
    }
    if (std::ftell(f) == 0)
        std::fprintf(f, "kernel,grid,block,dynamic_shared,launches,blocks,threads,global_ld_requests,"
                        "global_ld_sectors,global_st_requests,global_st_sectors,shared_ld_requests,"
                        "shared_ld_wavefronts,shared_ld_conflicts,shared_st_requests,shared_st_wavefronts,"
                        "shared_st_conflicts,barriers,idle_lane_waits\n");
    for (const Row& r : state().rows) {
        const Counts& c = r.counts;
        std::fprintf(f, "\"%s\",%s,%s,%zu,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld\n",
                     r.kernel.c_str(), shapeText(r.grid).c_str(), shapeText(r.block).c_str(), r.dynamicShared,
                     c.launches, c.blocks, c.threads, c.gld, c.gldSectors, c.gst, c.gstSectors, c.sld,
                     c.sldWavefronts, c.sldWavefronts - c.sldIdeal, c.sst, c.sstWavefronts,
                     c.sstWavefronts - c.sstIdeal, c.barriers, c.idle);
    }
    std::fclose(f);
}

const char* profileFile() {
    const char* f = std::getenv("EMU_PROFILE_FILE");
    return f && *f ? f : nullptr;
}

// At exit: what no demo printed, on stderr (or into EMU_PROFILE_FILE).
void reportAtExit() {
    if (state().rows.empty()) return;
    if (const char* f = profileFile()) appendCsv(f);
    else printTable(stderr, "");
}

bool fromEnvironment() {
    const char* e = std::getenv("EMU_PROFILE");
    const bool on = (e && *e && std::strcmp(e, "0") != 0) || profileFile();
    if (on) std::atexit(reportAtExit);
    return on;
}
const bool startedOn = (profileOn = fromEnvironment());

}  // namespace

// ---------------------------------------------------------------- from the emulator (emu_internal.hpp)
void profileLaunchStart(const Launch&) {
    Profile& s = state();
    s.launch = Counts{};
    s.launch.launches = 1;
    s.named = false;
}

void profileBlockStart(const Launch& l) {
    Profile& s = state();
    for (int t = 0; t < l.threads; ++t) s.touched[t] = false;
    for (int w = 0; w * 32 < l.threads; ++w) s.pending[w].clear();
    for (int t = 0; t < l.threads; ++t) s.runs[t].clear();
}

void profileBlockEnd(const Launch& l) {
    if (l.aborted) return;
    countBlockRequests(l);
    state().launch.blocks += 1;
    state().launch.threads += l.threads;
}

void profileLaunchEnd(const Launch& l) {
    Profile& s = state();
    if (l.aborted) return;
    if (!s.named) s.kernel = withoutQualifiers(shortFunction(l.name));  // it made no counted access
    rowFor(s.kernel, l).counts.add(s.launch);
}

void profileAccess(const void* address, std::size_t bytes, bool write, bool shared, const void* from) {
    Launch& l = *active;
    Profile& s = state();
    if (!s.named) {
        s.kernel = kernelNow(l);
        s.named = true;
    }
    const int t = l.current;
    const std::uint32_t code = codeOffset(from);
    std::uint32_t run = 0;
    auto& runs = s.runs[t];
    const std::uint64_t site = (std::uint64_t{code} << 1) | shared;
    auto it = std::find_if(runs.rbegin(), runs.rend(), [&](const auto& r) { return r.first == site; });
    if (it == runs.rend()) runs.push_back({site, 1});
    else run = it->second++;
    s.pending[t / 32].push_back({keyOf(code, shared, run), reinterpret_cast<std::uintptr_t>(address),
                                 static_cast<std::uint32_t>(bytes), static_cast<std::uint8_t>(t % 32),
                                 static_cast<std::uint8_t>(write)});
    s.touched[t] = true;
}

void profileWarpMet(const Launch& l, int warp, unsigned mask) {
    Profile& s = state();
    countWarp(warp);
    for (int lane = 0; lane < 32 && warp * 32 + lane < l.threads; ++lane)
        if ((mask >> lane) & 1u) s.runs[warp * 32 + lane].clear();
}

void profileBarrier(const Launch& l) {
    Profile& s = state();
    countBlockRequests(l);
    s.launch.barriers += 1;
    for (int t = 0; t < l.threads; ++t) {
        s.launch.idle += !s.touched[t];
        s.touched[t] = false;
    }
}

// ---------------------------------------------------------------- the controls (emu.hpp)
void profile(bool on) {
    static bool exitReport = startedOn;
    if (on && !exitReport) {
        std::atexit(reportAtExit);
        exitReport = true;
    }
    profileOn = on;
}
bool profiling() { return profileOn; }

std::size_t profileRowCount() { return state().rows.size(); }

ProfileRow profileRow(std::size_t i) {
    const Row& r = state().rows.at(i);
    const Counts& c = r.counts;
    ProfileRow out;
    out.kernel = r.kernel.c_str();
    out.grid = r.grid;
    out.block = r.block;
    out.dynamicShared = r.dynamicShared;
    out.launches = c.launches;
    out.blocks = c.blocks;
    out.threads = c.threads;
    out.globalLoads = c.gld;
    out.globalLoadSectors = c.gldSectors;
    out.globalStores = c.gst;
    out.globalStoreSectors = c.gstSectors;
    out.sharedLoads = c.sld;
    out.sharedLoadWavefronts = c.sldWavefronts;
    out.sharedLoadConflicts = c.sldWavefronts - c.sldIdeal;
    out.sharedStores = c.sst;
    out.sharedStoreWavefronts = c.sstWavefronts;
    out.sharedStoreConflicts = c.sstWavefronts - c.sstIdeal;
    out.barriers = c.barriers;
    out.idleLaneWaits = c.idle;
    return out;
}

void printProfile(const char* title) {
    if (state().rows.empty()) return;
    printTable(stdout, title);
    if (const char* f = profileFile()) appendCsv(f);
}

void clearProfile() { state().rows.clear(); }

}  // namespace emu
