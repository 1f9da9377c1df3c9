#!/usr/bin/env python3
"""Grades submissions of the lab. The Makefile's entry points call it:

  make grade [SUBMISSION=path] [GRADE_OUT=dir] [TIMEOUT=s] [SANITIZE=0] [SEED=n] [BUDGET=s]
  make grade-all SUBMISSIONS=dir [GRADES=dir] [REGRADE=alice,bob] [SCHEDULER=slurm]
  make gradescope

Gradescope's setup.sh and run_autograder call `autograder-setup` and
`autograder`; `scores` remakes grade-all's scores.csv (e.g. with a roster).
`python3 tests/grading/grade.py --help` lists every option. How grading works is
in the instructors' README (For instructors) and the handout (How your work is graded).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import dataclasses
import functools
import hashlib
import io
import json
import os
import queue
import random
import secrets
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness as h  # noqa: E402
import results as res  # noqa: E402
import sandbox as sb  # noqa: E402
import symbols  # noqa: E402

PROBE_TIMEOUT = 60
BASE_BUILD_TIMEOUT = 1800  # the lab's own build (trusted; every object, once per grading run)
OBJECT_CAP = 64 << 20  # a student object's size; the reference's largest (Part 3) is 2 MiB for one GPU
# A grading's ordinary test cases at once by default (CASE_JOBS=n; its [large]
# ones run beside them, one at a time); fewer on a GPU with little free memory
# (Options.fit_gpu).
CASE_JOBS = 4
# Processes on one GPU at once, of every grading on the machine (GPU_JOBS=n;
# place): with sixteen, four gradings of the reference at once on an H200
# slowed its "every size" tests four-fold and lost points.
GPU_JOBS = 8
# The largest graded test binary: the reference's are 10-20 MiB, a student
# object adds at most OBJECT_CAP.
BINARY_CAP = 192 << 20
# The most results one graded test process may hand over (bytes): ten times
# what the reference's largest test case hands over.
RESULTS_CAP = 4 << 30
DEMO_TIMEOUT = 600  # one demo's timing tables (TIMING=1)
# Fewer runs and a smaller Q7 study than make bench: a ratio, not a figure to publish.
DEMO_ARGS = ["--no-draw", "--runs", "3"]
DEMO_EXTRA = {"part3": ["--max-log2", "22"]}


# ---------------------------------------------------------------- options


class Options:
    def __init__(self, args):
        self.timeout = _positive("TIMEOUT", args.timeout) if args.timeout not in (None, "") else None
        self.timeout_scale = _positive("TIMEOUT_SCALE", args.timeout_scale or "1")
        # Twenty times the reference's slowest part (Part 3's student.cu: 6 s on one
        # core of a 2-core machine), so that a compile bomb ends soon.
        self.build_timeout = _positive("BUILD_TIMEOUT", args.build_timeout or "120")
        self.budget = _positive("BUDGET", getattr(args, "budget", None) or "2400")
        # Sanitizers run by default; SANITIZE=0 leaves them out.
        self.sanitize = args.sanitize in (None, "") or _flag("SANITIZE", args.sanitize)
        self.sanitize_asked = args.sanitize not in (None, "")
        self.large = not _flag("NO_LARGE", args.no_large)
        # Why the [large] tier is not graded ("" when it is): NO_LARGE=1, or a
        # GPU whose total memory cannot hold it (the lab's probe decides once).
        self.large_off = "" if self.large else "off (NO_LARGE=1)"
        # [large] processes at once on this machine ("large" places; probe_gpu
        # sets it from the GPU's total memory and the host's).
        self.large_jobs = 1
        sandbox_flag = getattr(args, "sandbox", None)
        self.sandbox_forced_off = sandbox_flag not in (None, "") and not _flag("SANDBOX", sandbox_flag)
        self.sandbox = sb.Sandbox(enabled=sandbox_flag in (None, "") or _flag("SANDBOX", sandbox_flag),
                                  hidden=(h.LAB, *[Path(p).resolve() for p in (args.out, args.base) if p]))
        self.work_root = Path(getattr(args, "work_root", None) or tempfile.gettempdir()).resolve()
        self.arch = args.arch or "native"
        self.timing = _flag("TIMING", args.timing)
        self.outputs = [Path(p).resolve() for p in (args.out, args.base) if p]  # never copied into a lab copy
        self.jobs = str(os.cpu_count() or 2)
        # Sanitized runs (one per question and tool) this many at a time.
        self.sanitize_jobs = max(1, int(_positive("SANITIZE_JOBS", getattr(args, "sanitize_jobs", None)
                                                  or min(12, (os.cpu_count() or 2) * 3 // 4) or 1)))
        # Processes on one GPU at once, of every grading on this machine ("gpu" places).
        self.gpu_jobs = max(1, int(_positive("GPU_JOBS", getattr(args, "gpu_jobs", None) or str(GPU_JOBS))))
        # Trusted processes at once (one per test case; the [large] ones also wait for a place).
        self.trusted_jobs = os.cpu_count() or 2
        # Ordinary test cases at once (1: one test process at a time).
        self.case_jobs = max(1, int(_positive("CASE_JOBS", getattr(args, "case_jobs", None) or str(CASE_JOBS))))
        self.jobs_asked = {"sanitize": bool(getattr(args, "sanitize_jobs", None)),
                           "case": bool(getattr(args, "case_jobs", None))}
        self.parts = [p for p, _ in h.PARTS] if not args.parts else args.parts.split(",")
        for p in self.parts:
            if p not in dict(h.PARTS):
                raise h.GradingError(f"PARTS: unknown part {p!r} (parts: {', '.join(p for p, _ in h.PARTS)})")
        if args.seed not in (None, ""):
            if not args.seed.isdigit():
                raise h.GradingError(f"SEED must be a non-negative whole number, got {args.seed!r}")
            self.seed = int(args.seed)
        else:
            self.seed = secrets.randbelow(2**31)  # new inputs each grading: no answer can be prepared
        if self.sanitize and shutil.which("compute-sanitizer") is None:
            if self.sanitize_asked:
                raise h.GradingError("SANITIZE=1 needs compute-sanitizer (CUDA toolkit) on the PATH")
            self.sanitize = False  # said in each report (sanitizer_note)

    def unsandboxed(self) -> str:
        """Why grading refuses to run: no sandbox here and SANDBOX=0 not said; "" when it may run."""
        if self.sandbox.available or self.sandbox_forced_off:
            return ""
        return (f"no sandbox can start here ({self.sandbox.why}): without one a submission can write anything "
                "this account can, the results included. SANDBOX=0 grades all the same")

    def sanitizer_note(self) -> str:
        if self.sanitize:
            return ""
        if self.sanitize_asked:
            return "sanitizers not run (SANITIZE=0)"
        return "sanitizers not run: compute-sanitizer is not on the PATH"

    def fit_gpu(self, free_mib: int | None) -> None:
        """Fewer processes at once on a GPU with little free memory (each holds
        a context of a few hundred MiB; a sanitized one about twice that), so
        that no run fails for memory another run of the same grading holds.
        Only the defaults change; SANITIZE_JOBS and CASE_JOBS given win."""
        if free_mib is None:
            return
        if not self.jobs_asked["sanitize"]:
            self.sanitize_jobs = max(1, min(self.sanitize_jobs, free_mib // 2048))
        if not self.jobs_asked["case"]:
            self.case_jobs = max(1, min(self.case_jobs, free_mib // 4096))
        self.trusted_jobs = max(1, min(self.trusted_jobs, free_mib // 1024))

    def timeout_for(self, q: h.Question, case: h.TestCase) -> float:
        """A test case's time limit: its own row of the points table, else its question's; TIMEOUT and TIMEOUT_SCALE win."""
        return self.timeout if self.timeout is not None else q.timeouts.get(case.name, q.timeout) * self.timeout_scale


def _positive(name, text) -> float:
    try:
        value = float(text)
    except ValueError:
        raise h.GradingError(f"{name} must be a number of seconds > 0, got {text!r}") from None
    if not value > 0:
        raise h.GradingError(f"{name} must be > 0, got {text!r}")
    return value


def _flag(name, text) -> bool:
    if text in (None, "", "0"):
        return False
    if text == "1":
        return True
    raise h.GradingError(f"{name} must be 0 or 1, got {text!r}")


# ---------------------------------------------------------------- the base build


def lab_fingerprint(lab: Path, exclude: list[Path]) -> str:
    """Changes whenever a file the pristine copy holds changes."""
    digest = hashlib.sha256()
    for root, dirs, names in os.walk(lab):
        dirs[:] = sorted(d for d in dirs if d not in h.SKIP_NAMES and not d.startswith((".", "reference"))
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


def prepare_base(base: Path, opts: Options, log) -> Path:
    """A pristine copy of the lab with everything but the student files built
    (and the trusted build of the graders, build/oracle/): each submission's
    copy starts from it and compiles only its own files. Its content hash,
    taken when it was built, is checked before every copy (verify_base)."""
    stamp = base / ".ready"
    fingerprint = lab_fingerprint(h.LAB, opts.outputs) + "-" + opts.arch
    if stamp.exists() and stamp.read_text().split()[0] == fingerprint:
        return base
    if base.exists():
        shutil.rmtree(base)
    h.copy_lab(h.LAB, base, exclude=tuple(opts.outputs))
    log(f"building the lab's own objects once (ARCH={opts.arch}) ...")
    r = h.run(["make", f"-j{opts.jobs}", "IMPL=student", f"ARCH={opts.arch}", "grade-objects"], base,
              BASE_BUILD_TIMEOUT, log=base / "build-base.log")
    if r.returncode != 0:
        raise h.GradingError("the lab itself does not build here (see " + str(base / "build-base.log") + "):\n" +
                             h.compile_errors(r.output))
    for part, _ in h.PARTS:  # what each graded program links besides the student object (symbols.py)
        listed = h.run(["make", "-s", "IMPL=student", f"ARCH={opts.arch}", f"graded-inputs-{part}"], base, 120,
                       env={k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")})
        objects = [name for name in listed.output.split() if name.endswith(".o") and (base / name).is_file()]
        if listed.returncode != 0 or not objects:
            raise h.GradingError(f"make graded-inputs-{part} failed: {listed.output[-300:]}")
        (base / "build" / f"graded-inputs-{part}.txt").write_text("\n".join(objects) + "\n")
    stamp.write_text(fingerprint + " " + tree_hash(base / "build"))
    return base


def verify_base(base: Path) -> None:
    """The base build is as it was built: nothing a submission ran changed it."""
    recorded = (base / ".ready").read_text().split()
    if len(recorded) != 2 or tree_hash(base / "build") != recorded[1]:
        raise h.GradingError(f"the base build in {base} changed since it was built; delete it and grade again")


def probe_gpu(base: Path, env: dict, opts: "Options | None" = None) -> tuple[bool, str, int]:
    """Asks the lab's own test binary (no student code in it) about the GPU;
    with opts, fits their process counts to the GPU's free memory."""
    fields = _probe(base, env)
    if "GPU" in fields:
        count = int(fields.get("devices", "1"))
        if opts is not None:
            opts.fit_gpu(int(fields["free MiB"]) if fields.get("free MiB", "").isdigit() else None)
            opts.large_jobs = large_jobs(int(fields.get("total MiB", "0") or 0), len(opts.parts))
            if opts.large and fields.get("large tier", "fits") != "fits":
                opts.large, opts.large_off = False, "not graded on this GPU: " + fields["large tier"]
        return True, "GPU: " + fields["GPU"], count
    return False, "no GPU: " + fields.get("no GPU", fields.get("", "the probe failed")), 0


# What one trusted [large] process holds at most, of the GPU's memory and of
# the host's (two arrays of 2^31 ints, and the oracle's copies of them).
LARGE_PROCESS_MIB = 24 * 1024


def large_jobs(gpu_total_mib: int, parts: int) -> int:
    """How many trusted [large] processes fit at once in the GPU's memory and the host's."""
    host_mib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") >> 20
    return max(1, min(parts, gpu_total_mib // LARGE_PROCESS_MIB, host_mib // LARGE_PROCESS_MIB))


@contextlib.contextmanager
def place(kind: str, slots: int):
    """One of `slots` places of `kind` on this machine, shared by every grading
    on it, waited for. "gpu-<UUID>": a process on that GPU (a test, a
    sanitized run, a trusted run), GPU_JOBS of them: the GPU time-slices
    between processes, and tests that launch thousands of small kernels
    slowed four-fold with sixteen beside them; so several gradings at once
    never load a GPU more than one does at its busiest, and a test's time
    limit holds on a busy node (the wait is not the test's time). "large": a
    [large] process (24 GiB of the GPU's and the host's memory each),
    large_jobs of them, taken before its GPU place. A place is a name in
    Linux's abstract socket namespace, held by binding it: nothing on disk,
    gone with the process that held it, and out of a sandbox's reach (its own
    network namespace has its own names)."""
    pause = 0.01
    while True:
        for i in random.sample(range(slots), slots):
            held = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                held.bind(f"\0lab-{kind}-{os.geteuid()}-{i}")
            except OSError:
                held.close()
                continue
            try:
                yield
            finally:
                held.close()
            return
        time.sleep(pause)
        pause = min(0.2, pause * 1.5)


def _probe(base: Path, env: dict) -> dict[str, str]:
    """The lab's probe's lines (GPU, devices, free MiB, uuid, large tier; or no
    GPU), under `env`; "" holds how it ended when it failed."""
    r = h.run([str(base / "build" / "test_common")], base, PROBE_TIMEOUT,
              env={**kept_env(), **env, "LAB_PROBE_GPU": "1"})
    keys = ("GPU", "no GPU", "devices", "free MiB", "total MiB", "uuid", "large tier")
    fields = {k: v.strip() for k, _, v in (ln.partition(":") for ln in r.output.splitlines()) if k in keys}
    if r.returncode != 0:
        fields.pop("GPU", None)
        fields[""] = h.describe_exit(r, PROBE_TIMEOUT)
    return fields


_gpu_views: dict[tuple, tuple[dict, list[str] | None]] = {}
_gpu_views_lock = threading.Lock()


def gpu_view(base: Path, gpu_env: dict) -> tuple[dict, list[str] | None]:
    """What a sandbox of a grading on the GPU `gpu_env` names gets: the
    environment that names that GPU (by its UUID, since the sandbox shows it
    alone and a CUDA index would count from it) and its device nodes
    (sandbox.gpu_nodes), or `gpu_env` and None (every GPU node) where the
    driver does not say which node is that GPU's. Once per GPU."""
    key = tuple(sorted(gpu_env.items()))
    with _gpu_views_lock:
        if key not in _gpu_views:
            uuid = _probe(base, gpu_env).get("uuid", "")
            nodes = sb.gpu_nodes(uuid) if uuid.startswith("GPU-") else None
            _gpu_views[key] = ({**gpu_env, "CUDA_VISIBLE_DEVICES": uuid} if nodes else dict(gpu_env), nodes)
        return _gpu_views[key]


def gpu_place(base: Path, gpu_env: dict) -> str:
    """The kind of place (place) a process on the GPU `gpu_env` takes: named
    by the GPU's UUID where the probe tells it, so that gradings naming one
    GPU differently still share its places."""
    return "gpu-" + gpu_view(base, gpu_env)[0].get("CUDA_VISIBLE_DEVICES", "")


# ---------------------------------------------------------------- the trusted run


# What of the harness's environment a submission's builds and tests see: what
# finds the compilers, their libraries and the GPU; nothing that names the
# grading (its folders, make's variables, a token the machine holds).
ENV_KEPT = ("PATH", "LD_LIBRARY_PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM", "NVCC", "CXX", "CC", "CUDA_HOME",
            "CUDA_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NVIDIA_VISIBLE_DEVICES",
            "NVIDIA_DRIVER_CAPABILITIES")


def kept_env() -> dict:
    return {k: v for k, v in os.environ.items() if k in ENV_KEPT}


def test_env(opts: Options, gpu_env: dict) -> dict:
    """The environment of every graded and sanitized run (and the trusted one)."""
    env = kept_env()
    env.update(gpu_env)
    env.update({"LAB_SEED": str(opts.seed), "LAB_TRACE": "require", "LAB_CONFINE": "1", "NO_COLOR": "1"})
    if opts.large:
        env["LAB_LARGE"] = "1"
    return env


class TrustedRuns:
    """The graders run on the trusted host implementation (build/oracle/, no
    student code): the results every student run must reproduce. Run once per
    GPU for a grading run, every part and tier; grade-all's workers share one."""

    def __init__(self, base: Path, opts: Options, logs: Path):
        self.base, self.opts, self.logs = base, opts, logs
        self.lock = threading.Lock()
        self.done: dict[str, threading.Event] = {}  # per GPU
        self.results: dict[tuple, tuple[dict[str, h.Trusted], res.Stream]] = {}  # (part, large, GPU)
        self.seconds: dict[str, float] = {}  # each test case's trusted run
        self.wall: dict[str, float] = {}  # per GPU, for the grading's log
        # The trusted results, where no sandboxed process can see them.
        self.private = Path(tempfile.mkdtemp(prefix="lab-trusted-", dir=opts.work_root))

    def close(self) -> None:
        shutil.rmtree(self.private, ignore_errors=True)

    def run_all(self, parts: list[str], gpu_env: dict) -> None:
        """Every tier of `parts` on this GPU, now, alone on it; returns when
        all have ended. The first caller for a GPU runs them, others wait."""
        gpu = gpu_env.get("CUDA_VISIBLE_DEVICES", "")
        with self.lock:
            event = self.done.get(gpu)
            mine = event is None
            if mine:
                event = self.done[gpu] = threading.Event()
        if mine:
            try:
                self._run_all(parts, gpu_env)
            finally:
                event.set()
        event.wait()

    def part(self, part: str, large: bool, gpu_env: dict) -> tuple[dict[str, h.Trusted], res.Stream]:
        """The tier's results (how each test ended, what it handed over)."""
        self.run_all(self.opts.parts, gpu_env)
        gpu = gpu_env.get("CUDA_VISIBLE_DEVICES", "")
        return self.results.get((part, large, gpu), ({}, res.Stream(self.private / "none")))

    def limit(self, part: str, case: h.TestCase) -> float:
        """A trusted process's time limit: generous (a trusted run cut short is a lab error)."""
        return 600 + 4 * max((q.timeouts.get(case.name, q.timeout) for q in h.read_points(h.LAB, part).values()
                              if case in q.tests), default=60)

    def _run_all(self, parts: list[str], gpu_env: dict) -> None:
        """A process per test case, opts.trusted_jobs at a time, the [large] ones
        first and each holding a "large" place, then the longest limits
        first: the runs take about their longest case, not a part's sum."""
        started = time.monotonic()
        gpu = gpu_env.get("CUDA_VISIBLE_DEVICES", "")
        jobs = [(part, c) for part in parts for c in h.read_test_cases(h.LAB, part) if self.opts.large or not c.large]
        jobs.sort(key=lambda job: (not job[1].large, -self.limit(*job)))
        with ThreadPoolExecutor(max_workers=max(1, self.opts.trusted_jobs)) as pool:
            pieces = list(pool.map(lambda ij: self._process(ij[1][0], ij[1][1], f"{ij[1][0]}{gpu}-{ij[0]}", gpu_env),
                                   enumerate(jobs)))
        # One stream per part and tier: frames carry their test's name, so the
        # pieces' files, one after another, are a stream (a piece cut short is
        # left out: its tests then have no trusted results, a lab error).
        for part in parts:
            for large in (False, True):
                ends, combined = {}, self.private / f"{part}{'-large' if large else ''}{gpu}.results"
                with open(combined, "wb") as out:
                    for (p, case), (piece_ends, piece) in zip(jobs, pieces):
                        if p == part and case.large == large:
                            ends.update(piece_ends)
                            if not piece.problem:
                                with open(piece.path, "rb") as f:
                                    shutil.copyfileobj(f, out)
                self.results[(part, large, gpu)] = (ends, res.read_stream(combined))
        self.wall[gpu] = time.monotonic() - started

    def _process(self, part: str, case: h.TestCase, stem: str, gpu_env: dict) -> tuple[dict[str, h.Trusted], res.Stream]:
        """One trusted process running one test case: how it ended, and its results."""
        self.logs.mkdir(parents=True, exist_ok=True)
        name = f"trusted-{stem}.log"
        report, stream = self.private / f"{stem}.jsonl", self.private / f"{stem}.results"
        with open(stream, "wb") as sink:
            env = {**test_env(self.opts, gpu_env), "LAB_TRACE": "0", "LAB_CONFINE": "0", "LAB_REPORT": str(report),
                   "LAB_RESULTS_FD": str(sink.fileno())}
            limit = self.limit(part, case)
            with place("large", self.opts.large_jobs) if case.large else contextlib.nullcontext(), \
                    place(gpu_place(self.base, gpu_env), self.opts.gpu_jobs):
                r = h.run([str(self.base / "build" / "oracle" / f"test_{part}"), case.name],
                          self.base, limit, env=env, log=self.logs / name, pass_fds=(sink.fileno(),))
        self.seconds[case.name] = r.seconds
        if r.returncode not in (0, 1):
            say(f"warning: the trusted run of {part}'s {case.name!r} {h.describe_exit(r, limit)} "
                f"(see {self.logs / name})")
        return h.read_report_ends(report), res.read_stream(stream)

    def summary(self) -> str:
        """For the grading's log: the runs' wall time and their longest cases."""
        longest = sorted(self.seconds.items(), key=lambda kv: -kv[1])[:3]
        return (f"{sum(self.wall.values()):.0f} s for {len(self.seconds)} processes; longest "
                + ", ".join(f"{name} {sec:.0f} s" for name, sec in longest))


# ---------------------------------------------------------------- one submission


def prepare_work(submission: Path, base: Path, work: Path) -> h.Submission:
    """A copy of the built base with the submission's student files in it."""
    sub = h.collect_submission(submission, h.read_manifest(h.LAB), h.read_documents(h.LAB))
    verify_base(base)
    # The trusted build and its sources stay out: a submission must not find
    # a program that writes passing reports for it.
    trusted = {(base / "build" / "oracle").resolve(), (base / "build" / "obj" / "tests" / "oracle").resolve(),
               (base / "tests" / "oracle").resolve()}
    shutil.copytree(base, work, dirs_exist_ok=True, copy_function=shutil.copy2,
                    ignore=lambda folder, names: {n for n in names if (Path(folder) / n).resolve() in trusted})
    (work / ".ready").unlink(missing_ok=True)
    h.place_files(work, sub.files)
    return sub


def system_include_roots() -> list[Path]:
    """Where a student's includes may come from besides the submission's copy."""
    roots = [Path("/usr/include"), Path("/usr/lib/gcc"), Path("/usr/local/include"), *sb.toolkit_dirs()]
    nvcc = shutil.which("nvcc")
    if nvcc:
        roots.append(Path(nvcc).resolve().parent.parent)
    return roots


@dataclass
class Budget:
    """The submission's time for its test runs (BUDGET); a test case that would
    start after it is spent fails, saying so."""
    seconds: float
    started: float = field(default_factory=time.monotonic)

    def left(self) -> float:
        return self.seconds - (time.monotonic() - self.started)


class Grading:
    """One submission's grading: its copy, its sandboxed runs, its notes."""

    def __init__(self, work: Path, logs: Path, opts: Options, env: dict, log, student: str):
        self.work, self.logs, self.opts, self.env, self.log, self.student = work, logs, opts, env, log, student
        self.notes: list[str] = []
        self.budget = Budget(opts.budget)
        self.hashes: dict[str, str] = {}
        self.seconds: dict[str, float] = {}  # each test case's graded run
        self.peaks: dict[str, int] = {}  # its host memory at the peak (bytes; 0 where not measured)
        self.gpu: list[str] | None = None  # the GPU nodes a test sees (sandbox.gpu_nodes; None: all)
        self.gpu_place = "gpu"  # the places its processes on the GPU take (place; grade_one sets it)
        self.own_lock, self.owned = threading.Lock(), False
        # The results the graded processes hand over, where no sandboxed process can see them.
        self.private = Path(tempfile.mkdtemp(prefix="lab-results-", dir=opts.work_root))

    def sandboxed(self, cmd: list[str], writable: list[Path], timeout: float, log: Path, limits: sb.Limits,
                  env: dict | None = None, cwd: Path | None = None, pass_fds: tuple[int, ...] = ()) -> h.Run:
        """`cmd` in a sandbox of its own with `limits` (sandbox.py), the work
        copy readable (or writable, when in `writable`) and the grading's GPU
        only where the limits show one."""
        sb_ = self.opts.sandbox
        cwd = cwd or self.work
        readable = [] if self.work in writable else [self.work]
        with place(self.gpu_place, self.opts.gpu_jobs) if limits.gpu else contextlib.nullcontext():
            box = sb_.box(limits)
            try:
                r = h.run(box.prefix + sb_.wrap(cmd, cwd, limits, writable=writable, readable=readable, gpu=self.gpu),
                          cwd, timeout, env={**(env or self.env), "HOME": "/tmp"}, log=log, sandboxed=sb_.available,
                          pass_fds=pass_fds)
            finally:
                limit = box.close()
        r.limit, r.peak_memory = limit, box.peak_memory
        return r

    def sandboxed_with_pipes(self, cmd: list[str], limits: sb.Limits, timeout: float, log: Path, stem: Path,
                             results_cap: int, report_cap: int, log_cap: int = 0, env: dict | None = None
                             ) -> tuple[h.Run, res.Collector, res.Collector, res.Collector | None]:
        """`sandboxed` with the graded environment, the report (LAB_REPORT_FD)
        and the results (LAB_RESULTS_FD) going to pipes whose other ends only
        the harness holds, copied into `stem`.report and `stem`.results up to
        their caps (0: read and dropped). With `log_cap`, a third pipe for a
        log the command names as "{log}" in `cmd` (/proc/self/fd/N), kept in
        `stem`.log: nothing is written on disk."""
        pipes = [os.pipe() for _ in range(3 if log_cap else 2)]
        collectors = [res.Collector(read_end, stem.with_suffix(suffix), cap)
                      for (read_end, _), suffix, cap in zip(pipes, (".results", ".report", ".log"),
                                                            (results_cap, report_cap, log_cap))]
        ends = tuple(write_end for _, write_end in pipes)
        if log_cap:
            # A program opens the log by name (/proc/self/fd/N: a sandbox's /dev
            # has no fd/); the pipe, the harness's, must let the sandbox's user
            # open it so. Only a process that holds its end can name it.
            os.fchmod(ends[2], 0o622)
            cmd = [a.replace("{log}", f"/proc/self/fd/{ends[2]}") for a in cmd]
        try:
            r = self.sandboxed(cmd, [], timeout, log, limits, pass_fds=ends,
                               env={**(env or self.env), "LAB_RESULTS_FD": str(ends[0]), "LAB_REPORT_FD": str(ends[1])})
        finally:
            for end in ends:
                os.close(end)
        return r, collectors[0], collectors[1], collectors[2] if log_cap else None

    def build(self, target: str, log: Path) -> h.Run:
        """A make target of the student's build, sandboxed, with the copy writable
        and no GPU. Several may run at once; the copy is handed to the sandbox's
        user once."""
        with self.own_lock:
            if not self.owned:
                self.opts.sandbox.own(self.work)
                self.owned = True
        return self.sandboxed(["make", f"-j{self.opts.jobs}", "IMPL=student", f"ARCH={self.opts.arch}", target],
                              [self.work], self.opts.build_timeout, log, sb.BUILD, env=kept_env())

    @staticmethod
    def _fingerprint(binary: Path) -> str:
        """Size, inode and change time: any rewrite of the file changes its ctime,
        which no process can set back."""
        s = binary.stat()
        return f"{s.st_dev}:{s.st_ino}:{s.st_size}:{s.st_ctime_ns}"

    def remember(self, binary: Path) -> None:
        """A built test program, hashed once (its hash goes into the logs)."""
        with open(binary, "rb") as f:
            self.hashes[str(binary)] = f"{self._fingerprint(binary)} sha256:{hashlib.file_digest(f, 'sha256').hexdigest()}"

    def binary_intact(self, binary: Path) -> bool:
        """Unchanged since it was built: checked by its file's identity before each test, not read again."""
        try:
            return self.hashes.get(str(binary), "").split(" ")[0] == self._fingerprint(binary)
        except OSError:
            return False

    def run_case(self, binary: Path, case: h.TestCase, log_path: Path, timeout: float) -> tuple[h.Outcome, res.Stream]:
        """One test case in a fresh sandbox: the work copy read-only and no
        folder it may write but its private /tmp; its report and its results go
        to pipes whose other ends only the harness holds (kept in this
        grading's private folder; the results judged later against the trusted
        run's). No file a test leaves is read."""
        none = res.Stream(self.private / "none", problem="not run")
        left = self.budget.left()
        if left <= 0:
            return h.Outcome("failed", f"not run: the submission's time budget ({self.opts.budget:g} s, BUDGET) "
                                       "was spent before this test"), none
        if not self.binary_intact(binary):
            return h.Outcome("failed", "not run: the test binary changed after it was built (by an earlier test?)"), none
        limit = min(timeout, left)
        stem = self.private / f"{hashlib.sha256(case.name.encode()).hexdigest()[:16]}-{binary.name}"
        r, results, report, _ = self.sandboxed_with_pipes([str(binary), case.name], sb.TEST, limit, log_path, stem,
                                                          RESULTS_CAP, h.LEFT_FILE_CAP)
        self.peaks[case.name] = r.peak_memory
        stream = results.finish()
        outcome = h.read_report(report.wait(), case.name, r, limit)
        if report.overflow:
            outcome = h.Outcome("failed", f"its report grew past the {h.LEFT_FILE_CAP >> 20} MiB read of it")
        self.seconds[case.name] = r.seconds
        if outcome.status == "failed" and "during the test" in outcome.message and r.output.strip():
            outcome.message += " -- last output: " + r.output.strip().splitlines()[-1][:300]
        if not r.timed_out and r.seconds > timeout / 3:
            self.notes.append(f"for a person to look at: {case.name} took {r.seconds:.0f} s of its {timeout:g} s limit")
        return outcome, stream


def write_test_times(g: Grading, path: Path) -> None:
    """Each test case's graded run: seconds and host memory at its peak, for a
    person tuning the time limits (README: the cost of grading)."""
    rows = [f"{name}\t{sec:.2f}\t{g.peaks.get(name, 0) / (1 << 20):.0f}" for name, sec in sorted(g.seconds.items())]
    h.write_atomically(path, "test\tseconds\tpeak host MiB\n" + "".join(r + "\n" for r in rows))


def binary_of(work: Path, part: str) -> Path:
    """The graded test program of a part: graders without answers, the student's object last."""
    return work / "build" / "graded" / f"test_{part}"


@functools.lru_cache(maxsize=None)
def link_libraries(base: Path) -> tuple[Path, ...]:
    """The libraries a graded program links or loads (symbols.py), once per base."""
    return tuple(symbols.link_libraries(base / "build" / "test_common"))


def build_part(g: Grading, base: Path, part: str) -> tuple[str, str]:
    """Compiles the part's student object (sandboxed), refuses it if it
    includes files from outside the submission or defines what it may not
    (symbols.py), then links the graded test program. Returns ("", "") when
    built, else the questions' error and a note."""
    part_dir = dict(h.PARTS)[part]
    obj = g.work / "build" / "student" / part_dir / "student.o"
    b = g.build(str(obj.relative_to(g.work)), g.logs / f"build-{part}.log")
    dep_file = obj.with_suffix(".d")
    outside = h.include_problems(dep_file, g.work, system_include_roots()) if dep_file.exists() else []
    if outside:
        return ("it includes files from outside the submission: " + ", ".join(outside[:5]),
                f"{part} gets 0: its student code includes {', '.join(outside[:5])} "
                "(only the submission's own files and the system's headers may be included)")
    if b.returncode != 0 or not obj.exists():
        return (h.compile_errors(b.output) if not b.timed_out else f"the build {h.describe_exit(b, g.opts.build_timeout)}",
                f"{part} does not compile; its questions get 0 (first errors in logs/build-{part}.log)")
    if obj.stat().st_size > OBJECT_CAP:
        return (f"its compiled object is {obj.stat().st_size >> 20} MiB, more than the {OBJECT_CAP >> 20} MiB allowed",
                f"{part} gets 0: its compiled student code is {obj.stat().st_size >> 20} MiB (at most "
                f"{OBJECT_CAP >> 20} MiB; the reference's largest is 2 MiB)")
    trusted = [base / name for name in (base / "build" / f"graded-inputs-{part}.txt").read_text().split()]
    try:
        problems = symbols.object_problems(obj, trusted, list(link_libraries(base)))
    except RuntimeError as err:  # a trusted object that cannot be read: the lab's problem
        raise h.GradingError(str(err)) from err
    if problems:
        return ("its compiled code is refused: " + "; ".join(problems),
                f"{part} gets 0: its compiled student code is refused before linking: " + "; ".join(problems))
    r = g.build(str(binary_of(g.work, part).relative_to(g.work)), g.logs / f"link-{part}.log")
    if r.returncode != 0 or not binary_of(g.work, part).exists():
        return (h.compile_errors(r.output) if not r.timed_out else f"the link {h.describe_exit(r, g.opts.build_timeout)}",
                f"{part} does not link; its questions get 0 (first errors in logs/link-{part}.log)")
    return "", ""


def grade_one(submission: Path, out: Path, base: Path, opts: Options, student: str, log, gpu_env: dict,
              work: Path | None = None, trusted: TrustedRuns | None = None) -> dict:
    """Grades one submission into `out` (report.txt, results.json, gradebook.csv,
    logs/). Returns summary.json's content, which the caller keeps as the
    record. `work`: a copy already prepared (prepare_work), kept afterwards; by
    default a temporary one outside the lab. results.json says INCOMPLETE until
    every process of the submission is gone and the verdict is written."""
    stamps = [("preparing", time.monotonic())]
    out.mkdir(parents=True, exist_ok=True)
    h.write_atomically(out / "results.json", json.dumps(h.incomplete_json("grading did not finish"), indent=2))
    logs = out / "logs"
    if logs.exists():
        shutil.rmtree(logs)
    logs.mkdir()
    own_trusted = trusted is None
    trusted = trusted or TrustedRuns(base, opts, logs)
    questions = h.all_questions(h.LAB)
    results = {qid: h.QuestionResult(q, {}) for qid, q in questions.items()}
    keep = work is not None
    if work is None:
        work = Path(tempfile.mkdtemp(prefix="lab-grade-", dir=opts.work_root))
        sub = prepare_work(submission, base, work)
    else:
        sub = h.collect_submission(submission, h.read_manifest(h.LAB), h.read_documents(h.LAB))
    report = write_documents(out, sub.documents)
    sandbox_gpu_env, nodes = gpu_view(base, gpu_env)
    g = Grading(work, logs, opts, test_env(opts, sandbox_gpu_env), log, student)
    g.gpu = nodes
    g.gpu_place = gpu_place(base, gpu_env)
    notes = [opts.sandbox.describe()] + list(sub.notes)
    if opts.sanitizer_note():
        notes.append(opts.sanitizer_note())
    try:
        # The trusted runs first, alone on the GPU: no process of the
        # submission's starts before they end (grade-all runs them before any
        # grading). The builds go meanwhile; a build sees no GPU.
        oracle = threading.Thread(target=trusted.run_all, args=(opts.parts, gpu_env), daemon=True)
        oracle.start()
        # The parts build at once (each is mostly one nvcc run on its
        # student.cu; everything they share is already in the base).
        graded = [part for part, _ in h.PARTS if part in opts.parts]
        stamps.append(("builds", time.monotonic()))
        log(f"  {student}: building {', '.join(graded)}")
        with ThreadPoolExecutor(max_workers=max(1, len(graded))) as pool:
            builds = dict(zip(graded, pool.map(lambda part: build_part(g, base, part), graded)))
        built = []
        for part, part_dir in h.PARTS:
            part_questions = [r for r in results.values() if r.question.part == part]
            if part not in opts.parts:
                for r in part_questions:
                    r.build_error = "not graded (PARTS)"
                continue
            err, note = builds[part]
            if err:
                notes.append(note)
                for r in part_questions:
                    r.build_error = err
                continue
            binary = binary_of(work, part)
            if binary.stat().st_size > BINARY_CAP:
                notes.append(f"{part} gets 0: its test program is {binary.stat().st_size >> 20} MiB (at most "
                             f"{BINARY_CAP >> 20} MiB)")
                for r in part_questions:
                    r.build_error = f"its test program is larger than {BINARY_CAP >> 20} MiB"
                continue
            g.remember(binary)
            notes += h.suspicious_symbols(part, work / "build" / "student" / part_dir / "student.o")
            built.append(part)

        def part_results(part: str) -> list[h.QuestionResult]:
            return [r for r in results.values() if r.question.part == part]

        stamps.append(("trusted runs", time.monotonic()))
        oracle.join()
        stamps.append(("tests", time.monotonic()))
        claims = run_cases(g, {part: part_results(part) for part in built}, trusted.seconds)
        stamps.append(("sanitizers", time.monotonic()))
        # After the graded runs, never beside them: the GPU time-slices between
        # processes, and sanitized kernels beside a graded test pushed the
        # reference's own tests past their limits.
        if opts.sanitize:
            sanitize(g, [(binary_of(work, part), part_results(part)) for part in built])
        stamps.append(("judging", time.monotonic()))
        for part in built:
            for large in (False, True):
                judge_cases(g, part_results(part), large, claims[(part, large)], trusted.part(part, large, gpu_env))
        stamps.append(("", time.monotonic()))
        log(f"  {student}: trusted runs: {trusted.summary()}")
        log(f"  {student}: " + ", ".join(f"{name} {b - a:.0f} s" for (name, a), (_, b) in zip(stamps, stamps[1:])))
        notes += g.notes
        if opts.large_off:
            notes.append(f"the [large] tier is {opts.large_off}")
        write_test_times(g, logs / "test-times.tsv")
        if opts.timing:
            log(f"  {student}: timing the demos")
            notes.append(time_submission(g, built))
    finally:
        shutil.rmtree(g.private, ignore_errors=True)
        if own_trusted:
            trusted.close()
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    return write_outputs(out, student, list(results.values()), notes, opts.seed, report=report,
                         seconds=time.monotonic() - stamps[0][1])


# ---------------------------------------------------------------- speed (TIMING=1)


_reference_timing: dict[str, tuple[dict, str, str]] = {}  # per part (rows, why not, GPU), once per grading run
_reference_lock = threading.Lock()  # grade-all's workers share it


def read_demo(r: h.Run, part: str, csv_path: Path) -> str:
    if r.returncode != 0 or not csv_path.exists():
        return f"./{part} {h.describe_exit(r, DEMO_TIMEOUT)}"
    return ""


def reference_timing(part: str, opts: Options, env: dict) -> tuple[dict, str, str]:
    """The reference's timing tables on this GPU, measured once per grading run
    in a copy of the lab that keeps the instructor files, outside the outputs
    and never visible to a submission's sandbox."""
    with _reference_lock:
        if part not in _reference_timing:
            with tempfile.TemporaryDirectory(prefix="lab-reference-", dir=opts.work_root) as tmp:
                lab = Path(tmp)
                h.copy_lab(h.LAB, lab, exclude=tuple(opts.outputs), with_reference=True)
                csv_path = lab / f"timing-{part}.csv"
                b = h.run(["make", f"-j{opts.jobs}", "IMPL=reference", f"ARCH={opts.arch}", f"build/reference/{part}"],
                          lab, BASE_BUILD_TIMEOUT)
                why = f"{part} demo does not build" if b.returncode != 0 else ""
                if not why:
                    r = h.run([str(lab / "build" / "reference" / part), *DEMO_ARGS, *DEMO_EXTRA.get(part, []),
                               "--csv", str(csv_path)], lab, DEMO_TIMEOUT, env={**env, "LAB_TRACE": "0"})
                    why = read_demo(r, part, csv_path)
                _reference_timing[part] = (h.read_timing_csv(csv_path) if not why else {}, why,
                                           _gpu_name(csv_path) if not why else "")
        return _reference_timing[part]


def time_submission(g: Grading, built: list[str]) -> str:
    """Each built part's demo tables (sandboxed), as ratios to the reference's (a note)."""
    if not (h.LAB / "part1_merge_path" / "reference.cu").exists():
        return "speed: not timed (this copy of the lab has no reference files to compare with)"
    ratios, missing, gpu = {}, [], ""
    for part in built:
        reference, why, gpu_name = reference_timing(part, g.opts, g.env)
        if why:
            missing.append(f"the reference's {why}")
            continue
        gpu = gpu or gpu_name  # the reference's CSV names the GPU; a submission's could lie
        b = g.build(f"build/student/{part}", g.logs / f"timing-{part}.build.log")
        if b.returncode != 0:
            missing.append(f"{part} demo does not build")
            continue
        # The CSV goes to a pipe (written "{log}"): the demo writes no file.
        r, _, _, csv_pipe = g.sandboxed_with_pipes(
            [str(g.work / "build" / "student" / part), *DEMO_ARGS, *DEMO_EXTRA.get(part, []), "--csv", "{log}"],
            sb.TEST, DEMO_TIMEOUT, g.logs / f"timing-{part}.log", g.private / f"timing-{part}", 0, 0,
            log_cap=h.LEFT_FILE_CAP, env={**g.env, "LAB_TRACE": "0"})
        csv_path = csv_pipe.wait()
        why = read_demo(r, part, csv_path)
        rows = h.read_timing_csv(csv_path) if not why else {}
        if why:
            missing.append(why)
            continue
        ratios.update(h.speed_ratios(rows, reference))
    return h.speed_note(ratios, gpu or "this GPU", missing)


def _gpu_name(csv_path: Path) -> str:
    try:
        with csv_path.open(newline="") as f:
            return next((r.get("gpu") or "" for r in csv.DictReader(f)), "")
    except (OSError, UnicodeDecodeError, csv.Error):
        return ""


Claims = dict[str, tuple[h.Outcome, res.Stream]]


def run_cases(g: Grading, parts: dict[str, list[h.QuestionResult]], expected: dict[str, float]
              ) -> dict[tuple[str, bool], Claims]:
    """Runs every test case of the built `parts`, each in a process of its
    own: what each claims and the results it handed over, by part, tier and
    test name (a test tagged with two questions runs once). The ordinary
    cases CASE_JOBS at a time, the longest first (by `expected`, the trusted
    run's seconds); beside them the [large] tier's, one at a time and each
    holding a "large" place (each fills much of the GPU's memory), none
    with NO_LARGE=1."""
    jobs: dict[tuple[str, str], tuple] = {}
    for part, results in parts.items():
        for r in results:
            for i, case in enumerate(r.question.tests):
                if (part, case.name) not in jobs and (g.opts.large or not case.large):
                    jobs[(part, case.name)] = (part, case, g.logs / f"{r.question.qid}-{i + 1}.log",
                                               g.opts.timeout_for(r.question, case))

    def run(job):
        part, case, log, timeout = job
        with place("large", g.opts.large_jobs) if case.large else contextlib.nullcontext():
            return g.run_case(binary_of(g.work, part), case, log, timeout)

    ordinary = sorted((j for j in jobs.values() if not j[1].large), key=lambda j: -expected.get(j[1].name, 0))
    big = [j for j in jobs.values() if j[1].large]
    claims: dict[tuple[str, bool], Claims] = {(part, large): {} for part in parts for large in (False, True)}
    with ThreadPoolExecutor(max_workers=g.opts.case_jobs) as pool, ThreadPoolExecutor(max_workers=1) as lane:
        futures = [pool.submit(run, j) for j in ordinary] + [lane.submit(run, j) for j in big]
        for (part, case, _, _), f in zip(ordinary + big, futures):
            claims[(part, case.large)][case.name] = f.result()
    return claims


def judge_cases(g: Grading, results: list[h.QuestionResult], large: bool, claims: Claims,
                trusted: tuple[dict[str, h.Trusted], res.Stream]) -> None:
    """Each of the tier's claims judged against the trusted run's: its report
    and its results, compared here (results.compare)."""
    ends, stream = trusted
    seen: dict[str, h.Outcome] = {}
    for r in results:
        q = r.question
        for case in q.tests:
            if case.large != large:
                continue
            if case.name not in seen:
                if case.large and not g.opts.large:
                    seen[case.name] = h.Outcome("not-graded", f"not graded: the [large] tier is {g.opts.large_off}")
                elif case.large and ends.get(case.name) and ends[case.name].status == "skipped":
                    # The lab's probe said the tier fits this GPU; the trusted run must not skip.
                    seen[case.name] = h.Outcome("not-graded", "not graded, a lab error: the trusted run skipped "
                                                              f"it on a GPU the tier fits ({ends[case.name].message})")
                    g.notes.append(f"lab error, for a person to look at: the trusted run skipped {case.name}")
                elif not stream.tests.get(case.name) and q.weights.get(case.name, 1) > 0 and case.name in ends:
                    seen[case.name] = h.Outcome("not-graded", "not graded: the trusted run handed over no results "
                                                              "for this test (a problem of the lab)")
                else:
                    claim, mine = claims[case.name]
                    differs = res.compare(mine, stream, case.name) if claim.status == "passed" else ""
                    seen[case.name] = h.judge(claim, ends.get(case.name), differs)
                o = seen[case.name]
                g.log(f"  {g.student}: {q.qid} {case.name}: {o.status}{': ' + o.message[:200] if o.message else ''}")
            r.outcomes[case.name] = seen[case.name]


SANITIZER_TOOLS = ("memcheck", "racecheck")


def sanitize(g: Grading, parts: list[tuple[Path, list[h.QuestionResult]]]) -> None:
    """memcheck and racecheck over the built parts' ordinary test cases, one
    sanitized process per question and tool running all of that question's
    cases (the penalty is per question, and each process's start costs the
    sanitizer seconds), each with the graded runs' environment and sandbox,
    SANITIZE_JOBS at a time. Each question then gets what was found in the
    runs that hold any of its cases, and the notes what did not finish."""
    groups: dict[str, list[str]] = {}  # qid -> its cases, each case in the first question naming it
    limits: dict[str, float] = {}
    binaries: dict[str, Path] = {}
    owner: dict[str, str] = {}  # case -> the qid whose run holds it
    for binary, results in parts:
        for r in results:
            for c in r.question.tests:
                if c.large or c.name in owner:
                    continue
                qid = r.question.qid
                owner[c.name] = qid
                groups.setdefault(qid, []).append(c.name)
                limits[qid] = limits.get(qid, 0) + g.opts.timeout_for(r.question, c)
                binaries[qid] = binary

    def one(qid: str, tool: str) -> int | None:
        """The errors the tool reported; None when it did not finish, -1 when not run."""
        if g.budget.left() <= 0 or not g.binary_intact(binaries[qid]):
            return -1
        t0 = time.monotonic()
        # The test program notices compute-sanitizer itself and then runs
        # sampled sizes, arrays that end where their allocation ends (so a
        # read one past the end is seen) and no CUPTI. Nothing the harness
        # sets tells a sanitized run from a graded one (its results go to a
        # pipe too, and are dropped). Catch2 reads the comma-separated names
        # as "any of these". The log goes to a third pipe: no file on disk.
        cmd = ["compute-sanitizer", "--tool", tool, "--log-file", "{log}", "--print-limit", "20",
               "--padding", "256", str(binaries[qid]), ",".join(groups[qid])]
        r, results, report, log_pipe = g.sandboxed_with_pipes(
            cmd, sb.SANITIZED, min(limits[qid] * 10, max(g.budget.left(), 1)), g.logs / f"{qid}-{tool}.out",
            g.private / f"{qid}-{tool}", 0, 0, log_cap=h.LEFT_FILE_CAP)
        results.wait()
        report.wait()
        log_file = log_pipe.wait()
        shutil.copyfile(log_file, g.logs / f"{qid}-{tool}.log")
        n = h.sanitizer_errors(log_file, tool)
        if log_pipe.overflow:  # a log spammed past its cap by the code under test: counted as an error
            n = max(n or 0, 1)
            g.notes.append(f"for a person to look at: {tool}'s log of {qid}'s tests grew past "
                           f"{h.LEFT_FILE_CAP >> 20} MiB; counted as an error")
        elif n is None and r.limit:
            g.notes.append(f"{tool} on {qid}'s tests: {r.limit}")
        g.log(f"  {g.student}: {tool} {qid} ({len(groups[qid])} cases): "
              f"{'did not finish' if n is None else f'{n} errors'}, {time.monotonic() - t0:.0f} s")
        return n

    # Longest first (the graded runs' time, racecheck the slower tool), so
    # that no long run starts last and runs alone.
    jobs = sorted(((qid, tool) for qid in groups for tool in SANITIZER_TOOLS),
                  key=lambda job: (-sum(g.seconds.get(c, 0) for c in groups[job[0]]), job[1] != "racecheck"))
    with ThreadPoolExecutor(max_workers=g.opts.sanitize_jobs) as pool:
        found = dict(zip(jobs, pool.map(lambda job: one(*job), jobs)))
    for _, results in parts:
        for r in results:
            lines = []
            held = dict.fromkeys(owner[c.name] for c in r.question.tests if c.name in owner)
            for qid in held:
                for tool in SANITIZER_TOOLS:
                    n, stem = found[(qid, tool)], f"{qid}-{tool}"
                    if n == -1:
                        g.notes.append(f"{tool} not run on {qid}'s tests: the submission's time budget was spent, "
                                       "or its test binary changed")
                    elif n is None:
                        g.notes.append(f"for a person to look at: {tool} did not finish on {qid}'s tests "
                                       f"(logs/{stem}.out); no penalty was applied")
                    elif n > 0:
                        lines.append(f"{tool} reported {n} error{'s' if n > 1 else ''} in {qid}'s tests "
                                     f"(logs/{stem}.log)")
            r.sanitizer = "; ".join(dict.fromkeys(lines))


def write_outputs(out: Path, student: str, results: list[h.QuestionResult], notes: list[str], seed,
                  extra: str = "", report: str = "", seconds: float = 0) -> dict:
    """Every output file, each replaced whole (results.json last). `report`:
    what was taken of the written report (write_documents), "" for none;
    `seconds`: how long the grading took."""
    data = h.results_json(results, notes, seed, extra, report, seconds)
    questions = [r.question for r in results]
    summary = {"student": student, "seed": seed, "score": data["score"],
               "questions": {r.question.qid: {"score": r.score, "max": r.question.points} for r in results},
               "report": report,
               "gradebook": h.gradebook_line(student, results, seed, notes + ([extra] if extra else []), report)}
    h.write_atomically(out / "summary.json", json.dumps(summary, indent=2))
    text = h.table(results)
    if h.report_points(questions):
        text += "\n" + h.report_note(questions, report)
    if notes or extra:
        text += "\n\nnotes:\n" + "\n".join("  " + n for n in notes + ([extra] if extra else []))
    text += f"\n\nLAB_SEED={seed} repeats these inputs (make grade SEED={seed}).\n"
    h.write_atomically(out / "report.txt", text)
    h.write_atomically(out / "gradebook.csv", h.gradebook_header(questions) + "\n" + summary["gradebook"] + "\n")
    h.write_atomically(out / "results.json", json.dumps(data, indent=2))
    return summary


def write_documents(out: Path, documents: dict[str, bytes]) -> str:
    """The written report and its figures into out/report/ (by the harness,
    never by a submission's process); returns what was taken, "" for none."""
    folder = out / "report"
    if folder.exists():
        shutil.rmtree(folder)
    if not documents:
        return ""
    for rel, content in documents.items():
        target = folder / rel
        if folder.resolve() not in target.resolve().parents:
            continue  # collect_documents keeps paths inside; never write outside
        target.parent.mkdir(parents=True, exist_ok=True)
        h.write_atomically(target, content)
    main, figures = next(iter(documents)), len(documents) - 1
    return main + (f" and {figures} figure{'s' if figures > 1 else ''}" if figures else "")


def refuse(out: Path, student: str, reason: str, seed, report: str = "") -> dict:
    """No grading possible (no GPU): a results file with score 0 and why.
    `report`: what was taken of the written report (take_report)."""
    out.mkdir(parents=True, exist_ok=True)
    results = [h.QuestionResult(q, {}) for q in h.all_questions(h.LAB).values()]
    for r in results:
        r.build_error = "not graded: " + reason
    return write_outputs(out, student, results, [], seed, extra="NOT GRADED: " + reason, report=report)


def take_report(submission: Path, out: Path) -> str:
    """The submission's written report into out/report/, also where it cannot
    be graded: what was taken (write_documents), "" for none."""
    sub = h.collect_submission(submission, h.read_manifest(h.LAB), h.read_documents(h.LAB))
    return write_documents(out, sub.documents)


# ---------------------------------------------------------------- commands


def cmd_grade(args, opts: Options) -> int:
    submission = Path(args.submission or h.LAB).resolve()
    if not submission.exists():
        raise h.GradingError(f"SUBMISSION={args.submission}: no such file or folder")
    out = Path(args.out).resolve()
    student = args.student or (submission.name if args.submission else "this-tree")
    base = prepare_base(Path(args.base).resolve() if args.base else out / "base", opts, say)
    ok, gpu, _ = probe_gpu(base, {}, opts)
    if not ok:
        refuse(out, student, f"{gpu}. Grading needs a GPU: run make grade on a machine with one.", opts.seed,
               take_report(submission, out))
        say(f"make grade: {gpu}; wrote {out / 'results.json'} with score 0")
        return 1
    return grade_probed(submission, out, base, opts, student, gpu)


def grade_probed(submission: Path, out: Path, base: Path, opts: Options, student: str, gpu: str) -> int:
    """make grade once the probe found a GPU (`gpu`, its line): the grading,
    or a refusal where no sandbox can start. Gradescope's autograder grades
    through here too. 0 graded, 2 refused."""
    if why := opts.unsandboxed():
        refuse(out, student, why, opts.seed, take_report(submission, out))
        say(f"make grade refuses: {why}")
        return 2
    say(f"grading {submission} on {gpu[5:]} (LAB_SEED={opts.seed}); {opts.sandbox.describe()}")
    started = time.monotonic()
    grade_one(submission, out, base, opts, student, say, {})
    say("\n" + (out / "report.txt").read_text())
    say(f"graded in {time.monotonic() - started:.0f} s. results: {out / 'results.json'}, {out / 'report.txt'}, "
        f"{out / 'gradebook.csv'}, logs in {out / 'logs'}")
    return 0


def roster_of(args) -> Path | None:
    """grade-all's roster: --roster, else roster.csv in the submissions folder, where there is one."""
    if getattr(args, "roster", None):
        return Path(args.roster)
    found = Path(args.submissions) / "roster.csv" if args.submissions else None
    return found if found and found.is_file() else None


def submissions_in(folder: Path) -> list[tuple[str, Path]]:
    found = []
    for entry in sorted(folder.iterdir()):
        name = entry.name
        if name.startswith("."):
            continue
        if entry.is_dir():
            found.append((name, entry))
        elif name.lower().endswith((".zip", ".tar.gz", ".tgz", ".tar")):
            stem = name[: -len(".tar.gz")] if name.lower().endswith(".tar.gz") else entry.stem
            found.append((stem, entry))
    return found


class Records:
    """The harness's own record of each graded student (grades/.harness/records.jsonl):
    the gradebook is made from it, never from files in a student's folder. It
    is written by the harness alone, after that student's processes are gone,
    and no sandbox shows it to a submission."""

    def __init__(self, grades: Path):
        self.path = grades / ".harness" / "records.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(self.path.parent, 0o700)
        self.lock = threading.Lock()
        self.records: dict[str, dict] = {}
        if self.path.exists():
            for line in self.path.read_text().splitlines():
                try:
                    record = json.loads(line)
                    self.records[record["student"]] = record
                except (json.JSONDecodeError, KeyError, TypeError):
                    continue

    def add(self, summary: dict) -> None:
        with self.lock:
            self.records[summary["student"]] = summary
            with self.path.open("a") as f:
                f.write(json.dumps(summary) + "\n")

    def drop(self, student: str) -> None:
        """Grade this student again on the next run."""
        with self.lock:
            self.records.pop(student, None)
            h.write_atomically(self.path, "".join(json.dumps(r) + "\n" for r in self.records.values()))


def still_to_grade(args, students, records: Records) -> list:
    """The students without a record, after REGRADE's have lost theirs."""
    for student in (args.regrade or "").split(","):
        if student:
            records.drop(student)
    return [(s, p) for s, p in students if s not in records.records]


def cmd_grade_all(args, opts: Options) -> int:
    if not args.submissions:
        raise h.GradingError("make grade-all needs SUBMISSIONS=<folder with one subfolder or archive per student>")
    folder = Path(args.submissions).resolve()
    if not folder.is_dir():
        raise h.GradingError(f"SUBMISSIONS={args.submissions}: not a folder")
    grades = Path(args.out).resolve()
    grades.mkdir(parents=True, exist_ok=True)
    seed_file = grades / "seed"  # one seed for the class, kept so a resumed run grades alike
    if args.seed in (None, "") and seed_file.exists():
        opts.seed = int(seed_file.read_text())
    seed_file.write_text(str(opts.seed))
    base = prepare_base(Path(args.base).resolve() if args.base else grades / ".base", opts, say)
    students = submissions_in(folder)
    records = Records(grades)
    if args.scheduler == "slurm":
        return grade_all_slurm(args, opts, grades, base, students, records)
    if args.scheduler not in (None, "", "local"):
        raise h.GradingError(f"SCHEDULER={args.scheduler}: the schedulers are local (the default) and slurm")
    ok, gpu, count = probe_gpu(base, {}, opts)
    if not ok:
        for student, path in students:
            refuse(grades / student, student, gpu, opts.seed, take_report(path, grades / student))
        write_gradebook(grades, students, {}, roster=roster_of(args))
        say(f"make grade-all: {gpu}; nothing graded")
        return 1
    if why := opts.unsandboxed():
        say(f"make grade-all refuses: {why}")
        return 2
    todo = still_to_grade(args, students, records)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = (visible.split(",") if visible else [str(i) for i in range(count)])[:count]
    say(f"{len(students)} submissions, {len(students) - len(todo)} already graded; {len(ids)} GPU(s): {gpu[5:]}; "
        f"{opts.sandbox.describe()}")
    gpus: queue.Queue = queue.Queue()
    for i in ids:
        gpus.put(i)
    work: queue.Queue = queue.Queue()
    for item in todo:
        work.put(item)
    lock = threading.Lock()
    done = [len(students) - len(todo)]
    started = time.monotonic()
    trusted = TrustedRuns(base, opts, grades / ".harness" / "trusted-logs")
    # The trusted runs of every GPU before any grading starts: each alone on its GPU.
    if todo:
        say("trusted runs: " + ", ".join(opts.parts))
        firsts = [threading.Thread(target=trusted.run_all, args=(opts.parts, {"CUDA_VISIBLE_DEVICES": i}))
                  for i in ids]
        for t in firsts:
            t.start()
        for t in firsts:
            t.join()

    def worker():
        while True:
            try:
                student, path = work.get_nowait()
            except queue.Empty:
                return
            device = gpus.get()
            try:
                t0 = time.monotonic()
                data = grade_one(path, grades / student, base, opts, student, lambda m: None,
                                 {"CUDA_VISIBLE_DEVICES": device}, trusted=trusted)
                records.add(data)
                line = f"{student}: {data['score']:g} ({time.monotonic() - t0:.0f} s on GPU {device})"
            except Exception as err:  # one broken submission never stops the class
                line = f"{student}: harness error: {err}"
            finally:
                gpus.put(device)
            with lock:
                done[0] += 1
                say(f"[{done[0]}/{len(students)}] {line}, {time.monotonic() - started:.0f} s so far")

    threads = [threading.Thread(target=worker) for _ in ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    trusted.close()
    write_gradebook(grades, students, records.records, roster=roster_of(args))
    say(f"gradebook: {grades / 'gradebook.csv'}, scores for an upload: {grades / 'scores.csv'}")
    return 0


NOT_GRADED_YET = "not graded (see this student's report.txt)"  # a gradebook note: no record of the student


def write_gradebook(grades: Path, students, records: dict[str, dict], refused: dict[str, dict] | None = None,
                    roster: Path | None = None) -> None:
    """One line per student from the harness's records; a student without one
    (not graded yet, or refused) from the refusal the harness just wrote.
    Beside it, scores.csv for an upload (write_scores), with `roster`'s
    names, emails and SIDs where one is given."""
    questions = list(h.all_questions(h.LAB).values())
    lines = [h.gradebook_header(questions)]
    for student, _ in students:
        if student in records:
            lines.append(records[student]["gradebook"])
        elif refused and student in refused:
            lines.append(refused[student]["gradebook"])
        else:
            lines.append(h.gradebook_line(student, [h.QuestionResult(q, {}) for q in questions], None,
                                          [NOT_GRADED_YET]))
    h.write_atomically(grades / "gradebook.csv", "\n".join(lines) + "\n")
    scores = [(student, records[student]["score"] if student in records else None) for student, _ in students]
    for warning in write_scores(grades / "scores.csv", scores, max_points(questions),
                                read_roster(roster) if roster else None):
        say("scores.csv: " + warning)


# ---------------------------------------------------------------- scores for an upload
#
# scores.csv: one row per student, for an upload into Gradescope or a
# learning management system after a grading on the instructors' GPUs (a
# cluster, after the deadline). Such an upload matches a row to a student by
# email or student ID (SID) and reads one column of points; the columns
# carry the names Gradescope's own roster and score exports use.

SCORES_HEADER = ["Name", "Email", "SID", "Total Score", "Max Points", "Submission"]


def max_points(questions) -> float:
    """The points a submission's code can earn (bonus questions add to a score, not to this)."""
    return sum(q.max_points for q in questions)


def read_roster(path: Path) -> list[dict[str, str]]:
    """The class list, a CSV whose header row names (in any case) "Email"
    and/or "SID" (or "Student ID"), a name ("Name", or "First Name" and "Last
    Name") and optionally "Submission": the submission's folder or archive
    name in SUBMISSIONS where that is neither the student's email nor SID.
    Several rows naming one submission (a group) each get its score."""
    try:
        with path.open(newline="", encoding="utf-8-sig") as f:
            rows = list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise h.GradingError(f"roster {path}: {err}") from None
    out = []
    for row in rows:
        cells = {(k or "").strip().lower(): v.strip() for k, v in row.items() if isinstance(v, str)}
        name = cells.get("name") or " ".join(x for x in (cells.get("first name", ""), cells.get("last name", "")) if x)
        out.append({"name": name, "email": cells.get("email", ""),
                    "sid": cells.get("sid") or cells.get("student id", ""), "submission": cells.get("submission", "")})
    if not any(r["email"] or r["sid"] or r["submission"] for r in out):
        raise h.GradingError(f"roster {path}: no row names an Email, a SID or a Submission (its header row must "
                             "name the columns)")
    return out


def write_scores(path: Path, scores: list[tuple[str, float | None]], maximum: float,
                 roster: list[dict[str, str]] | None) -> list[str]:
    """scores.csv (SCORES_HEADER): a roster row's score is that of the
    submission named by its Submission, Email or SID (compared without case);
    without a roster, one row per submission, its name as Name (and Email,
    where it is one). The score is the code's points, bonus included; empty
    where no grading gave one (not graded, refused, no submission), so that
    an upload leaves it alone. Returns what did not match, to be said."""
    given = {student.lower(): (student, score) for student, score in scores}
    rows, warnings, matched = [], [], set()

    def cell(score):
        return "" if score is None else f"{score:g}"

    if roster is None:
        for student, score in scores:
            rows.append([student, student if "@" in student else "", "", cell(score), f"{maximum:g}", student])
    else:
        for r in roster:
            key = next((k.lower() for k in (r["submission"], r["email"], r["sid"]) if k and k.lower() in given), None)
            student, score = given[key] if key else ("", None)
            if key:
                matched.add(student)
            else:
                warnings.append(f"no submission for {r['name'] or r['email'] or r['sid']} (empty score)")
            rows.append([r["name"], r["email"], r["sid"], cell(score), f"{maximum:g}", student])
        for student, score in scores:
            if student not in matched:
                warnings.append(f"{student}: not in the roster (a row without email or SID)")
                rows.append([student, student if "@" in student else "", "", cell(score), f"{maximum:g}", student])
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(SCORES_HEADER)
    writer.writerows(rows)
    h.write_atomically(path, buffer.getvalue())
    return warnings


def gradebook_scores(path: Path) -> tuple[list[tuple[str, float | None]], float]:
    """Each student's score from a gradebook.csv (None where it says the
    student was not graded), and the maximum."""
    try:
        with path.open(newline="") as f:
            rows = list(csv.DictReader(f))
    except (OSError, csv.Error) as err:
        raise h.GradingError(f"gradebook {path}: {err}") from None
    if not rows or not {"student", "score", "max", "notes"} <= set(rows[0]):
        raise h.GradingError(f"{path}: not a gradebook.csv of make grade-all")
    scores = [(r["student"], None if r["notes"].startswith(("NOT GRADED", NOT_GRADED_YET)) else float(r["score"]))
              for r in rows]
    return scores, float(rows[0]["max"])


def cmd_scores(args, _opts) -> int:
    """scores.csv from a gradebook (and a roster), e.g. with a roster made after the grading."""
    if not args.gradebook:
        raise h.GradingError("scores needs --gradebook grades/gradebook.csv (and usually --roster roster.csv)")
    gradebook = Path(args.gradebook)
    scores, maximum = gradebook_scores(gradebook)
    out = Path(args.csv) if args.csv else gradebook.with_name("scores.csv")
    for warning in write_scores(out, scores, maximum, read_roster(Path(args.roster)) if args.roster else None):
        say(warning)
    say(f"wrote {out}: {sum(s is not None for _, s in scores)} scores of {len(scores)} submissions")
    return 0


# ---------------------------------------------------------------- grade-all on a Slurm cluster
#
# The submitting host builds the base once (a file system the nodes share) and
# submits one array job, a task per submission still to grade, each with one
# GPU. A task grades its submission exactly as make grade does (grade-task
# below) and then, its student's processes gone, writes the harness's record
# into GRADES/.harness/tasks/, which no sandbox shows a submission. Once the
# job has ended, the submitting host takes those records into records.jsonl
# and writes the gradebook from them. Run the same command again to grade
# those without a record (a task that failed, a refusal for want of a GPU).

SLURM_DIR = Path(".harness") / "slurm"
TASKS_DIR = Path(".harness") / "tasks"


def task_argv(argv: list[str]) -> list[str]:
    """grade-all's own options, less those only the submitting host reads."""
    own = {"--submissions", "--regrade", "--scheduler", "--slurm-partition", "--slurm-account", "--slurm-time",
           "--slurm-gres", "--slurm-cpus", "--slurm-opts", "--slurm-wait", "--base", "--seed", "--out", "--roster"}
    kept, i = [], 0
    while i < len(argv):
        a = argv[i]
        name = a.split("=", 1)[0]
        if name in own:
            i += 1 if "=" in a else 2
            continue
        if a != "grade-all":
            kept.append(a)
        i += 1
    return kept


def gather_tasks(grades: Path, records: Records) -> dict[str, dict]:
    """Task records into the harness's records; returns the refusals (kept out
    of records.jsonl, so that the next run grades them again)."""
    refused = {}
    folder = grades / TASKS_DIR
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            record = json.loads(path.read_text())
            student = record["student"]
        except (json.JSONDecodeError, KeyError, TypeError, OSError):
            continue
        if record.get("refused"):
            refused[student] = record
        else:
            records.add(record)
        path.unlink()
    return refused


def job_running(grades: Path) -> str:
    """The id of this class's array job when Slurm still lists it, else ""."""
    job_file = grades / SLURM_DIR / "job"
    if not job_file.exists():
        return ""
    job = job_file.read_text().strip()
    r = subprocess.run(["squeue", "-h", "-j", job, "-o", "%i"], capture_output=True, text=True)
    return job if r.returncode == 0 and r.stdout.strip() else ""


def grade_all_slurm(args, opts: Options, grades: Path, base: Path, students, records: Records) -> int:
    for tool in ("sbatch", "squeue"):
        if shutil.which(tool) is None:
            raise h.GradingError(f"SCHEDULER=slurm needs {tool} on the PATH (a Slurm login node)")
    (grades / SLURM_DIR).mkdir(parents=True, exist_ok=True)
    (grades / TASKS_DIR).mkdir(parents=True, exist_ok=True)
    refused = gather_tasks(grades, records)
    running = job_running(grades)
    if running:
        say(f"Slurm job {running} of this class is still queued or running: run this again once it has ended "
            "(squeue -j " + running + ")")
        write_gradebook(grades, students, records.records, refused, roster_of(args))
        return 0
    todo = still_to_grade(args, students, records)
    say(f"{len(students)} submissions, {len(students) - len(todo)} already graded; "
        f"{len(todo)} to grade on Slurm; {opts.sandbox.describe()}")
    if todo:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        tasks = grades / SLURM_DIR / f"tasks-{stamp}.tsv"
        tasks.write_text("".join(f"{s}\t{p}\n" for s, p in todo))
        command = [sys.executable, str(Path(__file__).resolve()), "grade-task", "--tasks", str(tasks),
                   "--out", str(grades), "--base", str(base), "--seed", str(opts.seed), *task_argv(args.argv)]
        script = grades / SLURM_DIR / f"job-{stamp}.sh"
        script.write_text("#!/bin/sh\n# one task per line of " + tasks.name + "\nexec " +
                          " ".join(shlex.quote(c) for c in command) + ' --index "$SLURM_ARRAY_TASK_ID"\n')
        script.chmod(0o755)
        sbatch = ["sbatch", "--parsable", "--job-name", "lab-grade", "--array", f"0-{len(todo) - 1}",
                  "--output", str(grades / SLURM_DIR / "%A_%a.out"), "--time", args.slurm_time or "01:00:00",
                  "--cpus-per-task", args.slurm_cpus or "8"]
        if args.slurm_gres != "":  # given empty: no GPU request
            sbatch += ["--gres", args.slurm_gres or "gpu:1"]
        if args.slurm_partition:
            sbatch += ["--partition", args.slurm_partition]
        if args.slurm_account:
            sbatch += ["--account", args.slurm_account]
        sbatch += shlex.split(args.slurm_opts or "")
        wait = args.slurm_wait in (None, "") or _flag("SLURM_WAIT", args.slurm_wait)
        if wait:
            sbatch.append("--wait")
        say("submitting: " + " ".join(shlex.quote(c) for c in sbatch + [str(script)]))
        started = time.monotonic()
        r = subprocess.Popen(sbatch + [str(script)], stdout=subprocess.PIPE, text=True)
        job = (r.stdout.readline() if r.stdout else "").strip().split(";")[0]
        if job:
            (grades / SLURM_DIR / "job").write_text(job + "\n")
            say(f"Slurm array job {job}: {len(todo)} task(s); logs in {grades / SLURM_DIR}")
        rc = r.wait()
        if not job:
            raise h.GradingError(f"sbatch refused the job (exit {rc}); see its message above")
        if not wait:
            say("submitted; run the same command again once the job has ended to gather the gradebook")
            write_gradebook(grades, students, records.records, refused, roster_of(args))
            return 0
        say(f"Slurm job {job} ended after {time.monotonic() - started:.0f} s (sbatch exit {rc})")
        refused.update(gather_tasks(grades, records))
    missing = [s for s, _ in students if s not in records.records and s not in refused]
    for s in missing:
        say(f"{s}: no record from its task (see {grades / SLURM_DIR}); run this again to grade it")
    for s, record in refused.items():
        say(f"{s}: not graded: {record['refused']}")
    write_gradebook(grades, students, records.records, refused, roster_of(args))
    say(f"gradebook: {grades / 'gradebook.csv'} ({len(records.records)} graded, {len(refused)} refused, "
        f"{len(missing)} without a record)")
    return 0


def cmd_grade_task(args, opts: Options) -> int:
    """One task of grade-all's Slurm array job: the submission on line --index
    of --tasks, graded as make grade grades it, on this node's GPU."""
    lines = Path(args.tasks).read_text().splitlines()
    index = int(args.index)
    if not 0 <= index < len(lines):
        raise h.GradingError(f"task {index}: {args.tasks} has {len(lines)} lines")
    student, path = lines[index].split("\t", 1)
    grades = Path(args.out).resolve()
    base = Path(args.base).resolve()
    if not (base / ".ready").exists():  # built by the submitting host; never by many tasks at once
        raise h.GradingError(f"task {index}: no base build in {base}")
    verify_base(base)
    ok, gpu, _ = probe_gpu(base, {}, opts)
    host = os.uname().nodename
    why = f"{gpu} (Slurm node {host})" if not ok else opts.unsandboxed()
    if why:
        data = refuse(grades / student, student, why, opts.seed, take_report(Path(path), grades / student))
        data["refused"] = why
        say(f"{student}: {why}; score 0 on {host}")
    else:
        say(f"{student}: grading on {host}, {gpu[5:]}")
        t0 = time.monotonic()
        data = grade_one(Path(path), grades / student, base, opts, student, say, {})
        say(f"{student}: {data['score']:g} in {time.monotonic() - t0:.0f} s")
    h.write_atomically(grades / TASKS_DIR / f"{student}.json", json.dumps(data))
    return 0


def cmd_gradescope(args, _opts) -> int:
    """The Gradescope autograder zip: the pristine lab, setup.sh, run_autograder."""
    out = Path(args.out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    here = Path(__file__).resolve().parent / "gradescope"
    with tempfile.TemporaryDirectory() as tmp:
        lab = Path(tmp) / "lab"
        h.copy_lab(h.LAB, lab, exclude=(out.parent,))
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
            for name in ("setup.sh", "run_autograder"):
                info = zipfile.ZipInfo(name)
                info.external_attr = 0o755 << 16
                z.writestr(info, (here / name).read_text())
            for path in sorted(lab.rglob("*")):
                if path.is_file():
                    info = zipfile.ZipInfo("lab/" + path.relative_to(lab).as_posix())
                    info.external_attr = (path.stat().st_mode & 0o777) << 16
                    z.writestr(info, path.read_bytes())
    say(f"wrote {out}: upload it as the autograder of a Gradescope assignment (see README, For instructors)")
    return 0


# ---------------------------------------------------------------- Gradescope's autograder
#
# Gradescope builds an image once (setup.sh, whose last step is
# autograder-setup below) and then runs run_autograder (autograder below) for
# each submission, in /autograder: source/ (the zip: setup.sh, run_autograder,
# lab/), submission/ (what the student uploaded), results/results.json (what
# Gradescope shows). Its runners have no GPU: a submission there gets feedback
# from the lab's CPU emulator, marked provisional and scored 0, and is graded
# on a GPU after the deadline (make grade-all, scores.csv). Where a GPU is
# there after all, it is graded exactly as make grade grades it (grade_probed).

# One emulated test case's time limit: the reference's slowest takes 14 s on a
# busy 2-core machine; a GPU runs it in well under a second.
EMU_CASE_TIMEOUT = 120
# A submission's emulated test runs in all (BUDGET overrides): with the builds,
# within a 10-minute autograder timeout.
EMU_BUDGET = 360
EMULATED_TEST = dataclasses.replace(sb.TEST, what="emulated test", gpu=False)
# One compiler at its largest: g++ on the graders' main with Catch2 v2's
# header takes about 0.8 GB; a student.cu, emulated, 0.2 GB.
BUILD_JOB_BYTES = 800 << 20
EMU_CASE_BYTES = 256 << 20  # one emulated test process, with room (the largest took 30 MB)


def memory_available() -> int:
    """Bytes of memory still free to this process: the system's available
    memory, or less where its cgroup (a container's limit: Gradescope's is
    768 MB by default) leaves less."""
    try:
        meminfo = dict(ln.split(":", 1) for ln in Path("/proc/meminfo").read_text().splitlines() if ":" in ln)
        free = int(meminfo["MemAvailable"].split()[0]) << 10
    except (OSError, KeyError, ValueError):
        free = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    cgroup = Path("/sys/fs/cgroup")
    for limit, usage in (("memory.max", "memory.current"),  # cgroup v2, then v1
                         ("memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes")):
        try:
            free = min(free, int((cgroup / limit).read_text()) - int((cgroup / usage).read_text()))
        except (OSError, ValueError):  # no such cgroup, or "max"
            continue
    return max(0, free)


def jobs_for_memory(each: int) -> int:
    """How many processes of `each` bytes to run at once: one per core, as many as the memory holds, at least one."""
    return max(1, min(os.cpu_count() or 1, memory_available() // each))


def gpu_listed() -> tuple[bool, str]:
    """Whether nvidia-smi lists a GPU, and its line or why not: asked before
    anything is built (probe_gpu then asks the lab's own probe)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False, "no NVIDIA driver: nvidia-smi is not installed"
    try:
        r = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=PROBE_TIMEOUT,
                           stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as err:
        return False, f"nvidia-smi did not answer ({err})"
    gpus = [ln for ln in r.stdout.splitlines() if ln.startswith("GPU ")]
    if r.returncode != 0 or not gpus:
        said = (r.stderr or r.stdout).strip().splitlines()
        return False, "nvidia-smi lists no GPU" + (f" ({said[-1][:200]})" if said else "")
    return True, gpus[0]


def emulated_targets(parts: list[str], device: bool) -> list[str]:
    """What an emulated check of `parts` builds: each part's test program
    and, with `device`, its kernel file compiled by nvcc (make test
    EMULATE=1's device check)."""
    return [f"build/emu/student/test_{p}" for p in parts] + \
        ([f"build/emu/device/{dict(h.PARTS)[p]}/student.o" for p in parts] if device else [])


def prepare_emulated_base(base: Path, parts: list[str], exclude: list[Path], log) -> Path:
    """What prepare_base is for grading, for feedback without a GPU: a copy of
    the lab with the emulated test programs of `parts` built by g++
    (EMULATE=1), the untouched skeleton's included, and, where nvcc is here,
    the skeleton's kernel files compiled for a GPU: a submission's copy then
    compiles only what it changed. Built once (its stamp names the lab's
    content), checked before each copy (verify_base)."""
    nvcc = shutil.which("nvcc") is not None
    fingerprint = f"{lab_fingerprint(h.LAB, exclude)}-emulated-{'+'.join(parts)}{'-nvcc' if nvcc else ''}"
    stamp = base / ".ready"
    if stamp.exists() and stamp.read_text().split()[0] == fingerprint:
        return base
    if base.exists():
        shutil.rmtree(base)
    h.copy_lab(h.LAB, base, exclude=tuple(exclude))
    jobs = jobs_for_memory(BUILD_JOB_BYTES)
    log(f"building the lab's emulated test programs once ({jobs} compiler{'s' if jobs > 1 else ''} at once) ...")
    r = h.run(["make", f"-j{jobs}", "EMULATE=1", "IMPL=student", *emulated_targets(parts, nvcc)], base,
              BASE_BUILD_TIMEOUT, env={**os.environ, "MAKEFLAGS": f"-j{jobs}"}, log=base / "build-base.log")
    if r.returncode != 0 or not all((base / t).is_file() for t in emulated_targets(parts, False)):
        raise h.GradingError(f"the lab does not build emulated here (see {base / 'build-base.log'}):\n" +
                             h.compile_errors(r.output))
    stamp.write_text(fingerprint + " " + tree_hash(base / "build"))
    return base


def device_verdict(work: Path, part: str) -> tuple[bool | None, str]:
    """What the device check (emulator/device_check.sh) said of the part's
    kernel file: True and a line where nvcc compiles it, False and nvcc's
    words where it does not, None where it was not checked."""
    part_dir = dict(h.PARTS)[part]
    stem = work / "build" / "emu" / "device" / part_dir / "student"
    source = f"{part_dir}/student.cu"
    try:
        status = h.left_text(stem.with_suffix(".status"), 64).strip()
        said = h.left_text(stem.with_suffix(".log"), 1 << 20).strip() if status == "failed" else ""
    except h.LeftFileError:
        return None, ""
    if status == "ok":
        return True, f"nvcc compiles {source} for a GPU."
    if status == "failed":
        return False, (f"nvcc does not compile {source} for a GPU: a GPU build of {part} fails, and the grading "
                       f"gives its questions 0. nvcc said:\n{said[:1500]}")
    return None, ""


def build_emulated(g: Grading, part: str, jobs: int) -> tuple[str, tuple[bool | None, str]]:
    """The part's emulated test program and, where nvcc is here, its kernel
    file compiled for a GPU, in one sandboxed make (with the copy writable
    and no GPU): (the compiler's errors, "" when it built; device_verdict)."""
    nvcc = shutil.which("nvcc") is not None
    targets = emulated_targets([part], nvcc)
    b = g.sandboxed(["make", "-k", f"-j{jobs}", "EMULATE=1", "IMPL=student", *targets], [g.work],
                    g.opts.build_timeout, g.logs / f"build-{part}.log", sb.BUILD,
                    env={**kept_env(), "MAKEFLAGS": f"-j{jobs}"})
    error = ""
    if b.returncode != 0 or not (g.work / targets[0]).is_file():
        error = h.compile_errors(b.output) if not b.timed_out else \
            f"the build {h.describe_exit(b, g.opts.build_timeout)}"
    if not nvcc:
        return error, (None, "Not checked here: whether nvcc compiles your kernel files for a GPU (this autograder "
                             "has no CUDA toolkit). A kernel that calls a host function passes on the emulator and "
                             "does not compile for a GPU.")
    return error, device_verdict(g.work, part)


def run_emulated(g: Grading, part: str, case: h.TestCase, log_path: Path) -> h.Outcome:
    """One emulated test case in a sandboxed process of its own, as a graded
    one runs (its report on a pipe only the harness holds); an emulator fault
    is quoted."""
    left = g.budget.left()
    if left <= 0:
        return h.Outcome("failed", f"not run: the {g.opts.budget:g} s for this submission's emulated tests were "
                                   "spent before this test")
    limit = min(EMU_CASE_TIMEOUT, left)
    binary = g.work / "build" / "emu" / "student" / f"test_{part}"
    stem = g.private / f"{hashlib.sha256(case.name.encode()).hexdigest()[:16]}-{part}"
    r, results, report, _ = g.sandboxed_with_pipes([str(binary), case.name], EMULATED_TEST, limit, log_path, stem,
                                                   0, h.LEFT_FILE_CAP)
    results.wait()
    outcome = h.read_report(report.wait(), case.name, r, limit)
    if outcome.status == "failed":
        fault = next((ln.strip() for ln in r.output.splitlines() if "EMULATED GPU FAULT" in ln), "")
        if fault:
            outcome.message += " -- " + fault[:400]
        elif r.timed_out:
            outcome.message += (" (on the emulator, which is far slower than a GPU: a loop that never ends, or "
                                "work far beyond what the question needs)")
    return outcome


def feedback(submission: Path, out: Path, base: Path, opts: Options, student: str, why: str,
             started: float) -> dict:
    """Feedback without a GPU: the submission's files in a copy of the
    emulated base, each part built by g++ (and its kernel file by nvcc, where
    here), every test but the [large] tier run on the CPU emulator in a
    sandboxed process of its own; results.json (harness.feedback_json),
    report.txt and the written report into `out`. Never a grade: `why` says
    why there is no GPU grading here."""
    out.mkdir(parents=True, exist_ok=True)
    logs = out / "logs"
    if logs.exists():
        shutil.rmtree(logs)
    logs.mkdir()
    sub = h.collect_submission(submission, h.read_manifest(h.LAB), h.read_documents(h.LAB))
    report = write_documents(out, sub.documents)
    verify_base(base)
    results = {qid: h.QuestionResult(q, {}) for qid, q in h.all_questions(h.LAB).items()}
    # (the report's line says what a missing report means)
    notes = [n for n in sub.notes if not n.startswith("no report found")] + [opts.sandbox.describe()]
    device: dict[str, tuple[bool | None, str]] = {}
    work = Path(tempfile.mkdtemp(prefix="lab-feedback-", dir=opts.work_root))
    g = None
    try:
        shutil.copytree(base, work, dirs_exist_ok=True, copy_function=shutil.copy2)
        (work / ".ready").unlink(missing_ok=True)
        changed = {rel: content for rel, content in sub.files.items() if (work / rel).read_bytes() != content}
        if changed:  # the skeleton's programs go: none may stand in for a file that does not compile
            shutil.rmtree(work / "build" / "emu" / "student", ignore_errors=True)
            for _, part_dir in h.PARTS:
                for left in (work / "build" / "emu" / "device" / part_dir).glob("student.*"):
                    left.unlink()
            h.place_files(work, changed)
        env = {**kept_env(), "LAB_SEED": str(opts.seed), "EMU_SEED": str(opts.seed), "NO_COLOR": "1"}
        g = Grading(work, logs, opts, env, say, student)
        opts.sandbox.own(work)
        jobs, built = jobs_for_memory(BUILD_JOB_BYTES), []
        for part, _ in h.PARTS:
            mine = [r for r in results.values() if r.question.part == part]
            if part not in opts.parts:
                for r in mine:
                    r.build_error = "not graded: not checked in this run (PARTS)"
                continue
            say(f"  {student}: building {part} for the emulator")
            error, device[part] = build_emulated(g, part, jobs)
            if error:
                notes.append(f"{part} does not compile for the emulator (logs/build-{part}.log)")
                for r in mine:
                    r.build_error = error
            else:
                built.append(part)
        cases = {(r.question.part, c.name): (r.question.part, c, logs / f"{r.question.qid}-{i + 1}.log")
                 for r in results.values() if r.question.part in built
                 for i, c in enumerate(r.question.tests) if not c.large}
        say(f"  {student}: {len(cases)} emulated tests")
        with ThreadPoolExecutor(max_workers=max(1, min(jobs_for_memory(EMU_CASE_BYTES), opts.case_jobs))) as pool:
            outcomes = dict(zip(cases, pool.map(lambda job: run_emulated(g, *job), cases.values())))
        for r in results.values():
            for c in r.question.tests:
                if (r.question.part, c.name) in outcomes:
                    r.outcomes[c.name] = outcomes[(r.question.part, c.name)]
    finally:
        if g is not None:
            shutil.rmtree(g.private, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    data = h.feedback_json(list(results.values()), notes, opts.seed, why, report, time.monotonic() - started, device)
    text = h.feedback_table(list(results.values()))
    h.write_atomically(out / "report.txt", text + "\n\n" + data["output"] + "\n")
    h.write_atomically(out / "results.json", json.dumps(data, indent=2))
    say("\n" + text)
    return data


def autograder_failed(final: Path, submission: Path, out: Path, error: str, seconds: float) -> None:
    """results.json when the autograder itself could not check a submission:
    said to be the autograder's problem, the report acknowledged."""
    try:
        report = take_report(submission, out)
    except Exception:  # noqa: BLE001 -- the report's note must still be written
        report = ""
    questions = list(h.all_questions(h.LAB).values())
    text = (f"The autograder could not check this submission ({error}). This is a problem of the autograder, not "
            "of your files: your instructor sees it, and your grade comes from a grading on a GPU after the "
            "deadline.\n" + h.report_note(questions, report))
    h.write_atomically(final, json.dumps({"score": 0, "execution_time": round(seconds), "output": text,
                                          "visibility": "visible", "stdout_visibility": "visible",
                                          "tests": h.report_test(questions, report)}, indent=2))


def emulated_base_of(args) -> Path:
    return Path(str(Path(args.base).resolve()) + "-emulated")


def cmd_autograder(args, opts: Options) -> int:
    """Gradescope's run_autograder: with a GPU (nvidia-smi lists one, nvcc is
    here, the lab's probe agrees, a sandbox starts), the grading of make
    grade; otherwise provisional feedback from the emulator. Either way
    results/results.json, and the written report acknowledged."""
    started = time.monotonic()
    root = Path(args.root).resolve()
    submission, out, final = root / "submission", Path(args.out).resolve(), root / "results" / "results.json"
    final.parent.mkdir(parents=True, exist_ok=True)
    try:
        listed, why = (False, "this autograder gives feedback only (--feedback-only 1)") \
            if _flag("--feedback-only", args.feedback_only) else gpu_listed()
        if listed and shutil.which("nvcc") is None:
            why = f"{why}, but no CUDA toolkit (nvcc) to build for it"
        elif listed:
            try:
                base = prepare_base(Path(args.base).resolve(), opts, say)
                ok, gpu, _ = probe_gpu(base, {}, opts)
            except h.GradingError as err:
                ok, gpu = False, f"{why}, but the lab does not build for it: {str(err).splitlines()[0]}"
            if ok and not opts.unsandboxed():
                status = grade_probed(submission, out, base, opts, "gradescope", gpu)
                shutil.copyfile(out / "results.json", final)
                return status
            why = gpu if not ok else f"a GPU is here, but grading needs a sandbox: {opts.unsandboxed()}"
        say(f"no GPU grading here ({why}): provisional feedback from the CPU emulator (LAB_SEED={opts.seed})")
        if not args.budget:
            opts.budget = EMU_BUDGET
        base = prepare_emulated_base(emulated_base_of(args), opts.parts, opts.outputs + [emulated_base_of(args)], say)
        feedback(submission, out, base, opts, "gradescope", why, started)
        shutil.copyfile(out / "results.json", final)
        return 0
    except Exception as err:  # noqa: BLE001 -- whatever it was, the student gets a results.json that says so
        say(f"the autograder failed: {err!r}")
        autograder_failed(final, submission, out, str(err).splitlines()[0] if str(err) else repr(err),
                          time.monotonic() - started)
        return 3


def cmd_autograder_setup(args, opts: Options) -> int:
    """setup.sh's last step, once per image: the emulated base (always: g++
    is all it needs) and, where nvcc is here (or --gpu-base 1), the GPU
    grading's base, built now so that no submission waits for them."""
    prepare_emulated_base(emulated_base_of(args), opts.parts, opts.outputs + [emulated_base_of(args)], say)
    say(f"emulated base ready: {emulated_base_of(args)}")
    if _flag("--gpu-base", args.gpu_base) if args.gpu_base not in (None, "") else shutil.which("nvcc"):
        try:
            prepare_base(Path(args.base).resolve(), opts, say)
            say(f"GPU base ready: {args.base}")
        except h.GradingError as err:  # feedback still works; a GPU grading would build it again
            say(f"warning: the GPU base did not build ({err}); submissions get emulated feedback, which needs none")
    return 0


def say(message: str) -> None:
    print(message, flush=True)


def main(argv=None) -> int:
    os.environ.pop("EMULATE", None)  # its builds are for the GPU: emulated runs are never graded
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", choices=["grade", "grade-all", "grade-task", "gradescope", "autograder",
                                        "autograder-setup", "scores"])
    p.add_argument("--submission", help="folder or archive to grade (default: this tree's student files)")
    p.add_argument("--submissions", help="grade-all: folder with one subfolder or archive per student")
    p.add_argument("--out", default="grade-results", help="where results go")
    p.add_argument("--student", help="the name in the gradebook")
    p.add_argument("--base", help="where the pristine built copy of the lab is kept")
    p.add_argument("--timeout", help="seconds per test case (default: each question's, from the points tables)")
    p.add_argument("--timeout-scale", help="multiplies the default timeouts")
    p.add_argument("--build-timeout", help="seconds for building one part")
    p.add_argument("--sanitize", help="0: leave out memcheck and racecheck (default: run them on every ordinary test case)")
    p.add_argument("--sanitize-jobs", help="sanitized runs (one per question and tool) at a time (default: three quarters of the cores, at most 12, one per 2 GiB of free GPU memory)")
    p.add_argument("--no-large", help="1: leave out the [large] tier (arrays past 2^31)")
    p.add_argument("--gpu-jobs", help="processes on one GPU at once, of every grading on this machine (default 8)")
    p.add_argument("--case-jobs", help="ordinary test cases at once (default 4; fewer on a GPU with little free memory)")
    p.add_argument("--seed", help="LAB_SEED for every test (default: a new one, written in the results)")
    p.add_argument("--arch", help="nvcc -arch (default native)")
    p.add_argument("--timing", help="1: also time each part's demo against the reference (a note, no points)")
    p.add_argument("--parts", help="comma-separated parts to grade (default all)")
    p.add_argument("--budget", help="seconds of test runs one submission may take in all (default 2400)")
    p.add_argument("--sandbox", help="0: run without the sandbox (default 1; where none can start, grading "
                                     "runs without one and says so)")
    p.add_argument("--work-root", help="where submissions' copies are made (default: the system's temporary folder)")
    p.add_argument("--regrade", help="grade-all: comma-separated students to grade again")
    p.add_argument("--scheduler", help="grade-all: local (default: one submission per GPU of this machine) or "
                                       "slurm (one array job, a task per submission)")
    p.add_argument("--slurm-partition", help="slurm: the partition (default: the cluster's default)")
    p.add_argument("--slurm-account", help="slurm: the account to charge (default: yours)")
    p.add_argument("--slurm-time", help="slurm: each task's time limit (default 01:00:00)")
    p.add_argument("--slurm-gres", help="slurm: each task's GPU request (default gpu:1; empty: none)")
    p.add_argument("--slurm-cpus", help="slurm: cores per task (default 8)")
    p.add_argument("--slurm-opts", help="slurm: more sbatch options, as one string")
    p.add_argument("--slurm-wait", help="slurm: 0: submit and return; run again after the job to gather (default 1)")
    p.add_argument("--roster", help="grade-all, scores: the class list (CSV: Email and/or SID, Name, optionally "
                                     "Submission) for scores.csv (default: roster.csv in the submissions folder)")
    p.add_argument("--gradebook", help="scores: the gradebook.csv of a grade-all")
    p.add_argument("--csv", help="scores: where scores.csv goes (default: beside the gradebook)")
    p.add_argument("--root", help="autograder, autograder-setup: Gradescope's folder (default $AUTOGRADER_ROOT, "
                                  "else /autograder)")
    p.add_argument("--feedback-only", help="autograder: 1 gives the emulated feedback even where a GPU is (a course "
                                           "that grades after the deadline only)")
    p.add_argument("--gpu-base", help="autograder-setup: 1 builds the GPU grading's base too, 0 not (default: "
                                      "where nvcc is here)")
    p.add_argument("--tasks", help=argparse.SUPPRESS)  # grade-task
    p.add_argument("--index", help=argparse.SUPPRESS)  # grade-task
    args = p.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    h.become_subreaper()
    try:
        if args.command == "gradescope":
            return cmd_gradescope(args, None)
        if args.command == "scores":
            return cmd_scores(args, None)
        if args.command.startswith("autograder"):
            root = Path(args.root or os.environ.get("AUTOGRADER_ROOT") or "/autograder").resolve()
            args.root, args.out = str(root), str(root / "results" / "lab")
            args.base = args.base or str(root / "lab-base")
        opts = Options(args)
        return {"grade": cmd_grade, "grade-all": cmd_grade_all, "grade-task": cmd_grade_task,
                "autograder": cmd_autograder, "autograder-setup": cmd_autograder_setup}[args.command](args, opts)
    except h.GradingError as err:
        print(f"grade: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
