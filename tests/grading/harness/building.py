"""Building: the pristine copy of the lab, the base build every grading
starts from (checked unchanged before each copy), a submission's copy, each
part's student object compiled in a sandbox and checked (what it includes,
what it defines and calls: symbols.py) before the graded program is linked;
the same for the CPU emulator's builds."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

from . import sandbox as sb
from . import symbols
from .course_table import GradingError, LAB, PARTS, read_documents, read_manifest
from .processes import LeftFileError, describe_exit, kept_env, left_text, run
from .running import binary_of, jobs_for_memory
from .submission import collect_submission

if TYPE_CHECKING:  # for the annotations only
    from .options import Options
    from .running import Grading
    from .submission import Submission


# What the pristine copy of the lab leaves out: instructor files, builds, outputs.
SKIP_NAMES = {".git", "build", "dist", "grades", "grade-results", "check-results", "grade-selftest", "__pycache__",
              *(name for name, _ in PARTS)}  # the demo binaries


BASE_BUILD_TIMEOUT = 1800  # the lab's own build (trusted; every object, once per grading run)


OBJECT_CAP = 64 << 20  # a student object's size; the reference's largest (Part 3) is 2 MiB for one GPU


# The largest graded test binary: the reference's are 10-20 MiB, a student
# object adds at most OBJECT_CAP.
BINARY_CAP = 192 << 20


def copy_lab(lab: Path, dest: Path, exclude: tuple[Path, ...] = (), with_reference: bool = False) -> None:
    """The lab without instructor files (reference*, unless with_reference),
    builds or grading outputs (`exclude`: output folders that may lie inside
    the lab). Modification times are kept, so objects built in a copy stay up
    to date."""
    skip = {p.resolve() for p in exclude} | {dest.resolve()}

    def ignore(folder, names):
        return {n for n in names if n in SKIP_NAMES or (n.startswith("reference") and not with_reference)
                or n.startswith(".") or (Path(folder) / n).resolve() in skip}

    shutil.copytree(lab, dest, ignore=ignore, copy_function=shutil.copy2, symlinks=False, dirs_exist_ok=True)


def place_files(work: Path, files: dict[str, bytes]) -> None:
    for rel, content in files.items():
        target = work / rel
        target.unlink(missing_ok=True)  # a fresh file: newer than any object, so it is rebuilt
        target.write_bytes(content)


def compile_errors(output: str, limit: int = 12) -> str:
    lines = [ln for ln in output.splitlines() if re.search(r"\berror\b|undefined reference", ln)]
    lines.sort(key=lambda ln: "collect2" in ln)  # the linker's summary after what it could not find
    return "\n".join(lines[:limit]) or output.strip()[-1500:]


def lab_fingerprint(lab: Path, exclude: list[Path]) -> str:
    """Changes whenever a file the pristine copy holds changes."""
    digest = hashlib.sha256()
    for root, dirs, names in os.walk(lab):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_NAMES and not d.startswith((".", "reference"))
                         and (Path(root) / d).resolve() not in exclude)
        for name in sorted(names):
            if not name.startswith((".", "reference")):
                path = Path(root) / name
                digest.update(str(path.relative_to(lab)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def tree_hash(root: Path) -> str:
    """A hash of every file under root (names, modes and contents)."""
    digest = hashlib.sha256()
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        for name in sorted(names):
            path = Path(folder) / name
            if path.is_symlink() or not path.is_file():
                continue
            digest.update(str(path.relative_to(root)).encode() + b"\0" + oct(path.stat().st_mode).encode() + b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()


@contextlib.contextmanager
def base_lock(base: Path):
    """The base's builder alone: two gradings that find it stale (the lab
    changed) take turns, so that one never deletes the base while the other
    builds it; the second then finds it fresh."""
    base.parent.mkdir(parents=True, exist_ok=True)
    path = base.parent / f".{base.name}.lock"
    with open(path, "w") as lock:
        waited = 0.0
        while True:  # bounded: a build ends within its timeout, whoever holds the lock
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if waited > BASE_BUILD_TIMEOUT + 60:
                    raise GradingError(f"{path} stayed locked for {waited:.0f} s: another grading's build of "
                                       f"{base} never ended; grade again") from None
                time.sleep(1.0)
                waited += 1.0
        yield


def prepare_base(base: Path, opts: Options, log) -> Path:
    """A pristine copy of the lab with everything but the student files built
    (and the trusted build of the graders, build/oracle/): each submission's
    copy starts from it and compiles only its own files. Its content hash,
    taken when it was built, is checked before every copy (verify_base)."""
    with base_lock(base):
        return build_base(base, opts, log)


def build_base(base: Path, opts: Options, log) -> Path:
    stamp = base / ".ready"
    fingerprint = lab_fingerprint(LAB, opts.outputs) + "-" + opts.arch
    if stamp.exists() and stamp.read_text().split()[0] == fingerprint:
        return base
    if base.exists():
        shutil.rmtree(base)
    copy_lab(LAB, base, exclude=tuple(opts.outputs))
    log(f"building the lab's own objects once (ARCH={opts.arch}) ...")
    r = run(["make", f"-j{opts.jobs}", "IMPL=student", f"ARCH={opts.arch}", "grade-objects"], base,
              BASE_BUILD_TIMEOUT, log=base / "build-base.log")
    if r.returncode != 0:
        raise GradingError("the lab itself does not build here (see " + str(base / "build-base.log") + "):\n" +
                             compile_errors(r.output))
    # What each graded program links besides the student object (symbols.py):
    # the served one (the judge's graded process) and the graders without answers.
    for part, _ in PARTS:
        for target, listing in ((f"graded-inputs-{part}", f"graded-inputs-{part}.txt"),
                                (f"serve-inputs-{part}", f"serve-inputs-{part}.txt")):
            listed = run(["make", "-s", "IMPL=student", f"ARCH={opts.arch}", target], base, 120,
                         env={k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")})
            objects = [name for name in listed.output.split() if name.endswith(".o") and (base / name).is_file()]
            if listed.returncode != 0 or not objects:
                raise GradingError(f"make {target} failed: {listed.output[-300:]}")
            (base / "build" / listing).write_text("\n".join(objects) + "\n")
    stamp.write_text(fingerprint + " " + tree_hash(base / "build"))
    return base


def verify_base(base: Path) -> None:
    """The base build is as it was built: nothing a submission ran changed it."""
    recorded = (base / ".ready").read_text().split()
    if len(recorded) != 2 or tree_hash(base / "build") != recorded[1]:
        raise GradingError(f"the base build in {base} changed since it was built; delete it and grade again")


def prepare_work(submission: Path, base: Path, work: Path) -> Submission:
    """A copy of the built base with the submission's student files in it."""
    sub = collect_submission(submission, read_manifest(LAB), read_documents(LAB))
    verify_base(base)
    # The trusted build and its sources stay out: a submission must not find
    # a program that writes passing reports for it.
    trusted = {(base / "build" / "oracle").resolve(), (base / "build" / "obj" / "tests" / "oracle").resolve(),
               (base / "tests" / "oracle").resolve()}
    shutil.copytree(base, work, dirs_exist_ok=True, copy_function=shutil.copy2,
                    ignore=lambda folder, names: {n for n in names if (Path(folder) / n).resolve() in trusted})
    (work / ".ready").unlink(missing_ok=True)
    place_files(work, sub.files)
    return sub


def system_include_roots() -> list[Path]:
    """Where a student's includes may come from besides the submission's copy."""
    roots = [Path("/usr/include"), Path("/usr/lib/gcc"), Path("/usr/local/include"), *sb.toolkit_dirs()]
    nvcc = shutil.which("nvcc")
    if nvcc:
        roots.append(Path(nvcc).resolve().parent.parent)
    return roots


def dependencies(dep_file: Path) -> list[str] | None:
    """The files a dependency file says its object was built from; None without one."""
    try:
        text = dep_file.read_text(errors="replace")
    except OSError:
        return None
    rule = text.replace("\\\n", " ").split("\n", 1)[0]
    return rule.split(":", 1)[1].split() if ":" in rule else []


def include_problems(dep_file: Path, work: Path, system_roots: list[Path]) -> list[str]:
    """Files a student object included from outside the submission's copy
    (per its dependency file): anything but the copy's own sources (not its
    tests/ or build/) and the compiler's and CUDA's system headers."""
    deps = dependencies(dep_file)
    if deps is None:
        return [f"{dep_file.name}: no dependency file (the build did not record its includes)"]
    work = work.resolve()
    allowed = [work]
    banned = [work / "tests", work / "build"]
    roots = [r.resolve() for r in system_roots]
    problems = []
    for dep in deps:
        path = (work / dep).resolve() if not os.path.isabs(dep) else Path(os.path.normpath(dep)).resolve()
        inside = any(path.is_relative_to(a) for a in allowed) and not any(path.is_relative_to(b) for b in banned)
        if not inside and not any(path.is_relative_to(r) for r in roots):
            problems.append(dep)
    return problems


# Thrust and CUB (CCCL): their sorts and merges, block-wide ones included, are
# what the questions ask students to write, and the handout forbids them. Found
# in the dependency file, so no spelling in the source (an alias of the
# namespace, a macro) hides them; the lab's own headers include neither.
LIBRARY_HEADER = re.compile(r"(^|/)(cub|thrust)/")


def library_includes(dep_file: Path) -> list[str]:
    """The Thrust and CUB headers a student object included."""
    return [d for d in dependencies(dep_file) or [] if LIBRARY_HEADER.search(d)]


@functools.lru_cache(maxsize=None)
def link_libraries(base: Path) -> tuple[Path, ...]:
    """The libraries a graded program links or loads (symbols.py), once per base."""
    return tuple(symbols.link_libraries(base / "build" / "test_common"))


def build_part(g: Grading, base: Path, part: str) -> tuple[str, str]:
    """Compiles the part's student object (sandboxed), refuses it if it
    includes files from outside the submission or defines what it may not
    (symbols.py), then links the graded test program. Returns ("", "") when
    built, else the questions' error and a note."""
    part_dir = dict(PARTS)[part]
    obj = g.work / "build" / "student" / part_dir / "student.o"
    b = g.build(str(obj.relative_to(g.work)), g.logs / f"build-{part}.log")
    dep_file = obj.with_suffix(".d")
    outside = include_problems(dep_file, g.work, system_include_roots()) if dep_file.exists() else []
    if outside:
        return ("it includes files from outside the submission: " + ", ".join(outside[:5]),
                f"{part} gets 0: its student code includes {', '.join(outside[:5])} "
                "(only the submission's own files and the system's headers may be included)")
    libraries = library_includes(dep_file) if dep_file.exists() else []
    if libraries:
        shown = ", ".join(dict.fromkeys(d.split("/include/")[-1] for d in libraries[:3]))
        return (f"it includes Thrust or CUB ({shown}), which the handout forbids",
                f"{part} gets 0: its student code includes Thrust or CUB ({shown}); the questions ask for your "
                "own merges and sorts, and the handout forbids these libraries")
    if b.returncode != 0 or not obj.exists():
        return (compile_errors(b.output) if not b.timed_out else f"the build {describe_exit(b, g.opts.build_timeout)}",
                f"{part} does not compile; its questions get 0 (first errors in logs/build-{part}.log)")
    if obj.stat().st_size > OBJECT_CAP:
        return (f"its compiled object is {obj.stat().st_size >> 20} MiB, more than the {OBJECT_CAP >> 20} MiB allowed",
                f"{part} gets 0: its compiled student code is {obj.stat().st_size >> 20} MiB (at most "
                f"{OBJECT_CAP >> 20} MiB; the reference's largest is 2 MiB)")
    listing = f"serve-inputs-{part}.txt" if g.opts.judge else f"graded-inputs-{part}.txt"
    trusted = [base / name for name in (base / "build" / listing).read_text().split()]
    try:
        problems = symbols.object_problems(obj, trusted, list(link_libraries(base)))
    except RuntimeError as err:  # a trusted object that cannot be read: the lab's problem
        raise GradingError(str(err)) from err
    if problems:
        return ("its compiled code is refused: " + "; ".join(problems),
                f"{part} gets 0: its compiled student code is refused before linking: " + "; ".join(problems))
    binary = binary_of(g.work, part, g.opts.judge)
    r = g.build(str(binary.relative_to(g.work)), g.logs / f"link-{part}.log")
    if r.returncode != 0 or not binary.exists():
        return (compile_errors(r.output) if not r.timed_out else f"the link {describe_exit(r, g.opts.build_timeout)}",
                f"{part} does not link; its questions get 0 (first errors in logs/link-{part}.log)")
    return "", ""


# Library calls a launcher has no business making, looked up in the compiled
# student object (so no spelling in the source hides them): for a person.
SUSPICIOUS_SYMBOLS = re.compile(r"^(_?exit|_Exit|quick_exit|abort|system|popen|fork|vfork|clone\d*|execv\w*|execl\w*|"
                                r"posix_spawn\w*|setsid|daemon|syscall|ptrace|prctl|kill|dlopen|dlmopen|dlsym|dlvsym|"
                                r"dladdr1?|dlinfo|dl_iterate_phdr|_r_debug|setenv|putenv|"
                                r"unsetenv|getenv|secure_getenv|open|open64|openat|openat64|fopen|fopen64|creat|"
                                r"unlink|rename|cudaMallocHost|cudaHostAlloc|cudaHostRegister|cudaMallocManaged|"
                                r"cudaHostGetDevicePointer|__cudaRegisterManagedVar|cupti\w+|cu[A-Z]\w+)$")


def suspicious_symbols(part: str, obj: Path) -> list[str]:
    """Notes for the calls of SUSPICIOUS_SYMBOLS that the student object makes."""
    try:
        r = subprocess.run(["nm", "-u", str(obj)], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return []
    names = sorted({ln.split()[-1].split("@")[0] for ln in r.stdout.splitlines() if ln.strip()})
    found = [n for n in names if SUSPICIOUS_SYMBOLS.match(n)]
    return [f"for a person to look at: {part}'s compiled student code calls {', '.join(found[:12])}"] if found else []


# One compiler at its largest: g++ on the graders' main with Catch2 v2's
# header takes about 0.8 GB; a student.cu, emulated, 0.2 GB.
BUILD_JOB_BYTES = 800 << 20


def emulated_targets(parts: list[str], device: bool) -> list[str]:
    """What an emulated check of `parts` builds: each part's test program
    and, with `device`, its kernel file compiled by nvcc (make test
    EMULATE=1's device check)."""
    return [f"build/emu/student/test_{p}" for p in parts] + \
        ([f"build/emu/device/{dict(PARTS)[p]}/student.o" for p in parts] if device else [])


def prepare_emulated_base(base: Path, parts: list[str], exclude: list[Path], log) -> Path:
    """What prepare_base is for grading, for feedback without a GPU: a copy of
    the lab with the emulated test programs of `parts` built by g++
    (EMULATE=1), the untouched skeleton's included, and, where nvcc is here,
    the skeleton's kernel files compiled for a GPU: a submission's copy then
    compiles only what it changed. Built once (its stamp names the lab's
    content), checked before each copy (verify_base)."""
    with base_lock(base):
        return build_emulated_base(base, parts, exclude, log)


def build_emulated_base(base: Path, parts: list[str], exclude: list[Path], log) -> Path:
    nvcc = shutil.which("nvcc") is not None
    fingerprint = f"{lab_fingerprint(LAB, exclude)}-emulated-{'+'.join(parts)}{'-nvcc' if nvcc else ''}"
    stamp = base / ".ready"
    if stamp.exists() and stamp.read_text().split()[0] == fingerprint:
        return base
    if base.exists():
        shutil.rmtree(base)
    copy_lab(LAB, base, exclude=tuple(exclude))
    jobs = jobs_for_memory(BUILD_JOB_BYTES)
    log(f"building the lab's emulated test programs once ({jobs} compiler{'s' if jobs > 1 else ''} at once) ...")
    r = run(["make", f"-j{jobs}", "EMULATE=1", "IMPL=student", *emulated_targets(parts, nvcc)], base,
              BASE_BUILD_TIMEOUT, env={**os.environ, "MAKEFLAGS": f"-j{jobs}"}, log=base / "build-base.log")
    if r.returncode != 0 or not all((base / t).is_file() for t in emulated_targets(parts, False)):
        raise GradingError(f"the lab does not build emulated here (see {base / 'build-base.log'}):\n" +
                             compile_errors(r.output))
    stamp.write_text(fingerprint + " " + tree_hash(base / "build"))
    return base


def device_verdict(work: Path, part: str) -> tuple[bool | None, str]:
    """What the device check (emulator/device_check.sh) said of the part's
    kernel file: True and a line where nvcc compiles it, False and nvcc's
    words where it does not, None where it was not checked."""
    part_dir = dict(PARTS)[part]
    stem = work / "build" / "emu" / "device" / part_dir / "student"
    source = f"{part_dir}/student.cu"
    try:
        status = left_text(stem.with_suffix(".status"), 64).strip()
        said = left_text(stem.with_suffix(".log"), 1 << 20).strip() if status == "failed" else ""
    except LeftFileError:
        return None, ""
    if status == "ok":
        return True, f"nvcc compiles {source} for a GPU."
    if status == "failed":
        return False, (f"nvcc does not compile {source} for a GPU: a GPU build of {part} fails, and the grading "
                       f"gives its questions 0. nvcc said:\n{said[:1500]}")
    return None, ""


def build_emulated(g: Grading, part: str, jobs: int, device: bool = True) -> tuple[str, tuple[bool | None, str]]:
    """The part's emulated test program and, where nvcc is here (and
    `device`), its kernel file compiled for a GPU, in one sandboxed make
    (with the copy writable and no GPU): (the compiler's errors, "" when it
    built; device_verdict)."""
    nvcc = device and shutil.which("nvcc") is not None
    targets = emulated_targets([part], nvcc)
    b = g.sandboxed(["make", "-k", f"-j{jobs}", "EMULATE=1", "IMPL=student", *targets], [g.work],
                    g.opts.build_timeout, g.logs / f"build-{part}.log", sb.BUILD,
                    env={**kept_env(), "MAKEFLAGS": f"-j{jobs}"})
    error = ""
    if b.returncode != 0 or not (g.work / targets[0]).is_file():
        error = compile_errors(b.output) if not b.timed_out else \
            f"the build {describe_exit(b, g.opts.build_timeout)}"
    if not nvcc:
        return error, (None, "Not checked here: whether nvcc compiles your kernel files for a GPU (this autograder "
                             "has no CUDA toolkit). A kernel that calls a host function passes on the emulator and "
                             "does not compile for a GPU.")
    return error, device_verdict(g.work, part)
