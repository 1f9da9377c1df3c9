"""A grading's settings, from the command line (and the Makefile's
variables): time limits, budget, sanitizers, the [large] tier, the sandbox,
how many processes at once, the parts and the seed."""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from . import sandbox as sb
from .course_table import GradingError, LAB, PARTS

if TYPE_CHECKING:  # for the annotations only
    from .course_table import Question, TestCase


# A grading's ordinary test cases at once by default (CASE_JOBS=n; its [large]
# ones run beside them, one at a time); fewer on a GPU with little free memory
# (Options.fit_gpu).
CASE_JOBS = 4

# How long a grading waits for its GPU (LEASE_WAIT=s): another grading holds it
# for that one's whole run (a grading of the reference: 75-120 s; one that
# spends its whole time budget: about an hour).
LEASE_WAIT = 3600


# Processes on one GPU at once, of every grading on the machine (GPU_JOBS=n;
# place): with sixteen, four gradings of the reference at once on an H200
# slowed its "every size" tests four-fold and lost points.
GPU_JOBS = 8


class Options:
    def __init__(self, args):
        self.timeout = positive("TIMEOUT", args.timeout) if args.timeout not in (None, "") else None
        self.timeout_scale = positive("TIMEOUT_SCALE", args.timeout_scale or "1")
        # Twenty times the reference's slowest part (Part 3's student.cu: 6 s on one
        # core of a 2-core machine), so that a compile bomb ends soon.
        self.build_timeout = positive("BUILD_TIMEOUT", args.build_timeout or "120")
        self.budget = positive("BUDGET", getattr(args, "budget", None) or "2400")
        # Sanitizers run by default; SANITIZE=0 leaves them out.
        self.sanitize = args.sanitize in (None, "") or flag("SANITIZE", args.sanitize)
        self.sanitize_asked = args.sanitize not in (None, "")
        self.large = not flag("NO_LARGE", args.no_large)
        # Each judged call's PCIe bytes metered, test cases one at a time (pcie.py), where NVML reads the GPU.
        pcie = getattr(args, "pcie", None)
        self.pcie = pcie in (None, "") or flag("PCIE", pcie)
        # Why the [large] tier is not graded ("" when it is): NO_LARGE=1, or a
        # GPU whose total memory cannot hold it (the lab's probe decides once).
        self.large_off = "" if self.large else "off (NO_LARGE=1)"
        # [large] processes at once on this machine ("large" places; probe_gpu
        # sets it from the GPU's total memory and the host's).
        self.large_jobs = 1
        sandbox_flag = getattr(args, "sandbox", None)
        self.sandbox = sb.Sandbox(enabled=sandbox_flag in (None, "") or flag("SANDBOX", sandbox_flag),
                                  hidden=(LAB, *[Path(p).resolve() for p in (args.out, args.base) if p]))
        self.work_root = Path(getattr(args, "work_root", None) or tempfile.gettempdir()).resolve()
        self.arch = args.arch or "native"
        self.timing = flag("TIMING", args.timing)
        # The judge (tests/judge/) owns every test case's arrays and checks
        # them itself; JUDGE=0: the graded process runs the graders itself and
        # hands over its results (the path before the judge, for comparison).
        judge = getattr(args, "judge", None)
        self.judge = judge in (None, "") or flag("JUDGE", judge)
        self.outputs = [Path(p).resolve() for p in (args.out, args.base) if p]  # never copied into a lab copy
        self.jobs = str(os.cpu_count() or 2)
        # Sanitized runs (one per question and tool) this many at a time.
        self.sanitize_jobs = max(1, int(positive("SANITIZE_JOBS", getattr(args, "sanitize_jobs", None)
                                                  or min(12, (os.cpu_count() or 2) * 3 // 4) or 1)))
        # Processes on one GPU at once, of every grading on this machine ("gpu" places).
        self.gpu_jobs = max(1, int(positive("GPU_JOBS", getattr(args, "gpu_jobs", None) or str(GPU_JOBS))))
        # Trusted processes at once (one per test case; the [large] ones also wait for a place).
        self.trusted_jobs = os.cpu_count() or 2
        # Ordinary test cases at once (1: one test process at a time).
        self.case_jobs = max(1, int(positive("CASE_JOBS", getattr(args, "case_jobs", None) or str(CASE_JOBS))))
        # How long a grading waits for its GPU while other gradings hold it (lease).
        self.lease_wait = positive("LEASE_WAIT", getattr(args, "lease_wait", None) or str(LEASE_WAIT))
        self.jobs_asked = {"sanitize": bool(getattr(args, "sanitize_jobs", None)),
                           "case": bool(getattr(args, "case_jobs", None))}
        self.parts = [p for p, _ in PARTS] if not args.parts else args.parts.split(",")
        for p in self.parts:
            if p not in dict(PARTS):
                raise GradingError(f"PARTS: unknown part {p!r} (parts: {', '.join(p for p, _ in PARTS)})")
        if args.seed not in (None, ""):
            if not args.seed.isdigit():
                raise GradingError(f"SEED must be a non-negative whole number, got {args.seed!r}")
            self.seed = int(args.seed)
        else:
            self.seed = secrets.randbelow(2**31)  # new inputs each grading: no answer can be prepared
        if self.sanitize and shutil.which("compute-sanitizer") is None:
            if self.sanitize_asked:
                raise GradingError("SANITIZE=1 needs compute-sanitizer (CUDA toolkit) on the PATH")
            self.sanitize = False  # said in each report (sanitizer_note)

    def unsandboxed(self) -> str:
        """Why grading refuses to run (one line): no sandbox here, or SANDBOX=0
        said; "" when a sandbox starts. Without one a test runs as the
        harness's own user: it can end the harness and write results.json
        itself, so nothing it could forge is graded (the emulated feedback,
        never a grade, still runs)."""
        if self.sandbox.available:
            return ""
        return (f"not graded without a sandbox ({self.sandbox.why}): a test outside one runs as the harness's user "
                "and can end the harness and write results.json itself")

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

    def timeout_for(self, q: Question, case: TestCase) -> float:
        """A test case's time limit: its own row of the points table, else its question's; TIMEOUT and TIMEOUT_SCALE win."""
        return self.timeout if self.timeout is not None else q.timeouts.get(case.name, q.timeout) * self.timeout_scale


def positive(name, text) -> float:
    try:
        value = float(text)
    except ValueError:
        raise GradingError(f"{name} must be a number of seconds > 0, got {text!r}") from None
    if not value > 0:
        raise GradingError(f"{name} must be > 0, got {text!r}")
    return value


def flag(name, text) -> bool:
    if text in (None, "", "0"):
        return False
    if text == "1":
        return True
    raise GradingError(f"{name} must be 0 or 1, got {text!r}")
