// One test case, one process. Under grading (LAB_CONFINE=1, set by the
// harness) a grader's process may start threads but no other process and no
// other program: a seccomp filter refuses fork, vfork, clone without
// CLONE_THREAD, clone3 (glibc then falls back to clone), execve and execveat.
// So code under test cannot run its own test case again in a child (with
// tracing off, or with host launchers) and hand over the child's results:
// whatever it does, it does in this traced process.
//
// Why here and not in the sandbox: compute-sanitizer starts its target as a
// child, so a filter installed before the sandbox's exec would stop sanitized
// runs; installed by the test program itself, it confines only the program.
// It runs from .preinit_array, before every shared library's and every
// object's constructors; the harness refuses student objects that carry a
// .preinit_array or a prioritized constructor of their own.
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

namespace {

#if defined(__x86_64__)
constexpr unsigned kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr unsigned kArch = AUDIT_ARCH_AARCH64;
#else
#error "the graders' seccomp filter knows x86-64 and AArch64 only"
#endif

constexpr unsigned kAllow = SECCOMP_RET_ALLOW;
constexpr unsigned kRefuse = SECCOMP_RET_ERRNO | EPERM;
constexpr unsigned kNoSuchCall = SECCOMP_RET_ERRNO | ENOSYS;  // clone3: its flags sit in memory BPF cannot read
constexpr unsigned kKill = SECCOMP_RET_KILL_PROCESS;

constexpr sock_filter load(unsigned offset) { return BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offset); }
constexpr sock_filter ret(unsigned action) { return BPF_STMT(BPF_RET | BPF_K, action); }
// Return `action` when the loaded value equals `nr`, else go on.
constexpr sock_filter is(unsigned nr) { return BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1); }

bool confineWanted(char** envp) {
    for (char** e = envp; e != nullptr && *e != nullptr; ++e)
        if (std::strcmp(*e, "LAB_CONFINE=1") == 0) return true;
    return false;
}

void fail(const char* what) {
    const char* text = "cannot confine the test process (LAB_CONFINE=1): ";
    [[maybe_unused]] ssize_t n = ::write(2, text, std::strlen(text));
    n = ::write(2, what, std::strlen(what));
    n = ::write(2, "\n", 1);
    _exit(2);
}

void confine(int, char**, char** envp) {
    if (!confineWanted(envp)) return;
    const unsigned nr = offsetof(seccomp_data, nr), arch = offsetof(seccomp_data, arch);
    const unsigned flags = offsetof(seccomp_data, args[0]);  // clone's flags: its first argument, low word
    sock_filter program[] = {
        // 1. Only this architecture's system calls (no 32-bit or x32 entry points).
        load(arch),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0),
        ret(kKill),
        load(nr),
#if defined(__x86_64__)
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1),  // __X32_SYSCALL_BIT
        ret(kKill),
#endif
        // 2. New programs and new processes refused; clone3 sent back to clone.
        is(__NR_execve), ret(kRefuse),
        is(__NR_execveat), ret(kRefuse),
        is(__NR_clone3), ret(kNoSuchCall),
#if defined(__NR_fork)
        is(__NR_fork), ret(kRefuse),
#endif
#if defined(__NR_vfork)
        is(__NR_vfork), ret(kRefuse),
#endif
        // 3. clone only for a thread.
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 3),
        load(flags),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 1, 0),
        ret(kRefuse),
        ret(kAllow),
    };
    const sock_fprog filter = {static_cast<unsigned short>(sizeof program / sizeof program[0]), program};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail(std::strerror(errno));
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &filter) != 0) fail(std::strerror(errno));
}

// Runs before any constructor of any object or library in the process.
__attribute__((section(".preinit_array"), used)) void (*const confineAtStartUp)(int, char**, char**) = confine;

}  // namespace
