"""What a student's compiled object may define, checked before it is linked.

A test binary links the graders' trusted objects with one student object, so
the linker, not the source, decides whose code runs. Three ways a hostile
object could take over, and the rules that stop them:

* Replacing the lab's code. A function from a header (an inline function, a
  template instantiation) is a weak symbol in every object that uses it, and the
  linker keeps the first copy. The harness links the student object last, so a
  weak duplicate of a trusted object's symbol is discarded: allowed. A strong
  definition (an explicit specialisation, say) beats the weak copies: refused.
  Symbols the trusted objects use but do not define are the interface (the
  launchers); a student's own helpers are defined nowhere else: both allowed.
* Interposition. An executable's definition of a name a shared library also
  defines is the one every library calls (malloc, write, operator new,
  cudaMalloc...), and one taken from a static archive never fetches the
  archive's own. So names defined by a library the binary loads are refused,
  strong or weak (unless a trusted object defines the same weak copy, which the
  link order makes win; an archive's own weak copies of header code, Catch2's
  std::string instantiations say, are replaced only by a strong definition), as
  are whole families reserved to the C and C++ runtime, CUDA, CUPTI and the
  graders (namespace lab::test), found or not.
* Running first. The lab's start-up code runs before every ordinary
  constructor: the confinement from .preinit_array, the launch trace from a
  constructor of priority 101. A student constructor with a priority
  (.init_array.NNNNN, .ctors.NNNNN; GCC's constructor(N) and init_priority),
  .preinit_array, code in .init, or an indirect function (its resolver runs
  while the program is being loaded) would run before it, a destructor with a
  priority or code in .fini after
  the lab's own shutdown code: refused.

Last, a few calls honest code never needs and that would reach the GPU past the
launch trace (a __managed__ variable, the driver's entry points) are refused.
dlopen/dlsym are not: Thrust's and CUB's host code uses them, and a launcher
that calls those libraries fails its own question on the trace, not its whole
part here; what a submission looks up and calls, the trace still sees, and
harness.suspicious_symbols names the lookups for a person. Library symbol sets
are read once per process and path.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from pathlib import Path

TIMEOUT = 60  # seconds for each nm / readelf / ldd call
MAX_LINES = 12
WEAK = set("WVuvw")  # weak or COMDAT (V, W), GNU unique (u)
LAB_TEST = re.compile(r"_Z(Z|T[VTISHW]|G[VR]|T[hv][n0-9_]*|Tc[hvn0-9_]*)?N[rVKRO]*3lab4test")
RESERVED = [
    (re.compile(r"_Z(nw|na|dl|da)"), "the C++ runtime's, reserved"),
    (re.compile(r"(main|_start|_init|_fini|_DYNAMIC|_GLOBAL_OFFSET_TABLE_|__TMC_END__|__bss_start|_edata|_end|"
                r"__data_start|__ehdr_start|__executable_start|__gmon_start__|__dso_handle)$|"
                r"__libc_|_IO_|__cxa_|__gxx_|_Unwind_|__stack_chk_|_ITM_|__(pre)?init_array_|__fini_array_"),
     "the C and C++ runtime's, reserved"),
    (re.compile(r"cupti|Cupti"), "CUPTI's, reserved"),
    (re.compile(r"cuda|__cuda|cu[A-Z]"), "CUDA's, reserved"),
]
FORBIDDEN_USES = [
    (re.compile(r"__cudaRegisterManagedVar$"), " (a __managed__ variable): host-visible memory is not allowed"),
    (re.compile(r"(cudaGetDriverEntryPoint\w*|cuGetProcAddress\w*)$"),
     ": it reaches the CUDA driver past the launch trace"),
]
# What the compiler driver adds to every link besides the -l libraries.
IMPLICIT = ["Scrt1.o", "crt1.o", "crti.o", "crtn.o", "crtbeginS.o", "crtbegin.o", "crtendS.o", "crtend.o",
            "libgcc.a", "libgcc_eh.a", "libc_nonshared.a", "libCatch2.a"]


def _run(cmd: list[str], stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=TIMEOUT,
                          env={**os.environ, "LC_ALL": "C"})


def _nm(paths: list[Path], *options: str, strict: bool = True) -> list[tuple[str, str]]:
    """(type, name) of every symbol nm lists; when strict, RuntimeError if nm fails."""
    try:
        r = _run(["nm", "--no-demangle", *options, "--", *map(str, paths)])
    except (OSError, subprocess.TimeoutExpired) as e:
        raise RuntimeError(str(e)) from e
    if r.returncode != 0 and strict:
        raise RuntimeError(r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"nm exited {r.returncode}")
    found = [re.match(r"[0-9a-fA-F]*\s+(\S) (.+)$", line) for line in r.stdout.splitlines()]
    return [(m.group(1), m.group(2)) for m in found if m]


def _base(name: str) -> str:
    return name.split("@", 1)[0]  # malloc@@GLIBC_2.2.5 -> malloc


def _is_global(kind: str) -> bool:
    return kind in "uvwi" or (kind.isupper() and kind not in "NU")


@functools.lru_cache(maxsize=None)
def library_symbols(path: Path, weak: bool = False) -> frozenset[str]:
    """The global names a library defines that an executable's definition
    would take over: every one of a shared library (its dynamic symbols), the
    strong ones of a static archive. An archive's weak definitions (template
    instantiations of the standard headers, which Catch2's archive holds too)
    come after the student object in the link and lose to its weak copy of
    the same header code, as the trusted objects' do (a strong definition
    still replaces them: `weak` lists those); empty if unreadable."""
    shared = ".so" in path.name
    options = ["-D"] if shared else []  # else a static archive or object: every member
    try:
        return frozenset(_base(n) for k, n in _nm([path], *options, "--defined-only", strict=False)
                         if _is_global(k) and (not weak if shared else (k in WEAK) == weak))
    except RuntimeError:
        return frozenset()


def _demangle(names: list[str]) -> dict[str, str]:
    try:
        r = _run(["c++filt"], "\n".join(_base(n) for n in names) + "\n")
        out = r.stdout.splitlines()
    except (OSError, subprocess.TimeoutExpired):
        out = []
    if len(out) != len(names):
        return {n: n for n in names}
    return {n: (d if len(d) <= 160 else d[:157] + "...") for n, d in zip(names, out)}


def _sections(obj: Path) -> list[tuple[str, str]]:
    """(name, type) of every section of obj, from readelf."""
    r = _run(["readelf", "-S", "-W", "--", str(obj)])
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip() or f"readelf exited {r.returncode}")
    found = [re.match(r"\s*\[\s*\d+\]\s+(.*?\S)\s+(\S+)\s+[0-9a-f]{8,}\s", ln) for ln in r.stdout.splitlines()]
    return [(m.group(1), m.group(2)) for m in found if m]


def _section_problem(name: str, kind: str) -> str | None:
    """Why a section of this name and type may not be linked, or None."""
    start = name in (".preinit_array", ".init") or name.startswith((".init_array.", ".ctors.")) or \
        kind == "PREINIT_ARRAY" or (kind == "INIT_ARRAY" and name != ".init_array")
    end = name == ".fini" or name.startswith((".fini_array.", ".dtors.")) or \
        (kind == "FINI_ARRAY" and name != ".fini_array")
    if not (start or end):
        return None
    what = ("a constructor" if start else "a destructor") + " with a priority" if re.search(r"\.\d+$", name) else "it"
    return f"has a {name} section: {what} runs " + ("before the lab's own start-up code" if start else
                                                     "after the lab's own shutdown code")


def object_problems(student_obj: Path, trusted_objs: list[Path], libraries: list[Path]) -> list[str]:
    """Reasons to refuse linking student_obj; [] when it may be linked.

    Raises RuntimeError when a trusted object cannot be read (the lab's fault, not the student's)."""
    try:
        mine = sorted({(n, k) for k, n in _nm([student_obj]) if _is_global(k) or k == "U"})
        sections = _sections(student_obj)
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        return [f"cannot read the compiled object: {e}".replace(str(student_obj), student_obj.name)]
    try:
        trusted = _nm(trusted_objs, "--defined-only") if trusted_objs else []
    except RuntimeError as e:
        raise RuntimeError(f"cannot read the lab's own objects: {e}") from e
    trusted_defs = {_base(n) for k, n in trusted if _is_global(k)}
    libraries = [Path(lib) for lib in libraries]

    problems = [why for name, kind in sections if (why := _section_problem(name, kind))]
    defined = [(n, k) for n, k in mine if k not in "Uvw"]
    used = [n for n, k in mine if k in "Uvw"]
    pretty = _demangle([n for n, _ in defined] + used)
    for name, kind in defined:
        base, shown = _base(name), pretty[name]
        if kind == "i":
            problems.append(f"defines {shown}, an indirect function: its resolver runs before the lab's own "
                            "start-up code")
        elif LAB_TEST.match(base):
            problems.append(f"defines {shown}, which the graders define: a student object may not replace the "
                            "lab's code" if base in trusted_defs else
                            f"defines {shown}: the graders' namespace lab::test, reserved")
        elif base != "DW.ref.__gxx_personality_v0" and any(p.match(base) for p, _ in RESERVED):
            problems.append(f"defines {shown}: " + next(why for p, why in RESERVED if p.match(base)))
        elif (lib := next((lib for lib in libraries if base in library_symbols(lib)), None)) and \
                not (kind in WEAK and base in trusted_defs):
            problems.append(f"defines {shown}, which {lib.name} defines")
        elif base in trusted_defs and kind not in WEAK:
            problems.append(f"defines {shown}, which the graders define: a student object may not replace the "
                            "lab's code")
        elif kind not in WEAK and (lib := next((lib for lib in libraries if base in library_symbols(lib, weak=True)),
                                               None)):
            problems.append(f"defines {shown} strongly, which {lib.name} defines: it would replace the library's")
    for name in used:
        for pattern, why in FORBIDDEN_USES:
            if pattern.match(_base(name)):
                problems.append(f"uses {_base(name)}{why}")
    problems = list(dict.fromkeys(problems))
    if len(problems) > MAX_LINES:
        problems[MAX_LINES - 1:] = [f"and {len(problems) - MAX_LINES + 1} more"]
    return problems


def link_libraries(trusted_binary: Path, nvcc: str | None = None) -> list[Path]:
    """The libraries a test binary is linked with or loads: what ldd lists for an already-linked
    trusted one, what the compiler adds to every link, and CUDA's static runtime, CUPTI and the
    driver (loaded at run time). Whatever is found; the rest is skipped."""
    found: list[Path] = []
    try:
        for line in _run(["ldd", str(trusted_binary)]).stdout.splitlines():
            m = re.search(r"=>\s*(/\S+)", line) or re.match(r"\s*(/\S+)", line)
            if m:
                found.append(Path(m.group(1)))
    except (OSError, subprocess.TimeoutExpired):
        pass
    cxx = shutil.which("g++") or shutil.which("c++")
    for name in IMPLICIT if cxx else []:
        try:
            where = _run([cxx, f"-print-file-name={name}"]).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            continue
        if where.startswith("/"):
            found.append(Path(os.path.normpath(where)))
    nvcc = nvcc or shutil.which("nvcc")
    if nvcc:
        kit = Path(nvcc).resolve().parent.parent
        dirs = [kit / "lib64", kit / "lib", *sorted(kit.glob("targets/*/lib")), kit / "extras/CUPTI/lib64"]
        for name in ("libcudart_static.a", "libcupti.so"):
            found += [d / name for d in dirs if (d / name).is_file()][:1]
    ldconfig = shutil.which("ldconfig") or "/sbin/ldconfig"
    try:
        cache = _run([ldconfig, "-p"]).stdout.splitlines()
    except (OSError, subprocess.TimeoutExpired):
        cache = []
    found += [Path(ln.split("=>")[-1].strip()) for ln in cache if re.match(r"\s*libcuda\.so", ln) and "=>" in ln]
    unique: dict[Path, Path] = {}
    for path in found:
        if path.exists():
            unique.setdefault(path.resolve(), path)
    return list(unique.values())
