"""The trusted runs: the graders on the trusted host implementation
(build/oracle/, no student code), whose results every graded run must
reproduce byte for byte."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from . import pcie
from . import results as res
from .course_table import LAB, read_points, read_test_cases
from .gpus import LabError, gpu_place, place
from .outputs import say
from .processes import describe_exit, run, test_env
from .reports import read_report_ends

if TYPE_CHECKING:  # for the annotations only
    from .course_table import TestCase
    from .options import Options
    from .reports import Trusted


class TrustedRuns:
    """The graders run on the trusted host implementation (build/oracle/, no
    student code): the results every student run must reproduce. Run once per
    GPU for a grading run, every part and tier; grade-all's workers share one."""

    def __init__(self, base: Path, opts: Options, logs: Path):
        self.base, self.opts, self.logs = base, opts, logs
        self.lock = threading.Lock()
        self.done: dict[str, threading.Event] = {}  # per GPU
        self.results: dict[tuple, tuple[dict[str, Trusted], res.Stream]] = {}  # (part, large, GPU)
        self.seconds: dict[str, float] = {}  # each test case's trusted run
        self.wall: dict[str, float] = {}  # per GPU, for the grading's log
        self.pcie: dict[str, int | None] = {}  # per GPU: bytes its trusted runs moved over PCIe (pcie.py)
        # The trusted results, where no sandboxed process can see them.
        self.private = Path(tempfile.mkdtemp(prefix="lab-trusted-", dir=opts.work_root))

    def close(self) -> None:
        shutil.rmtree(self.private, ignore_errors=True)

    def run_all(self, gpu_env: dict) -> None:
        """Every tier of the parts these runs were made for (their own
        options', whatever part a caller grades: the selftest shares one
        across faults of one part each) on this GPU, now, alone on it; returns
        when all have ended. The first caller for a GPU runs them, others wait."""
        gpu = gpu_env.get("CUDA_VISIBLE_DEVICES", "")
        with self.lock:
            event = self.done.get(gpu)
            mine = event is None
            if mine:
                event = self.done[gpu] = threading.Event()
        if mine:
            try:
                self._run_all(self.opts.parts, gpu_env)
            finally:
                event.set()
        event.wait()

    def part(self, part: str, large: bool, gpu_env: dict) -> tuple[dict[str, Trusted], res.Stream]:
        """The tier's results (how each test ended, what it handed over)."""
        self.run_all(gpu_env)
        gpu = gpu_env.get("CUDA_VISIBLE_DEVICES", "")
        return self.results.get((part, large, gpu), ({}, res.Stream(self.private / "none")))

    def limit(self, part: str, case: TestCase) -> float:
        """A trusted process's time limit: generous (a trusted run cut short is a lab error)."""
        return 600 + 4 * max((q.timeouts.get(case.name, q.timeout) for q in read_points(LAB, part).values()
                              if case in q.tests), default=60)

    def _run_all(self, parts: list[str], gpu_env: dict) -> None:
        """A process per test case, opts.trusted_jobs at a time, the [large] ones
        first and each holding a "large" place, then the longest limits
        first: the runs take about their longest case, not a part's sum."""
        started = time.monotonic()
        gpu = gpu_env.get("CUDA_VISIBLE_DEVICES", "")
        jobs = [(part, c) for part in parts for c in read_test_cases(LAB, part) if self.opts.large or not c.large]
        jobs.sort(key=lambda job: (not job[1].large, -self.limit(*job)))
        with pcie.Meter(gpu_place(self.base, gpu_env)[len("gpu-"):]) as meter, \
                ThreadPoolExecutor(max_workers=max(1, self.opts.trusted_jobs)) as pool:
            pieces = list(pool.map(lambda ij: self._process(ij[1][0], ij[1][1], f"{ij[1][0]}{gpu}-{ij[0]}", gpu_env),
                                   enumerate(jobs)))
        self.pcie[gpu] = meter.bytes
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

    def _process(self, part: str, case: TestCase, stem: str, gpu_env: dict) -> tuple[dict[str, Trusted], res.Stream]:
        """One trusted process running one test case: how it ended, and its results."""
        self.logs.mkdir(parents=True, exist_ok=True)
        name = f"trusted-{stem}.log"
        report, stream = self.private / f"{stem}.jsonl", self.private / f"{stem}.results"
        with open(stream, "wb") as sink:
            env = {**test_env(self.opts, gpu_env), "LAB_TRACE": "0", "LAB_CONFINE": "0", "LAB_REPORT": str(report),
                   "LAB_RESULTS_FD": str(sink.fileno())}
            limit = self.limit(part, case)
            try:
                with place("large", self.opts.large_jobs) if case.large else contextlib.nullcontext(), \
                        place(gpu_place(self.base, gpu_env), self.opts.gpu_jobs):
                    r = run([str(self.base / "build" / "oracle" / f"test_{part}"), case.name],
                              self.base, limit, env=env, log=self.logs / name, pass_fds=(sink.fileno(),))
            except LabError as err:  # no trusted results for it: its test is not graded, a lab error
                say(f"warning: the trusted run of {part}'s {case.name!r} did not start: {err}")
                return {}, res.Stream(stream, problem=str(err))
        self.seconds[case.name] = r.seconds
        if r.returncode not in (0, 1):
            say(f"warning: the trusted run of {part}'s {case.name!r} {describe_exit(r, limit)} "
                f"(see {self.logs / name})")
        return read_report_ends(report), res.read_stream(stream)

    def summary(self) -> str:
        """For the grading's log: the runs' wall time and their longest cases."""
        longest = sorted(self.seconds.items(), key=lambda kv: -kv[1])[:3]
        return (f"{sum(self.wall.values()):.0f} s for {len(self.seconds)} processes; longest "
                + ", ".join(f"{name} {sec:.0f} s" for name, sec in longest))
