"""What a test process's report (LAB_REPORT_FD, see tests/main.cpp) says of
how its test case ended: a claim for the graded runs, the truth for the
trusted ones."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .processes import LeftFileError, describe_exit, left_text

if TYPE_CHECKING:  # for the annotations only
    from .processes import Run


@dataclass
class Outcome:
    status: str  # passed, failed, not-graded
    message: str = ""


def read_report(path: Path, name: str, r: Run, timeout: float) -> Outcome:
    """The outcome of one test case from its report file (see tests/main.cpp).
    Anything short of a complete, well-formed report of exactly this test is a failure."""
    how = describe_exit(r, timeout)
    try:
        lines = left_text(path).splitlines()
    except LeftFileError as err:
        if path.exists() or path.is_symlink():
            return Outcome("failed", f"the report cannot be read ({err}; the process {how})")
        lines = []
    events = []
    for line in lines:
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            return Outcome("failed", f"malformed report (the process {how})")
    starts = [e for e in events if e.get("event") == "start"]
    ends = [e for e in events if e.get("event") == "end"]
    summary = [e for e in events if e.get("event") == "summary"]
    if not starts:
        return Outcome("failed", f"the test never started: the process {how}")
    if any(e.get("test") != name for e in starts + ends) or len(starts) != 1 or len(ends) > 1:
        return Outcome("failed", "the report names other test cases than the one run")
    if not ends:
        return Outcome("failed", f"the process {how} during the test (a crash, a hang, or exit() in the code under test)")
    end = ends[0]
    if len(summary) != 1:
        if end.get("status") == "failed":  # Catch2 reports a fatal signal as a failure, then the process ends
            return Outcome("failed", f"{end.get('failure') or 'failed'} (then the process {how})")
        return Outcome("failed", f"the report is incomplete: the process {how} after the test")
    counts = (summary[0].get("passed"), summary[0].get("failed"), summary[0].get("skipped"))
    expected = {"passed": (1, 0, 0), "failed": (0, 1, 0), "skipped": (0, 0, 1)}.get(end.get("status"))
    if counts != expected:
        return Outcome("failed", "the report's summary does not match its test case")
    if end["status"] == "passed":
        if r.returncode != 0:
            return Outcome("failed", f"the report says passed, but the process {how}")
        if end.get("trace"):  # the launch trace's objections to calls outside the launchers
            return Outcome("failed", "launch trace: " + str(end["trace"])[:600])
        return Outcome("passed")
    if end["status"] == "failed":
        return Outcome("failed", end.get("failure") or "failed")
    reason = end.get("reason", "")
    if reason.startswith("not graded here"):
        return Outcome("not-graded", reason)
    return Outcome("failed", f"skipped ({reason}); a test that did not run is never a pass")


@dataclass
class Trusted:
    """How one test case ended, as a report tells it (read_report_ends): for
    the trusted build (tests/oracle/), with its results (results.py), the truth
    a student's run is judged by."""
    status: str  # passed, failed, skipped
    message: str


def read_report_ends(path: Path) -> dict[str, Trusted]:
    """Every test case a report (LAB_REPORT) says ended, by name: the trusted
    run's results, or what `make test` could not check (unchecked.py)."""
    out: dict[str, Trusted] = {}
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return out
    for line in lines:
        try:
            e = json.loads(line)
        except json.JSONDecodeError:
            continue
        if e.get("event") == "end" and isinstance(e.get("test"), str):
            message = e.get("reason") if e.get("status") == "skipped" else e.get("failure")
            out[e["test"]] = Trusted(str(e.get("status")), str(message or ""))
    return out
