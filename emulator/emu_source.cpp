// Where the program's code is, for the fault reports: the executable's
// symbols (a kernel's name) and, from its debug information, the source lines
// of a stack, the kernel's own picked from the emulator's and the library's.
#include "emu_internal.hpp"

#include <cxxabi.h>
#include <elf.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace emu {
namespace {

// ---------------------------------------------------------------- symbols
// The executable's own symbol table (static functions included), for the
// names of kernels launched by pointer (cudaLaunchKernelEx).
struct Symbol {
    std::uintptr_t address;
    std::size_t size;
    std::string name;
};

std::string demangle(const char* mangled) {
    int status = 0;
    char* plain = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
    std::string out = status == 0 && plain ? plain : mangled;
    std::free(plain);
    return out;
}

// Where the executable is loaded: its addresses in the file are offsets from here.
std::uintptr_t loadBase() {
    static const std::uintptr_t base = [] {
        std::uintptr_t b = 0;
        dl_iterate_phdr([](dl_phdr_info* info, std::size_t, void* out) {
            *static_cast<std::uintptr_t*>(out) = info->dlpi_addr;
            return 1;  // the first object is the executable
        }, &b);
        return b;
    }();
    return base;
}

const std::vector<Symbol>& symbols() {
    static const std::vector<Symbol> table = [] {
        std::vector<Symbol> out;
        const std::uintptr_t base = loadBase();
        const int fd = open("/proc/self/exe", O_RDONLY);
        if (fd < 0) return out;
        const off_t size = lseek(fd, 0, SEEK_END);
        void* map = mmap(nullptr, static_cast<std::size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
        close(fd);
        if (map == MAP_FAILED) return out;
        const auto* file = static_cast<const char*>(map);
        const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(file);
        const auto* sh = reinterpret_cast<const Elf64_Shdr*>(file + eh->e_shoff);
        for (int i = 0; i < eh->e_shnum; ++i) {
            if (sh[i].sh_type != SHT_SYMTAB) continue;
            const auto* syms = reinterpret_cast<const Elf64_Sym*>(file + sh[i].sh_offset);
            const char* names = file + sh[sh[i].sh_link].sh_offset;
            for (std::size_t k = 0; k < sh[i].sh_size / sizeof(Elf64_Sym); ++k) {
                const int type = ELF64_ST_TYPE(syms[k].st_info);
                if ((type == STT_FUNC || type == STT_OBJECT) && syms[k].st_value != 0)
                    out.push_back({base + syms[k].st_value, syms[k].st_size, names + syms[k].st_name});
            }
        }
        munmap(map, static_cast<std::size_t>(size));
        std::sort(out.begin(), out.end(), [](const Symbol& a, const Symbol& b) { return a.address < b.address; });
        return out;
    }();
    return table;
}

// ---------------------------------------------------------------- source lines
// Where code of the program comes from, for the fault reports: read from the
// debug information (-g) by addr2line (binutils, which comes with g++). The
// copies rewrite.py compiles keep their originals' file names and lines. Not
// a word where addr2line is missing: the reports then name no line.

// For each return address (innermost frame first), the functions inlined at
// its call, innermost first; nothing where addr2line is missing or cannot tell.
std::vector<std::vector<SourceFrame>> lookUp(const std::vector<std::uintptr_t>& returns) {
    std::vector<std::vector<SourceFrame>> out(returns.size());
    if (returns.empty()) return out;
    std::string command = "addr2line -a -f -i -C -e /proc/" + std::to_string(getpid()) + "/exe";
    for (std::uintptr_t r : returns) {
        char buf[32];
        std::snprintf(buf, sizeof buf, " 0x%zx", static_cast<std::size_t>(r - 1 - loadBase()));  // the call itself
        command += buf;
    }
    FILE* pipe = popen((command + " 2>/dev/null").c_str(), "r");
    if (!pipe) return out;
    std::vector<std::string> lines;
    char buf[4096];
    while (std::fgets(buf, sizeof buf, pipe)) {
        std::string s = buf;
        while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
        lines.push_back(s);
    }
    pclose(pipe);
    int k = -1;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        if (lines[i].rfind("0x", 0) == 0) {
            ++k;
            continue;
        }
        if (k < 0 || k >= static_cast<int>(out.size()) || i + 1 >= lines.size()) break;
        std::string place = lines[++i];
        place = place.substr(0, place.find(" ("));  // "(discriminator 2)"
        const std::size_t colon = place.rfind(':');
        SourceFrame f{lines[i - 1], place.substr(0, colon), 0};
        if (colon != std::string::npos) f.line = std::atoi(place.c_str() + colon + 1);
        out[static_cast<std::size_t>(k)].push_back(f);
    }
    return out;
}

// "./part3_merge_sort/../common/x.hpp" -> "common/x.hpp" (an include's path as written)
std::string plainPath(const std::string& path) {
    std::vector<std::string> parts;
    std::istringstream in(path);
    for (std::string part; std::getline(in, part, '/');) {
        if (part.empty() || part == ".") continue;
        if (part == ".." && !parts.empty() && parts.back() != "..") parts.pop_back();
        else parts.push_back(part);
    }
    std::string out = !path.empty() && path[0] == '/' ? "/" : "";
    for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? "/" : "") + parts[i];
    return out;
}

// Each address is looked up once (a fault's report may ask for several
// threads stopped at the same line); files of the lab by their names in it.
std::vector<std::vector<SourceFrame>> sourceFrames(const std::vector<std::uintptr_t>& returns) {
    static std::map<std::uintptr_t, std::vector<SourceFrame>> known;
    std::vector<std::uintptr_t> asked;
    for (std::uintptr_t r : returns)
        if (!known.count(r) && std::find(asked.begin(), asked.end(), r) == asked.end()) asked.push_back(r);
    std::vector<std::vector<SourceFrame>> found = lookUp(asked);
    // The Makefile has the compiler name the lab's folder "." (wherever it
    // is); GCC files some code (template instances) under the copy rewrite.py
    // made rather than under the name its #line gives, the lines the same.
    const std::string copies = "build/emu/src/";
    for (auto& inlined : found)
        for (SourceFrame& f : inlined) {
            f.file = plainPath(f.file);
            if (f.file.compare(0, copies.size(), copies) == 0) f.file.erase(0, copies.size());
        }
    for (std::size_t i = 0; i < asked.size(); ++i) known[asked[i]] = found[i];
    std::vector<std::vector<SourceFrame>> out;
    for (std::uintptr_t r : returns) out.push_back(known[r]);
    return out;
}

// The emulator's own code (emulator/emu.hpp, emulator/emu_*): the reports
// name none of its lines.
bool emulatorFile(const std::string& file) {
    return file.rfind("emulator/emu.", 0) == 0 || file.rfind("emulator/emu_", 0) == 0;
}

bool inLab(const SourceFrame& f) {
    return !f.file.empty() && f.file != "??" && f.file[0] != '/' && f.line > 0 && !emulatorFile(f.file);
}

}  // namespace

// "void lab::(anonymous namespace)::k<int>(int const*, int)" -> "k<int>" (emu_internal.hpp)
std::string shortFunction(std::string s) {
    static const std::string anonymous = "(anonymous namespace)::";
    for (std::size_t at; (at = s.find(anonymous)) != std::string::npos;) s.erase(at, anonymous.size());
    int depth = 0;
    std::size_t start = 0, end = s.size();
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (c == '<' || c == '[' || c == '{') ++depth;
        else if (c == '>' || c == ']' || c == '}') --depth;
        else if (depth == 0 && c == '(' && i > 0) { end = i; break; }
        else if (depth == 0 && c == ' ') start = i + 1;  // after the return type
        else if (depth == 0 && c == ':' && i + 1 < s.size() && s[i + 1] == ':') start = i + 2, ++i;
    }
    return s.substr(start, end - start);
}

// The symbol holding `address`, demangled.
std::string symbolAt(const void* address) {
    const auto a = reinterpret_cast<std::uintptr_t>(address);
    const auto& table = symbols();
    auto it = std::upper_bound(table.begin(), table.end(), a,
                               [](std::uintptr_t x, const Symbol& s) { return x < s.address; });
    while (it != table.begin()) {
        --it;
        if (a < it->address + std::max<std::size_t>(it->size, 1)) return demangle(it->name.c_str());
        if (it->size != 0) break;
    }
    return "";
}

// The lines of the kernel's own code in a stack (return addresses, innermost
// first), innermost first: the emulator's, the standard library's and those
// it cannot place left out, up to the launch. `kernel`: the function the
// last of them is in, when the walk got to the launch (the kernel itself:
// emu.hpp makes kernels real functions).
Chain kernelChain(const std::vector<std::uintptr_t>& stack) {
    Chain chain;
    const auto inlined = sourceFrames(stack);
    std::uintptr_t last = 0;  // the return address of the last line taken
    bool launch = false;
    for (std::size_t i = 0; i < stack.size() && !launch; ++i) {
        const std::vector<SourceFrame>& group = inlined[i];  // its last: the function the address is in
        if (group.empty()) continue;
        if (emulatorFile(group.back().file)) {  // the emulator's code: below the kernel the
            launch = last != 0;                 // fault's report, above it the launch
            continue;
        }
        for (const SourceFrame& f : group) {
            // rewrite.py's launch, [](auto... a) { kernel(a...); } in the launcher
            // (binutils spell its name either way)
            launch = f.function.find("{lambda((auto:1)...)") != std::string::npos ||
                     f.function.find("{lambda(auto:1...)") != std::string::npos;
            if (launch) break;
            if (inLab(f)) {
                chain.frames.push_back(f);
                last = stack[i];
            }
        }
    }
    if (launch && last) chain.kernel = shortFunction(symbolAt(reinterpret_cast<const void*>(last - 1)));
    return chain;
}

// " at part1_merge_path/student.cu:63", or for code in a function the kernel
// calls, " at common/x.cuh:20, called from part1_merge_path/student.cu:63".
std::string placeText(const std::vector<SourceFrame>& frames) {
    constexpr std::size_t kMost = 4;
    std::string out;
    for (std::size_t i = 0; i < frames.size() && i < kMost; ++i)
        out += (i == 0 ? " at " : ", called from ") + frames[i].file + ":" + std::to_string(frames[i].line);
    if (frames.size() > kMost) out += ", ...";
    return out;
}

// The lines of the kernel's code at one return address (a shared access
// recorded earlier; the functions inlined there): " at file:line...", or "".
std::string placeOf(std::uintptr_t returnAddress) {
    return returnAddress ? placeText(kernelChain({returnAddress}).frames) : "";
}

// The return addresses of the calling thread's stack, innermost first.
std::vector<std::uintptr_t> stackHere() {
    void* frames[64];
    const int n = backtrace(frames, 64);
    std::vector<std::uintptr_t> out;
    for (int i = 0; i < n; ++i) out.push_back(reinterpret_cast<std::uintptr_t>(frames[i]));
    return out;
}

}  // namespace emu
