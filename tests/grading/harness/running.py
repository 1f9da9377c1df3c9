"""One submission's runs: each command in a sandbox of its own
(sandbox.py) with its limits, reports and results on pipes only the harness
holds, the time budget, the binaries checked unchanged before each test; the
graded test cases, and the emulated ones of the feedback without a GPU."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import signal
import socket
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from . import pcie
from . import results as res
from . import sandbox as sb
from .gpus import PLACE_WAIT, LabError, place
from .processes import LEFT_FILE_CAP, kept_env, run
from .reports import Outcome, read_report

if TYPE_CHECKING:  # for the annotations only
    from .course_table import Question, TestCase
    from .judging import QuestionResult
    from .options import Options
    from .processes import Run


# The most results one test process may hand over (bytes) where no trusted
# run's are known: ten times what the reference's largest test case hands over.
RESULTS_CAP = 4 << 30


def results_cap(expected: res.Stream | None, name: str) -> int:
    """What one test case may hand over: twice the trusted run's results for
    it (known before any test runs) and 1 MiB, or RESULTS_CAP without them.
    Kept only until it is compared (run_case)."""
    if expected is None:
        return RESULTS_CAP
    return (1 << 20) + 2 * sum(r.size + 64 + len(r.what) for r in expected.tests.get(name, []))


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
        self.metered = False  # each judged call's PCIe bytes metered, one test case at a time (pcie.py)
        self.traffic: dict[str, pcie.Traffic] = {}  # by test case, where metered
        self.own_lock, self.owned = threading.Lock(), False
        self.base: Path | None = None  # the lab's own build: the judge (build/judge/) is there
        self.judge_env: dict = env  # the judge's environment: the graded one's, seen from outside the sandbox
        # The results the graded processes hand over, where no sandboxed process can see them.
        self.private = Path(tempfile.mkdtemp(prefix="lab-results-", dir=opts.work_root))

    @property
    def gpu_uuid(self) -> str:
        """The grading's GPU by its UUID, where its place names one (gpu_place); else ""."""
        return self.gpu_place[len("gpu-"):] if self.gpu_place.startswith("gpu-GPU-") else ""

    def sandboxed(self, cmd: list[str], writable: list[Path], timeout: float, log: Path, limits: sb.Limits,
                  env: dict | None = None, cwd: Path | None = None, pass_fds: tuple[int, ...] = (),
                  started=None) -> Run:
        """`cmd` in a sandbox of its own with `limits` (sandbox.py), the work
        copy readable (or writable, when in `writable`) and the grading's GPU
        only where the limits show one."""
        sb_ = self.opts.sandbox
        cwd = cwd or self.work
        readable = [] if self.work in writable else [self.work]
        # Its places are held by this grading's own processes (its GPU is its
        # own: lease), each ended within the submission's time budget: a wait
        # past that budget is the lab's, never one a slow submission caused.
        wait = max(PLACE_WAIT, self.opts.budget + 60)
        with place(self.gpu_place, self.opts.gpu_jobs, wait) if limits.gpu else contextlib.nullcontext():
            box = sb_.box(limits)
            try:
                r = run(box.prefix + sb_.wrap(cmd, cwd, limits, writable=writable, readable=readable, gpu=self.gpu),
                          cwd, timeout, env={**(env or self.env), "HOME": "/tmp"}, log=log, sandboxed=sb_.available,
                          pass_fds=pass_fds, started=started)
            finally:
                limit = box.close()
        r.limit, r.peak_memory = limit, box.peak_memory
        return r

    def sandboxed_with_pipes(self, cmd: list[str], limits: sb.Limits, timeout: float, log: Path, stem: Path,
                             results_cap: int, report_cap: int, log_cap: int = 0, env: dict | None = None
                             ) -> tuple[Run, res.Collector, res.Collector, res.Collector | None]:
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

    def judged(self, part: str, tests: str, limit: float, log: Path, stem: Path, results_cap: int, report_cap: int,
               prefix: tuple[str, ...] = (), log_cap: int = 0, sanitized: bool = False, limits: sb.Limits = sb.TEST
               ) -> tuple[Run, Run | None, res.Collector, res.Collector, res.Collector | None]:
        """The test cases `tests` (Catch2's filter) judged (tests/judge/): the
        lab's judge, trusted and outside the sandbox, runs them with every
        array in device memory it owns and checks the outputs itself; the
        part's graded process (`prefix`, such as compute-sanitizer's command,
        then serve_<part>) runs in the sandbox and can do nothing but answer
        the judge's calls. It gets no seed and hands over nothing: the report
        and results on the harness's pipes are the judge's. Returns the
        judge's run, the graded process's, and the collectors of
        sandboxed_with_pipes (the log's on the graded side: a sanitizer's)."""
        judge_end, graded_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pipes = [os.pipe() for _ in range(3 if log_cap else 2)]
        collectors = [res.Collector(read_end, stem.with_suffix(suffix), cap)
                      for (read_end, _), suffix, cap in zip(pipes, (".results", ".report", ".log"),
                                                            (results_cap, report_cap, log_cap))]
        ends = [write_end for _, write_end in pipes]
        cmd = [*prefix, str(binary_of(self.work, part, judged=True))]
        graded_fds = (graded_end.fileno(),)
        if log_cap:
            os.fchmod(ends[2], 0o622)  # as in sandboxed_with_pipes
            cmd = [a.replace("{log}", f"/proc/self/fd/{ends[2]}") for a in cmd]
            graded_fds += (ends[2],)
        graded_env = {k: v for k, v in self.env.items() if k not in ("LAB_SEED", "LAB_LARGE")}
        graded_env["LAB_JUDGE_FD"] = str(graded_end.fileno())
        graded_env["CUDA_MODULE_LOADING"] = "EAGER"  # its kernels' code loaded before its first call (serve.cpp)
        started, group, graded_run, lab_errors = threading.Event(), [], [], []

        def graded():
            try:
                graded_run.append(self.sandboxed(cmd, [], limit, log.with_name(log.stem + "-graded.log"), limits,
                                                 env=graded_env, pass_fds=graded_fds,
                                                 started=lambda pid: (group.append(pid), started.set())))
            except LabError as err:  # never started (no GPU place): the judge's run is not the submission's
                lab_errors.append(err)
            finally:
                started.set()

        thread = threading.Thread(target=graded, daemon=True)
        thread.start()
        try:
            started.wait(limit)  # the graded process has its end (a GPU place may be waited for first)
            graded_end.close()
            if log_cap:
                os.close(ends[2])
            env = {**self.judge_env, "LAB_TRACE": "0", "LAB_CONFINE": "0", "LAB_JUDGE_FD": str(judge_end.fileno()),
                   "LAB_RESULTS_FD": str(ends[0]), "LAB_REPORT_FD": str(ends[1])}
            if sanitized:
                env["LAB_JUDGE_SANITIZED"] = "1"
            elif self.metered:
                log.with_suffix(".pcie.tsv").unlink(missing_ok=True)
                env["LAB_PCIE_GPU"] = self.gpu_uuid
                env["LAB_PCIE_LOG"] = str(log.with_suffix(".pcie.tsv"))
            r = run([str(self.base / "build" / "judge" / f"test_{part}"), tests], self.base, limit, env=env, log=log,
                    pass_fds=(judge_end.fileno(), ends[0], ends[1]))
        finally:
            judge_end.close()
            graded_end.close()  # closed already, unless the judge never started
            for end in ends[:2]:
                os.close(end)
        # The graded process ends when the judge's end closes; one that does not is stopped.
        thread.join(5)
        if thread.is_alive() and group:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group[0], signal.SIGKILL)
        thread.join()
        if lab_errors:
            for c in collectors:
                c.wait()
            raise lab_errors[0]
        return r, (graded_run[0] if graded_run else None), collectors[0], collectors[1], \
            (collectors[2] if log_cap else None)

    def build(self, target: str, log: Path) -> Run:
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

    def run_case(self, binary: Path, case: TestCase, log_path: Path, timeout: float,
                 expected: res.Stream | None = None, again: bool = False) -> tuple[Outcome, str]:
        """One test case in a fresh sandbox: the work copy read-only and no
        folder it may write but its private /tmp; its report and its results go
        to pipes whose other ends only the harness holds. Its results, kept in
        this grading's private folder up to results_cap, are compared with the
        trusted run's (`expected`) at once and dropped: returns how it ended and
        what differs first ("" when nothing does, or nothing was compared).
        No file a test leaves is read. A GPU place never free: LabError.
        Metered (pcie.py), a case whose calls moved more than their launches
        need runs once more (`again`), and fails only if it does so again: a
        burst of a process outside the grading cannot cost a point."""
        left = self.budget.left()
        if left <= 0:
            return Outcome("failed", f"not run: the submission's time budget ({self.opts.budget:g} s, BUDGET) "
                                       "was spent before this test"), ""
        if not self.binary_intact(binary):
            return Outcome("failed", "not run: the test binary changed after it was built (by an earlier test?)"), ""
        limit = min(timeout, left)
        stem = self.private / f"{hashlib.sha256(case.name.encode()).hexdigest()[:16]}-{binary.name}"
        cap = results_cap(expected, case.name)
        if self.opts.judge:
            r, graded, results, report, _ = self.judged(part_of(binary), case.name, limit, log_path, stem,
                                                        cap, LEFT_FILE_CAP)
            if graded is not None:
                r.peak_memory = graded.peak_memory
                r.limit = graded.limit
        else:
            r, results, report, _ = self.sandboxed_with_pipes([str(binary), case.name], sb.TEST, limit, log_path,
                                                              stem, cap, LEFT_FILE_CAP)
        self.peaks[case.name] = r.peak_memory
        stream = results.finish()
        differs = res.compare(stream, expected, case.name) if expected is not None else ""
        stream.path.unlink(missing_ok=True)
        outcome = read_report(report.wait(), case.name, r, limit)
        report.path.unlink(missing_ok=True)
        if report.overflow:
            outcome = Outcome("failed", f"its report grew past the {LEFT_FILE_CAP >> 20} MiB read of it")
        self.seconds[case.name] = r.seconds
        calls = pcie.read_calls(log_path.with_suffix(".pcie.tsv")) if self.metered else None
        if calls is not None:
            self.traffic[case.name] = traffic = pcie.traffic(calls)
            if (why := traffic.verdict()) and not again:
                outcome, differs = self.run_case(binary, case, log_path.with_name(log_path.stem + "-again.log"),
                                                 timeout, expected, again=True)
                if not self.traffic[case.name].verdict():
                    self.notes.append(f"host traffic: {case.name}: {why} in one run, not in a second, which counts")
                return outcome, differs
            if why:
                self.notes.append(f"host traffic: {case.name}: {why} (twice)")
                outcome = Outcome("failed", why + (f" (and: {outcome.message})" if outcome.status == "failed" else ""))
        if outcome.status == "failed" and "during the test" in outcome.message and r.output.strip():
            outcome.message += " -- last output: " + r.output.strip().splitlines()[-1][:300]
        if not r.timed_out and r.seconds > timeout / 3:
            self.notes.append(f"for a person to look at: {case.name} took {r.seconds:.0f} s of its {timeout:g} s limit")
        return outcome, differs


def binary_of(work: Path, part: str, judged: bool = False) -> Path:
    """The graded program of a part: judged, the student's object served to the
    judge (serve_<part>); else the graders without answers, the student's object last."""
    return work / "build" / "graded" / (f"serve_{part}" if judged else f"test_{part}")


def part_of(binary: Path) -> str:
    """The part a graded program (binary_of) is of."""
    return binary.name.split("_", 1)[1]


Claims = dict[str, tuple[Outcome, str]]


def run_cases(g: Grading, parts: dict[str, list[Question]], expected: dict[str, float], trusted
              ) -> dict[tuple[str, bool], Claims]:
    """Runs every test case of the built `parts`' questions, each in a process of its
    own: what each claims and what its results differ in from the trusted
    run's (`trusted(part, large)`: that tier's trusted stream), by part, tier
    and test name (a test tagged with two questions runs once). The ordinary
    cases CASE_JOBS at a time, the longest first (by `expected`, the trusted
    run's seconds); beside them the [large] tier's, one at a time and each
    holding a "large" place (each fills much of the GPU's memory), none
    with NO_LARGE=1. Where the grading is metered (g.metered), every case
    one after another."""
    jobs: dict[tuple[str, str], tuple] = {}
    for part, questions in parts.items():
        for q in questions:
            for i, case in enumerate(q.tests):
                if (part, case.name) not in jobs and (g.opts.large or not case.large):
                    jobs[(part, case.name)] = (part, case, g.logs / f"{q.qid}-{i + 1}.log", g.opts.timeout_for(q, case))

    def run(job):
        part, case, log, timeout = job
        try:
            with place("large", g.opts.large_jobs) if case.large else contextlib.nullcontext():
                return g.run_case(binary_of(g.work, part, g.opts.judge), case, log, timeout, trusted(part, case.large))
        except LabError as err:
            return Outcome("not-graded", f"not graded, a lab error: {err}"), ""

    ordinary = sorted((j for j in jobs.values() if not j[1].large), key=lambda j: -expected.get(j[1].name, 0))
    big = [j for j in jobs.values() if j[1].large]
    claims: dict[tuple[str, bool], Claims] = {(part, large): {} for part in parts for large in (False, True)}
    # Metered, one test case at a time: a call's bytes are then its own (pcie.py).
    with ThreadPoolExecutor(max_workers=1 if g.metered else g.opts.case_jobs) as pool, \
            ThreadPoolExecutor(max_workers=1) as own_lane:
        lane = pool if g.metered else own_lane
        futures = [pool.submit(run, j) for j in ordinary] + [lane.submit(run, j) for j in big]
        for (part, case, _, _), f in zip(ordinary + big, futures):
            claims[(part, case.large)][case.name] = f.result()
    return claims


# One emulated test case's time limit: the reference's slowest takes 14 s on a
# busy 2-core machine; a GPU runs it in well under a second.
EMU_CASE_TIMEOUT = 120


EMULATED_TEST = dataclasses.replace(sb.TEST, what="emulated test", gpu=False)


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


def run_emulated(g: Grading, part: str, case: TestCase, log_path: Path) -> Outcome:
    """One emulated test case in a sandboxed process of its own, as a graded
    one runs (its report on a pipe only the harness holds); an emulator fault
    is quoted."""
    left = g.budget.left()
    if left <= 0:
        return Outcome("failed", f"not run: the {g.opts.budget:g} s for this submission's emulated tests were "
                                   "spent before this test")
    limit = min(EMU_CASE_TIMEOUT, left)
    binary = g.work / "build" / "emu" / "student" / f"test_{part}"
    stem = g.private / f"{hashlib.sha256(case.name.encode()).hexdigest()[:16]}-{part}"
    r, results, report, _ = g.sandboxed_with_pipes([str(binary), case.name], EMULATED_TEST, limit, log_path, stem,
                                                   0, LEFT_FILE_CAP)
    results.wait()
    outcome = read_report(report.wait(), case.name, r, limit)
    if outcome.status == "failed":
        fault = next((ln.strip() for ln in r.output.splitlines() if "EMULATED GPU FAULT" in ln), "")
        if fault:
            outcome.message += " -- " + fault[:400]
        elif r.timed_out:
            outcome.message += (" (on the emulator, which is far slower than a GPU: a loop that never ends, or "
                                "work far beyond what the question needs)")
    return outcome


def run_emulated_cases(g: Grading, results: dict[str, QuestionResult], built: list[str]) -> None:
    """Every test case of the built parts but the [large] tier on the
    emulator, as many at once as the memory holds (and CASE_JOBS): their
    outcomes into `results`."""
    cases = {(r.question.part, c.name): (r.question.part, c, g.logs / f"{r.question.qid}-{i + 1}.log")
             for r in results.values() if r.question.part in built
             for i, c in enumerate(r.question.tests) if not c.large}
    g.log(f"  {g.student}: {len(cases)} emulated tests")
    with ThreadPoolExecutor(max_workers=max(1, min(jobs_for_memory(EMU_CASE_BYTES), g.opts.case_jobs))) as pool:
        outcomes = dict(zip(cases, pool.map(lambda job: run_emulated(g, *job), cases.values())))
    for r in results.values():
        for c in r.question.tests:
            if (r.question.part, c.name) in outcomes:
                r.outcomes[c.name] = outcomes[(r.question.part, c.name)]
