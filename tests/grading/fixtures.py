"""What the harness's tests share: the harness's modules, stand-in test
binaries and judges, small builders of test cases and reports."""

from __future__ import annotations

import argparse
import contextlib
import csv
import dataclasses
import io
import json
import math
import os
import re
import shutil
import stat
import struct
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import threading
import time
import unittest
import zipfile
from fractions import Fraction
from pathlib import Path
from unittest import mock

from tests.grading import grade as G
from tests.course import table as course
from tests.course import docs
from tests.grading.harness import building as BUILD
from tests.grading.harness import course_table as CT
from tests.grading.harness import gpus as GPUS
from tests.grading.harness import gradebook as BOOK
from tests.grading.harness import judging as JUDGE
from tests.grading.harness import options as OPT
from tests.grading.harness import outputs as OUT
from tests.grading.harness import processes as PROC
from tests.grading.harness import reports as REP
from tests.grading.harness import results as RS
from tests.grading.harness import running as RUN
from tests.grading.harness import sandbox as SB
from tests.grading.harness import sanitizers as SAN
from tests.grading.harness import submission as SUB
from tests.grading.harness import timing as TIMING
from tests.grading.harness.schedulers import gradescope as GS
from tests.grading.harness.schedulers import local as LOCAL
from tests.grading.harness.schedulers import slurm as SLURM

TOTAL = course.points(course.load(CT.LAB).code_points())
try:  # instructors' copy only (its searches spell out answers)
    from tests.course import release as R
except ImportError:
    R = None
from tests.course import unchecked as U

MANIFEST = CT.read_manifest(CT.LAB)


# The interpreter of the fake test binaries: the system's, which a sandbox shows.
PYTHON = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable


def fake_binary(folder: Path, body: str) -> Path:
    """A stand-in for a test binary: a Python script that acts as one would
    (writes LAB_REPORT lines, prints, exits, crashes or hangs)."""
    path = folder / "fake_test"
    path.write_text("#!" + PYTHON + "\nimport json, os, sys, time, signal\n"
                    "try:\n    report = os.fdopen(int(os.environ['LAB_REPORT_FD']), 'w')\n"
                    "except (KeyError, OSError):  # no report pipe (a sanitizer may close it)\n"
                    "    report = open(os.environ.get('LAB_REPORT', os.devnull), 'w')\n"
                    "def line(**k):\n    report.write(json.dumps(k) + '\\n'); report.flush()\n"
                    "name = sys.argv[1]\n" + textwrap.dedent(body))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


# A fake test's body that reports one passing test case, completely.
PASSING = ("line(event='start', test=name); line(event='end', test=name, status='passed')\n"
           "line(event='summary', passed=1, failed=0, skipped=0)\n")


def fake_toolkit(folder: Path) -> Path:
    """A CUDA toolkit outside the system's folders, as far as the harness looks
    at one: <folder>/cuda-12.4/bin/nvcc."""
    kit = folder / "cuda-12.4"
    (kit / "bin").mkdir(parents=True)
    (kit / "bin" / "nvcc").write_text("#!/bin/sh\n")
    (kit / "bin" / "nvcc").chmod(0o755)
    return kit


def case(name="a test"):
    return CT.TestCase("part1", name, ["part1", "Q1"], ["Q1"])


def question(qid, part, points, limit, penalty, title, tests=()):
    """A question with these figures, as read_points makes one from the table's."""
    table = course.Question(qid, part, Fraction(points), Fraction(0), float(limit), penalty, title, title, title, (), "",
                            False)
    return CT.Question(table, list(tests))


def frames(tests: dict) -> bytes:
    """A results stream as tests/main.cpp writes it: {test: [(what, type, bytes), ...]}."""
    out = b""
    for name, results in tests.items():
        out += b"S" + struct.pack("<I", len(name)) + name.encode()
        for what, type_, data in results:
            out += b"R" + struct.pack("<I", len(what)) + what.encode() + struct.pack("<B", len(type_)) + type_.encode()
            out += struct.pack("<Q", len(data)) + data
        out += b"E"
    return out


def ints(*values) -> bytes:
    return struct.pack(f"<{len(values)}i", *values)


class JudgedPair:
    """A judged test case (running.py, Grading.judged) with stand-ins: the
    judge (build/judge/test_<part> of the lab's own build) and the graded
    process (build/graded/serve_<part> of the submission's copy), joined by a
    socket."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)
        for folder in ("base/build/judge", "work/build/graded", "seen"):
            (self.dir / folder).mkdir(parents=True)
        os.chmod(self.dir / "seen", 0o777)

    def tearDown(self):
        self.tmp.cleanup()

    def grading(self, sandbox=False):
        ns = argparse.Namespace(timeout=None, timeout_scale=None, build_timeout=None, sanitize="0", no_large=None,
                                arch=None, parts=None, seed="5", out=str(self.dir / "out"), base=None, timing=None,
                                sandbox="1" if sandbox else "0", work_root=str(self.dir), judge="1")
        g = RUN.Grading(self.dir / "work", self.dir, OPT.Options(ns), {**dict(os.environ), "LAB_SEED": "5"},
                        lambda m: None, "tester")
        g.base, g.judge_env = self.dir / "base", {**dict(os.environ), "LAB_SEED": "5"}
        return g

    def run_pair(self, judge_body, graded_body, sandbox=False, metered=False):
        fake_binary(self.dir / "base" / "build" / "judge", judge_body).rename(self.dir / "base/build/judge/test_part1")
        graded = self.dir / "work" / "build" / "graded" / "serve_part1"
        graded.write_text("#!" + PYTHON + "\nimport json, os, socket, sys, time\n" + textwrap.dedent(graded_body))
        graded.chmod(0o755)
        g = self.grading(sandbox)
        if metered:
            g.metered, g.gpu_place = True, "gpu-GPU-stand-in"
        g.remember(graded)
        started = time.monotonic()
        outcome, _ = g.run_case(graded, case(), self.dir / "log", 30)
        self.notes = g.notes
        return outcome, time.monotonic() - started

    JUDGE = ("import socket\nsock = socket.socket(fileno=int(os.environ['LAB_JUDGE_FD']))\n"
             "sock.send(b'call')\nreply = sock.recv(100)\n"
             "line(event='start', test=name)\n"
             "line(event='end', test=name, status='passed' if reply == b'done' else 'failed', failure=repr(reply))\n"
             "line(event='summary', passed=int(reply == b'done'), failed=int(reply != b'done'), skipped=0)\n")

    def graded(self, then="", record=True):
        seen = self.dir / "seen" / "env.json"
        return ((f"open({str(seen)!r}, 'w').write(json.dumps(dict(os.environ)))\n" if record else "") +
                "sock = socket.socket(fileno=int(os.environ['LAB_JUDGE_FD']))\n"
                "assert sock.recv(100) == b'call'\nsock.send(b'done')\n" + then)


def plain_options(sandbox: str | None) -> OPT.Options:
    """The harness's options with every default but the seed and SANDBOX."""
    return OPT.Options(argparse.Namespace(timeout=None, timeout_scale=None, build_timeout=None, sanitize="0",
                                          no_large=None, arch=None, parts=None, seed="5", out=None, base=None,
                                          timing=None, sandbox=sandbox, work_root=None))


def most_at_once(held, threads: int, seconds: float) -> int:
    """How many of `threads` threads were inside `held()` (a context manager)
    at once, each staying `seconds`."""
    import threading
    inside, most, lock = [0], [0], threading.Lock()

    def one():
        with held():
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            time.sleep(seconds)
            with lock:
                inside[0] -= 1

    started = [threading.Thread(target=one) for _ in range(threads)]
    for t in started:
        t.start()
    for t in started:
        t.join()
    return most[0]


def gradescope_fields(test: unittest.TestCase, data: dict) -> None:
    """What every results.json of the harness holds, in Gradescope's format: the
    top level's fields, a status where a row is passed or failed, and max_scores
    that add up to exactly the points the code can earn (bonus questions 0)."""
    test.assertEqual(set(data), {"score", "execution_time", "output", "visibility", "stdout_visibility", "tests"})
    test.assertIsInstance(data["execution_time"], int)
    test.assertEqual((data["visibility"], data["stdout_visibility"]), ("visible", "visible"))
    for row in data["tests"]:
        test.assertLessEqual({"name", "score", "max_score", "output", "visibility"}, set(row), row["name"])
        test.assertIn(row.get("status", "passed"), ("passed", "failed"), row["name"])
    total = BOOK.max_points(CT.all_questions(CT.LAB).values())
    test.assertEqual(sum(Fraction(str(row["max_score"])) for row in data["tests"]), Fraction(str(total)))
    test.assertEqual(math.fsum(row["max_score"] for row in data["tests"]), total)


CI_SUMMARY = CT.LAB / ".ci" / "summary.py"
