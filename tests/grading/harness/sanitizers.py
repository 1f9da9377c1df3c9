"""compute-sanitizer (memcheck, racecheck, synccheck) over the graded test cases: what
it finds costs a question part of its points (the course table's penalty)."""

from __future__ import annotations

import re
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from . import sandbox as sb
from .gpus import LabError
from .processes import LEFT_FILE_CAP, LeftFileError, left_text
from .running import part_of

if TYPE_CHECKING:  # for the annotations only
    from .judging import QuestionResult
    from .running import Grading


# synccheck too: barriers that live threads of a block reach at different
# places. (A `return` before __syncthreads() is not reported, on an H200: a
# barrier waits only for threads that have not exited, as PTX defines it.)
SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck")


def sanitize(g: Grading, parts: list[tuple[Path, list[QuestionResult]]]) -> None:
    """Each of SANITIZER_TOOLS over the built parts' ordinary test cases, one
    sanitized process per question and tool running all of that question's
    cases (the penalty is per question, and each process's start costs the
    sanitizer seconds), each with the graded runs' environment and sandbox,
    SANITIZE_JOBS at a time. Each question then gets what was found in the
    runs that hold any of its cases, and the notes what did not finish."""
    runs = SanitizedRuns(parts, g.opts.timeout_for)
    # Longest first (the graded runs' time, racecheck the slower tool), so
    # that no long run starts last and runs alone.
    jobs = sorted(((qid, tool) for qid in runs.groups for tool in SANITIZER_TOOLS),
                  key=lambda job: (-sum(g.seconds.get(c, 0) for c in runs.groups[job[0]]), job[1] != "racecheck"))
    with ThreadPoolExecutor(max_workers=g.opts.sanitize_jobs) as pool:
        found = dict(zip(jobs, pool.map(lambda job: sanitize_one(g, runs, *job), jobs)))
    for _, results in parts:
        for r in results:
            r.sanitizer = findings(g, runs, found, r)


class SanitizedRuns:
    """What the sanitized processes run: each question's cases (each case in
    the first question naming it), their time limits added up, the program."""

    def __init__(self, parts: list[tuple[Path, list[QuestionResult]]], timeout_for):
        self.groups: dict[str, list[str]] = {}  # qid -> its cases, each case in the first question naming it
        self.limits: dict[str, float] = {}
        self.binaries: dict[str, Path] = {}
        self.owner: dict[str, str] = {}  # case -> the qid whose run holds it
        for binary, results in parts:
            for r in results:
                for c in r.question.tests:
                    if c.large or c.name in self.owner:
                        continue
                    qid = r.question.qid
                    self.owner[c.name] = qid
                    self.groups.setdefault(qid, []).append(c.name)
                    self.limits[qid] = self.limits.get(qid, 0) + timeout_for(r.question, c)
                    self.binaries[qid] = binary


# A sanitized run's expected time: its tool's start plus a share of the graded
# runs of the same cases (their seconds, measured just before). Measured on
# H100s, eight gradings of a class of 16 (the reference, faults, attacks):
# each tool's run over a question's cases took 2-40 s, at most 0.96 of this
# (X3 under racecheck); on an H200, at most 1.05 of it and 1.5 s over it (Q2
# under racecheck, beside another grading). The limit is SANITIZED_LIMIT
# times it (Q1's: about 290 s, where ten times its cases' limits allowed
# 3150 s). A run past SANITIZED_NOTE times it and SLOW_RUN_SLACK seconds over
# it is a note for a person: on an H200 a process stalled 40 s only under the
# sanitizer (the sanitizer-stall attack) took 42-46 s where 29-31 s were
# expected, 1.47 times and 13-16 s over, which a ratio of 1.5 alone missed.
SANITIZER_COST = {"memcheck": (25.0, 0.5), "racecheck": (25.0, 0.5), "synccheck": (25.0, 0.5)}
SANITIZED_LIMIT, SANITIZED_NOTE, SLOW_RUN_SLACK = 4.0, 1.25, 10.0
SLOW_RUN_NOTE = "runs' time predicts about"  # the words of that note (selftest looks for them)


def expected_seconds(g: Grading, runs: SanitizedRuns, qid: str, tool: str) -> float:
    """What `tool` over qid's cases should take, from their graded runs' seconds."""
    start, slowdown = SANITIZER_COST[tool]
    return start + slowdown * sum(g.seconds.get(c, 0.0) for c in runs.groups[qid])


def sanitize_one(g: Grading, runs: SanitizedRuns, qid: str, tool: str) -> int | None:
    """The errors the tool reported on a question's cases; None when it did not finish, -1 when not run."""
    if g.budget.left() <= 0 or not g.binary_intact(runs.binaries[qid]):
        return -1
    t0 = time.monotonic()
    # The test program notices compute-sanitizer itself and then runs
    # sampled sizes, arrays that end where their allocation ends (so a
    # read one past the end is seen) and no CUPTI. Nothing the harness
    # sets tells a sanitized run from a graded one (its results go to a
    # pipe too, and are dropped). Catch2 reads the comma-separated names
    # as "any of these". The log goes to a third pipe: no file on disk.
    sanitizer = ("compute-sanitizer", "--tool", tool, "--log-file", "{log}", "--print-limit", "20", "--padding", "256")
    expected = expected_seconds(g, runs, qid, tool)
    limit = min(runs.limits[qid] * 10, expected * SANITIZED_LIMIT, max(g.budget.left(), 1))
    try:
        n = sanitized_run(g, runs, qid, tool, sanitizer, limit, t0)
        took = time.monotonic() - t0
        with open(g.logs / "sanitizer-times.tsv", "a") as f:  # for a person fitting SANITIZER_COST
            f.write(f"{qid}\t{tool}\t{len(runs.groups[qid])}\t{took:.1f}\t{expected:.1f}\t{limit:.0f}\n")
        if n is not None and took > max(expected * SANITIZED_NOTE, expected + SLOW_RUN_SLACK):
            g.notes.append(f"for a person to look at: {tool} on {qid}'s tests took {took:.0f} s, where their graded "
                           f"{SLOW_RUN_NOTE} {expected:.0f} s (limit {limit:.0f} s)")
        return n
    except LabError as err:
        g.notes.append(f"{tool} not run on {qid}'s tests, a lab error: {err}")
        return -1


def sanitized_run(g: Grading, runs: SanitizedRuns, qid: str, tool: str, sanitizer: tuple[str, ...], limit: float,
                  t0: float) -> int | None:
    """sanitize_one's run of `tool` over qid's cases, its log read."""
    if g.opts.judge:  # the sanitizer over the graded process; the judge beside it, told so
        judge_run, r, results, report, log_pipe = g.judged(
            part_of(runs.binaries[qid]), ",".join(runs.groups[qid]), limit, g.logs / f"{qid}-{tool}.out",
            g.private / f"{qid}-{tool}", 0, 0, prefix=sanitizer, log_cap=LEFT_FILE_CAP, sanitized=True,
            limits=sb.SANITIZED)
        r = r or judge_run
    else:
        r, results, report, log_pipe = g.sandboxed_with_pipes(
            [*sanitizer, str(runs.binaries[qid]), ",".join(runs.groups[qid])], sb.SANITIZED, limit,
            g.logs / f"{qid}-{tool}.out", g.private / f"{qid}-{tool}", 0, 0, log_cap=LEFT_FILE_CAP)
    results.wait()
    report.wait()
    log_file = log_pipe.wait()
    shutil.copyfile(log_file, g.logs / f"{qid}-{tool}.log")
    n = sanitizer_errors(log_file, tool)
    if log_pipe.overflow:  # a log spammed past its cap by the code under test: counted as an error
        n = max(n or 0, 1)
        g.notes.append(f"for a person to look at: {tool}'s log of {qid}'s tests grew past "
                       f"{LEFT_FILE_CAP >> 20} MiB; counted as an error")
    elif n is None and r.limit:
        g.notes.append(f"{tool} on {qid}'s tests: {r.limit}")
    g.log(f"  {g.student}: {tool} {qid} ({len(runs.groups[qid])} cases): "
          f"{'did not finish' if n is None else f'{n} errors'}, {time.monotonic() - t0:.0f} s")
    return n


def findings(g: Grading, runs: SanitizedRuns, found: dict[tuple[str, str], int | None], r: QuestionResult) -> str:
    """What the sanitizers found in the runs that hold any of the question's
    cases (QuestionResult.sanitizer); what did not run or finish goes to the notes."""
    lines = []
    held = dict.fromkeys(runs.owner[c.name] for c in r.question.tests if c.name in runs.owner)
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
    return "; ".join(dict.fromkeys(lines))


def sanitizer_errors(log: Path, tool: str = "memcheck") -> int | None:
    """Errors a compute-sanitizer log reports, or None when it has no summary.
    The last summary counts: the sanitizer writes it after the program under
    test has ended, so lines that program wrote into the log come before it."""
    try:
        text = left_text(log)
    except LeftFileError:
        return None
    pattern = (r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?" if tool == "racecheck"
               else r"ERROR SUMMARY: (\d+) errors?")
    found = re.findall(pattern, text)
    return int(found[-1]) if found else None
