#!/usr/bin/env python3
"""Host tests of the grading harness (no GPU, no nvcc): the tables, taking a
submission's files, isolation of each test case, reading reports, scoring and
the output files. The GPU half (planted faulty submissions graded end to end)
is selftest.py. Ends with the plain line `N passed, N failed`."""

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
import time
import unittest
import zipfile
from fractions import Fraction
from pathlib import Path
from unittest import mock

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import grade as G  # noqa: E402
import course  # noqa: E402
import docs  # noqa: E402
from harness import building as BUILD  # noqa: E402
from harness import course_table as CT  # noqa: E402
from harness import gpus as GPUS  # noqa: E402
from harness import gradebook as BOOK  # noqa: E402
from harness import judging as JUDGE  # noqa: E402
from harness import options as OPT  # noqa: E402
from harness import outputs as OUT  # noqa: E402
from harness import processes as PROC  # noqa: E402
from harness import reports as REP  # noqa: E402
from harness import results as RS  # noqa: E402
from harness import running as RUN  # noqa: E402
from harness import sandbox as SB  # noqa: E402
from harness import sanitizers as SAN  # noqa: E402
from harness import submission as SUB  # noqa: E402
from harness import timing as TIMING  # noqa: E402
from harness.schedulers import gradescope as GS  # noqa: E402
from harness.schedulers import local as LOCAL  # noqa: E402
from harness.schedulers import slurm as SLURM  # noqa: E402

TOTAL = course.points(course.load(CT.LAB).code_points())
try:  # instructors' copy only (its searches spell out answers)
    import release as R  # noqa: E402
except ImportError:
    R = None
import test_symbols  # noqa: E402
import unchecked as U  # noqa: E402

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


class Tables(unittest.TestCase):
    def test_every_question_has_tests_and_sane_limits(self):
        questions = CT.all_questions(CT.LAB)
        self.assertEqual([q for q in questions], [q.qid for q in course.load(CT.LAB).questions])
        for q in questions.values():
            self.assertTrue(q.tests, q.qid)
            self.assertGreater(q.timeout, 0)
            for name, seconds in q.timeouts.items():  # a test's own limit only ever lengthens its question's
                self.assertGreater(seconds, q.timeout, name)
            self.assertTrue(0 <= q.sanitizer_penalty <= 1)

    def test_the_generated_parts_agree_with_the_course_table(self):
        # make docs writes them; nothing else may state a fact of the table
        self.assertEqual(docs.run(CT.LAB, check=True), [])

    def test_a_changed_measurement_shows_in_the_tables_check_until_make_docs(self):
        # The tables of results (results/tables.py) against CSVs of a lab of its own: the
        # student copy has no results.
        table = course.load(CT.LAB)
        with tempfile.TemporaryDirectory() as tmp:
            lab = Path(tmp)
            (lab / "results/nvidia-h200").mkdir(parents=True)
            header = "study,implementation,n,d,shape,median_ms,keys_per_s,peer,peer_ms,ratio,gpu\n"

            def write_csv(tuned_ms: str) -> None:
                rows = [f"Q6 tuned,tuned reference,16777216,0,,{tuned_ms},1,{peer},{ms},1,GPU\n"
                        for peer, ms in (("Q6 reference", "0.8"), ("cub::DeviceMergeSort", "1.0"),
                                         ("cub::DeviceRadixSort", "0.4"))]
                (lab / "results/nvidia-h200/part3.csv").write_text(header + "".join(rows))

            write_csv("0.5")
            text = "text\n<!-- results:tuned-sort --><!-- /results:tuned-sort -->\nmore\n"
            written, missing = docs.generate("TUNING.md", text, table, lab)  # make docs
            self.assertNotIn("tuned-sort", missing)  # (the course table's blocks are not in this text)
            self.assertIn("| 2^24 | 0.500 | 0.62 | 0.50 | 0.400 | - | - | - |", written)
            self.assertEqual(docs.generate("TUNING.md", written, table, lab)[0], written)  # the check agrees
            write_csv("0.75")  # a new make bench: the check differs until make docs
            rewritten = docs.generate("TUNING.md", written, table, lab)[0]
            self.assertNotEqual(rewritten, written)
            self.assertIn("| 2^24 | 0.750 | 0.94 | 0.75 |", rewritten)
            self.assertIn("tuned-sort", docs.generate("TUNING.md", "text without the table\n", table, lab)[1])

    def test_a_changed_fact_of_the_table_shows_in_the_check_until_make_docs(self):
        with tempfile.TemporaryDirectory() as tmp:
            lab = Path(tmp) / "lab"
            for rel in ["tests/course.ini", *docs.BLOCKS, "tests/grading/manifest.txt"]:
                if (CT.LAB / rel).exists():  # (the student copy has no INSTRUCTORS.md nor TUNING.md)
                    (lab / rel).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy(CT.LAB / rel, lab / rel)
            if (CT.LAB / "results").is_dir():  # what TUNING.md's tables of results are made from
                shutil.copytree(CT.LAB / "results", lab / "results", dirs_exist_ok=True)
            table = (lab / "tests/course.ini").read_text()
            before = course.load(CT.LAB)
            q = before.questions_of("part2")[0]  # one more code point for it; the rest stays
            at = table.index(f"[question {q.qid}]")
            old_line = f"points = {course.points(q.points)}\n"
            self.assertIn(old_line, table[at:])
            (lab / "tests/course.ini").write_text(
                table[:at] + table[at:].replace(old_line, f"points = {course.points(q.points + 1)}\n", 1))
            course.load.cache_clear()
            found = docs.run(lab, check=True)
            self.assertTrue(any(p.startswith("handout.md: differs") for p in found), found)
            self.assertEqual(docs.run(lab, check=False), [])  # make docs
            self.assertEqual(docs.run(lab, check=True), [])
            handout = (lab / "handout.md").read_text()
            code, report = before.code_points() + 1, before.report_points()
            part2 = sum(x.points + x.report for x in before.questions_of("part2")) + 1
            self.assertIn(f"### {q.qid} — {q.heading} ({docs.amount(q.points + 1, q.report)})", handout)
            self.assertIn(f"## Part 2 — {before.part('part2').title} ({docs.amount(part2)})", handout)
            self.assertIn(f"| | | total | {course.points(code)} | {course.points(report)} | "
                          f"{course.points(code + report)} |", handout)
            self.assertIn(f"on top of the {course.points(code + report)}.", handout)
            (lab / "notes.md").write_text(f"{q.qid} is worth {course.points(q.points + 1)} points, "
                                          f"of {course.points(code)} in all.\n")
            found = docs.run(lab, check=True)
            self.assertEqual(len([p for p in found if p.startswith("notes.md:1")]), 2, found)
        course.load.cache_clear()

    def test_the_check_finds_each_spelling_of_a_fact(self):
        import restated
        table = course.load(CT.LAB)
        code = course.points(table.code_points())
        weights = docs.report_weights(table)  # each question with report points, and its points
        shapes = (docs.LAB / "part3_merge_sort" / "reference.cu").exists()  # (not in the student copy)
        merge = "{} x {}".format(*docs.default_shapes()["merge"]) if shapes else "256 x 17"
        part3 = [q.qid for q in table.questions_of("part3")]
        text = (f"Its report points ({weights}) are a person's.\nAn error costs {docs.penalty(table)} of the points.\n"
                f"The rows add up to the assignment's {code} while every score is 0.\n"
                f"The default merge shape is {merge}.\nPart 3 ({part3[0]}-{part3[-1]}) is one step.\n"
                f"A test took 17.5 s; the [{part3[0]}-{part3[-1]} begins] region.\n")
        found = restated.file_problems("notes.md", text, table, docs)
        lines = {int(f.split(":")[1]) for f in found}  # line 6: a time and a region's name, no fact
        expected = {1, 2, 5} | ({3} if "." in code else set()) | ({4} if shapes else set())
        self.assertEqual(lines, expected, found)
        self.assertEqual(len([f for f in found if f.startswith("notes.md:1:")]),
                         len([q for q in table.questions if q.report]), found)

    def test_kernels_of_the_table_are_the_ones_the_graders_allow(self):
        table = course.load(CT.LAB)
        for part in table.parts:
            source = (CT.LAB / "tests" / f"test_{part.name}.cpp").read_text()
            if part.name == "part2":
                source += (CT.LAB / "tests" / "batch_cases.hpp").read_text()
            named = set(re.findall(r'"(\w+_k)"', source))
            kernels = {k for q in table.questions_of(part.name) for k in q.kernels}
            self.assertEqual(named, kernels, f"{part.name}: the kernels its graders allow")

    def test_every_gpu_test_case_says_so_and_large_ones_are_hidden(self):
        for part, _ in CT.PARTS:
            source = (CT.LAB / "tests" / f"test_{part}.cpp").read_text()
            for c in CT.read_test_cases(CT.LAB, part):
                self.assertTrue(c.questions, c.name)
                if c.large:
                    self.assertIn(".", c.tags, f"{c.name}: [large] tests must be hidden ([.])")
                body = source.split(f'TEST_CASE("{c.name}"', 1)[1].split("TEST_CASE(", 1)[0]
                if "gpu" in c.tags:  # the GPU check comes before anything else runs
                    head = "\n".join(body.splitlines()[:4])
                    self.assertTrue("LAB_NEEDS_GPU()" in head or "large::canRun(" in head, c.name)

    def test_the_tables_reject_bad_rows_and_unknown_tests(self):
        table = (CT.LAB / "tests" / "course.ini").read_text()
        with tempfile.TemporaryDirectory() as tmp:
            lab = Path(tmp)
            (lab / "tests").mkdir()
            (lab / "tests" / "test_part1.cpp").write_text('TEST_CASE("one", "[part1][Q1]") {}')
            for bad in (("points = 6\n", "points = six\n"), ("points = 6\n", "points = 0.333\n"),
                        ("time limit = 30\n", "time limit = 0\n"), ("part = part1\n", "part = part9\n"),
                        ("expect = Q3 zero", "expect = Q3 nothing"), ("[part part2]", "[section part2]")):
                if bad[0].startswith("expect") and "\n[fault " not in table:
                    continue  # the student copy's table has no planted faults
                self.assertIn(bad[0], table)
                course.load.cache_clear()
                (lab / "tests" / "course.ini").write_text(table.replace(bad[0], bad[1], 1))
                with self.assertRaises(CT.GradingError, msg=bad[1]):
                    CT.read_points(lab, "part1")
            course.load.cache_clear()
            (lab / "tests" / "course.ini").write_text(table + "[test none]\nweight = 0\n")
            for part in ("part2", "part3", "extras"):
                (lab / "tests" / f"test_{part}.cpp").write_text("")
            self.assertIn("none", CT.unknown_test_rules(lab))
            (lab / "tests" / "test_part1.cpp").write_text('TEST_CASE("a, b", "[part1][Q1]") {}')
            with self.assertRaises(CT.GradingError):
                CT.read_test_cases(lab, "part1")
        course.load.cache_clear()

    def test_every_test_rule_of_the_table_names_a_test_case(self):
        self.assertEqual(CT.unknown_test_rules(CT.LAB), [])

    def test_the_manifest_lists_every_student_file_and_nothing_else(self):
        on_disk = sorted(p.relative_to(CT.LAB).as_posix() for _, folder in CT.PARTS
                         for p in (CT.LAB / folder).glob("student*"))
        self.assertEqual(sorted(MANIFEST), on_disk)


class Submissions(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def test_a_folder_with_one_top_folder_gives_the_manifest_files(self):
        for rel in MANIFEST:
            (self.dir / "lab" / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.dir / "lab" / rel).write_text("// " + rel)
        (self.dir / "lab" / "Makefile").write_text("all:\n\techo pwned\n")
        (self.dir / "lab" / "tests").mkdir()
        (self.dir / "lab" / "tests" / "test_part1.cpp").write_text("// forged grader")
        sub = SUB.collect_submission(self.dir, MANIFEST)
        self.assertEqual(sorted(sub.files), sorted(MANIFEST))
        self.assertEqual(sub.files[MANIFEST[0]], b"// " + MANIFEST[0].encode())
        self.assertTrue(any("ignored" in n and "Makefile" in n for n in sub.notes))

    def test_the_report_and_the_figures_it_shows_are_taken(self):
        top = self.dir / "lab"
        (top / "figs").mkdir(parents=True)
        (top / "results").mkdir()
        (top / "report.md").write_text("# Report\n![Q2](figs/q2.png)\n<img src='q7.svg'>\n![x](../secret.png)\n"
                                       "![web](https://example.org/a.png)\n")
        (top / "figs" / "q2.png").write_bytes(b"\x89PNG")
        (top / "q7.svg").write_text("<svg/>")
        (top / "results" / "q7.png").write_bytes(b"\x89PNG")  # not shown by the report: not taken
        (self.dir / "secret.png").write_bytes(b"no")
        sub = SUB.collect_submission(self.dir, MANIFEST, ["report.pdf", "report.md"])
        self.assertEqual(sorted(sub.documents), ["figs/q2.png", "q7.svg", "report.md"])
        self.assertFalse(any("ignored" in n and "report.md" in n for n in sub.notes))
        out = self.dir / "out"
        self.assertEqual(OUT.write_documents(out, sub.documents), "report.md and 2 figures")
        self.assertEqual((out / "report" / "figs" / "q2.png").read_bytes(), b"\x89PNG")

    def test_a_pdf_report_comes_first_and_none_is_noted(self):
        sub = SUB.collect_submission(self.dir, MANIFEST, ["report.pdf", "report.md"])
        self.assertEqual(sub.documents, {})
        self.assertTrue(any(n.startswith("no report found") for n in sub.notes))
        (self.dir / "report.md").write_text("md")
        (self.dir / "report.pdf").write_bytes(b"%PDF")
        sub = SUB.collect_submission(self.dir, MANIFEST, ["report.pdf", "report.md"])
        self.assertEqual(list(sub.documents), ["report.pdf"])
        self.assertEqual(OUT.write_documents(self.dir / "out", sub.documents), "report.pdf")
        self.assertEqual(OUT.write_documents(self.dir / "out", {}), "")
        self.assertFalse((self.dir / "out" / "report").exists())

    def test_suspicious_calls_are_listed_for_a_person(self):
        (self.dir / "part2_batch").mkdir()
        (self.dir / "part2_batch" / "student.cu").write_text(
            "// exit( in a comment is fine\nvoid f() {\n    if (n > 9) exit(0);\n    thrust::sort(p, p + n);\n}\n")
        notes = SUB.collect_submission(self.dir, MANIFEST).notes
        self.assertIn("for a person to look at: part2_batch/student.cu:3 uses exit", notes)
        self.assertIn("for a person to look at: part2_batch/student.cu:4 uses thrust::", notes)
        self.assertFalse(any(":1 uses" in n for n in notes))

    def test_files_handed_in_one_by_one_are_taken_by_a_unique_name_and_a_zip_is_asked_for(self):
        # Gradescope's upload of single files puts each at the top, without its folder.
        (self.dir / "student_search.cuh").write_text("search")
        (self.dir / "student.cu").write_text("which part?")
        sub = SUB.collect_submission(self.dir, MANIFEST)
        self.assertEqual(sub.files, {"part1_merge_path/student_search.cuh": b"search"})
        self.assertTrue(any("by its name alone" in n for n in sub.notes), sub.notes)
        self.assertIn("missing: part2_batch/student.cu (the untouched skeleton was graded in its place, "
                      "so Q3 and Q4 score 0)", sub.notes)
        loose = [n for n in sub.notes if n.startswith("student.cu: handed in without its part's folder")]
        self.assertEqual(len(loose), 1, sub.notes)
        self.assertIn("zip hand-in.zip part1_merge_path/student.cu", loose[0])
        self.assertFalse(any(n.startswith("ignored") and "student_search" in n for n in sub.notes))

    def test_missing_files_are_noted_and_the_skeleton_stands_in(self):
        (self.dir / "part2_batch").mkdir()
        (self.dir / "part2_batch" / "student.cu").write_text("x")
        sub = SUB.collect_submission(self.dir, MANIFEST)
        self.assertEqual(list(sub.files), ["part2_batch/student.cu"])
        self.assertEqual(sum("missing" in n for n in sub.notes), len(MANIFEST) - 1)

    def test_zip_members_outside_the_archive_and_links_are_refused(self):
        path = self.dir / "s.zip"
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("../part1_merge_path/student.cu", "escape")
            link = zipfile.ZipInfo("x/part2_batch/student.cu")
            link.external_attr = (stat.S_IFLNK | 0o777) << 16
            z.writestr(link, "/etc/passwd")
            z.writestr("x/part3_merge_sort/student.cu", "ok")
        sub = SUB.collect_submission(path, MANIFEST)
        self.assertEqual(sub.files, {"part3_merge_sort/student.cu": b"ok"})
        self.assertEqual(sum("refused" in n for n in sub.notes), 2)

    def test_tar_links_are_refused_and_regular_files_taken(self):
        path = self.dir / "s.tar.gz"
        with tarfile.open(path, "w:gz") as t:
            link = tarfile.TarInfo("lab/part1_merge_path/student.cu")
            link.type = tarfile.SYMTYPE
            link.linkname = "/etc/passwd"
            t.addfile(link)
            data = b"int x;"
            info = tarfile.TarInfo("lab/part2_batch/student.cu")
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
        sub = SUB.collect_submission(path, MANIFEST)
        self.assertEqual(sub.files, {"part2_batch/student.cu": b"int x;"})
        self.assertTrue(any("refused" in n for n in sub.notes))

    def test_an_unreadable_archive_is_a_note_not_a_crash(self):
        path = self.dir / "broken.zip"
        path.write_bytes(b"not a zip")
        sub = SUB.collect_submission(path, MANIFEST)
        self.assertEqual(sub.files, {})
        self.assertTrue(any("could not read the archive" in n for n in sub.notes))

    def test_an_oversized_file_is_refused(self):
        (self.dir / "part2_batch").mkdir()
        (self.dir / "part2_batch" / "student.cu").write_bytes(b"x" * (SUB.MAX_FILE_BYTES + 1))
        sub = SUB.collect_submission(self.dir, MANIFEST)
        self.assertNotIn("part2_batch/student.cu", sub.files)

    def test_the_pristine_copy_has_no_reference_files_or_outputs(self):
        out = CT.LAB / "grade-results-test-copy"
        dest = self.dir / "copy"
        try:
            out.mkdir(exist_ok=True)
            (out / "x").write_text("output")
            BUILD.copy_lab(CT.LAB, dest, exclude=(out,))
        finally:
            (out / "x").unlink()
            out.rmdir()
        self.assertEqual(list(dest.rglob("reference*")), [])
        self.assertFalse((dest / out.name).exists())
        self.assertFalse((dest / "build").exists())
        self.assertTrue((dest / "tests" / "course.ini").exists())


class Unchecked(unittest.TestCase):
    def test_skipped_tests_and_the_large_tier_are_counted_in_points(self):
        cases = CT.read_test_cases(CT.LAB, "part1")
        ran = [c.name for c in cases if not c.large]
        with tempfile.TemporaryDirectory() as tmp:
            report = Path(tmp) / "test_part1.jsonl"
            report.write_text("".join(json.dumps({"event": "end", "test": n, "status": "skipped", "reason": "no GPU"})
                                      + "\n" for n in ran) + "not json\n")
            skipped, seen = U.read_reports([report, Path(tmp) / "missing.jsonl"])
        self.assertEqual(set(skipped), set(ran))
        text = U.summary(skipped, seen)
        q1, q2 = CT.all_questions(CT.LAB)["Q1"], CT.all_questions(CT.LAB)["Q2"]
        large = sum(JUDGE.QuestionResult(q, {}).test_points()[c.name][1] for q in (q1, q2) for c in q.tests if c.large)
        self.assertIn("did not run (no GPU)", text)
        part1 = [q for q in CT.all_questions(CT.LAB).values() if any(c.name in ran for c in q.tests)]
        code_max = sum(q.points for q in part1 if not q.bonus)
        self.assertIn(f"They carry {round(q1.points + q2.points - large, 2):g} of these parts' {code_max:g} code points",
                      text)
        self.assertIn("the [large] tier", text)
        self.assertIn(f"Q1: {sum(not c.large for c in q1.tests)} of its {len(q1.tests)} tests", text)
        self.assertEqual(U.summary({}, set()), "")


class Isolation(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def grading(self, sandbox: bool) -> RUN.Grading:
        ns = argparse.Namespace(timeout=None, timeout_scale=None, build_timeout=None, sanitize="0", no_large=None,
                                  arch=None, parts=None, seed="5", out=str(self.dir / "out"), base=None, timing=None,
                                  sandbox="1" if sandbox else "0", work_root=str(self.dir), judge="0")
        # JUDGE=0: a graded process that runs the graders itself, whose plumbing
        # (pipes, limits, exits) the judge's runs share (class Judged).
        return RUN.Grading(self.dir, self.dir, OPT.Options(ns), dict(os.environ), lambda m: None, "tester")

    def outcome(self, body, timeout=20.0, sandbox=False, grading=None, tools=None):
        g = grading or self.grading(sandbox)
        if tools:
            g.opts.sandbox = SB.Sandbox(hidden=(CT.LAB,), tools=tools)
        binary = fake_binary(self.dir, body)
        g.opts.sandbox.own(self.dir)  # as the harness hands a submission's copy to the sandbox
        g.remember(binary)  # after the build, as grading does
        return g.run_case(binary, case(), self.dir / "log", timeout)[0]

    def test_sanitized_runs_are_the_graded_runs_under_the_sanitizer(self):
        # A stand-in compute-sanitizer runs its target and writes a summary:
        # two errors for the test named "bad". The target records what it saw.
        tools = self.dir / "tools"
        tools.mkdir()
        seen = self.dir / "seen"
        fake = tools / "compute-sanitizer"
        fake.write_text("#!" + PYTHON + "\nimport subprocess, sys\n"
                        "args = sys.argv[1:]\nlog = args[args.index('--log-file') + 1]\n"
                        "target = args[args.index('256') + 1:]\nsubprocess.run(target)\n"
                        "n = 2 if 'bad' in target[-1].split(',') else 0\n"
                        "open(log, 'w').write('========= RACECHECK SUMMARY: %d hazards displayed (%d errors, 0 "
                        "warnings)\\n' % (n, n) if 'racecheck' in args else '========= ERROR SUMMARY: %d errors\\n' % n)\n")
        fake.chmod(0o755)
        g = self.grading(False)
        g.env = {**g.env, "PATH": f"{tools}:{os.environ['PATH']}"}
        binary = fake_binary(self.dir, f"open({str(seen)!r}, 'a').write(json.dumps([sys.argv[1:], "
                                       "{k: v for k, v in os.environ.items() if k != 'LAB_REPORT'}]) + '\\n')\n")
        g.remember(binary)
        # One run per question and tool holds all of the question's ordinary
        # cases (Q2 shares "bad" with Q1, whose run holds it).
        q1 = CT.Question("Q1", "part1", 6, 20, 0.5, "t", [case("good"), case("bad")])
        q2 = CT.Question("Q2", "part1", 3, 20, 0.5, "t", [case("bad"), case("fine")])
        q3 = CT.Question("Q3", "part1", 3, 20, 0.5, "t", [case("fine2")])
        r1, r2, r3 = JUDGE.QuestionResult(q1, {}), JUDGE.QuestionResult(q2, {}), JUDGE.QuestionResult(q3, {})
        SAN.sanitize(g, [(binary, [r1, r2, r3])])
        for r in (r1, r2):
            for tool in SAN.SANITIZER_TOOLS:  # synccheck too
                self.assertIn(f"{tool} reported 2 errors in Q1's tests", r.sanitizer)
        self.assertEqual(SAN.SANITIZER_TOOLS, ("memcheck", "racecheck", "synccheck"))
        self.assertEqual(r3.sanitizer, "")
        g.run_case(binary, case("good"), self.dir / "log", 20)
        runs = [json.loads(line) for line in seen.read_text().splitlines()]
        graded = runs[-1]
        self.assertEqual(sorted(run[0] for run in runs[:-1]),
                         sorted([["fine"], ["fine2"], ["good,bad"]] * len(SAN.SANITIZER_TOOLS)))
        pipes = {"LAB_RESULTS_FD": "?", "LAB_REPORT_FD": "?"}  # each run has pipes of its own
        for run in runs[:-1]:  # the graded run's environment
            self.assertEqual({**run[1], **pipes}, {**graded[1], **pipes})
            self.assertTrue(set(pipes) <= set(run[1]))

    def test_results_are_compared_as_the_test_ends_kept_within_twice_the_trusted_runs(self):
        trusted = self.dir / "trusted.results"
        trusted.write_bytes(frames({"a test": [("merged", "i32", ints(1, 2, 3))]}))
        expected = RS.read_stream(trusted)
        cap = RUN.results_cap(expected, "a test")
        self.assertLess(cap, (1 << 20) + 1024)
        self.assertEqual(RUN.results_cap(None, "a test"), RUN.RESULTS_CAP)
        g = self.grading(False)
        for handed, differs in ((ints(1, 2, 3), ""), (ints(1, 2, 4), "at index 2"),
                                (ints(1) * (cap // 4), "more than 1 MiB of results")):
            body = (f"os.write(int(os.environ['LAB_RESULTS_FD']), {frames({'a test': [('merged', 'i32', handed)]})!r})\n"
                    + PASSING)
            binary = fake_binary(self.dir, body)
            g.remember(binary)
            outcome, said = g.run_case(binary, case(), self.dir / "log", 20, expected)
            self.assertEqual(outcome.status, "passed", outcome.message)
            self.assertIn(differs, said) if differs else self.assertEqual(said, "")
            self.assertEqual(list(g.private.iterdir()), [], "results kept after their comparison")

    def limited(self, **changes):
        """run_case with the test limits changed (restored at the test's end)."""
        saved = SB.TEST
        SB.TEST = dataclasses.replace(saved, **changes)
        self.addCleanup(setattr, SB, "TEST", saved)

    def test_a_test_is_stopped_at_its_file_size_limit(self):
        self.limited(file_size=1 << 20)
        big = self.dir / "big"
        o = self.outcome(f"line(event='start', test=name)\nopen({str(big)!r}, 'wb').write(b'x' * (2 << 20))\n"
                         + PASSING.split("\n", 1)[1])
        self.assertEqual(o.status, "failed")
        self.assertRegex(o.message, "SIGXFSZ|File too large")  # Python ignores the signal: its write fails
        self.assertLessEqual(big.stat().st_size, 1 << 20)

    def test_a_test_is_stopped_at_its_memory_limit(self):
        self.limited(memory=256 << 20)
        o = self.outcome("line(event='start', test=name)\nheld = bytearray(512 << 20)\n" + PASSING.split("\n", 1)[1])
        self.assertEqual(o.status, "failed")
        # The allocation fails (the rlimit on its data, as large as the
        # cgroup's limit), or the cgroup kills it and says so.
        self.assertRegex(o.message, "MemoryError|ran out of its 256 MiB of host memory")

    @unittest.skipUnless(SB.Cgroups().root, "no cgroup v2 subtree can be made here (the limits are rlimits)")
    def test_a_test_is_stopped_at_its_process_and_thread_limit(self):
        self.limited(tasks=16)
        o = self.outcome("import threading, time\nline(event='start', test=name)\n"
                         "for _ in range(64):\n    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
                         + PASSING.split("\n", 1)[1])
        self.assertEqual(o.status, "failed")
        self.assertIn("its limit of 16 processes and threads", o.message)

    def test_a_complete_report_passes(self):
        o = self.outcome(PASSING)
        self.assertEqual(o.status, "passed")

    def test_the_report_is_a_pipe_no_test_can_replace(self):
        # The report goes to a pipe the harness holds: there is no file whose
        # place a named pipe or a link could take.
        o = self.outcome("assert 'LAB_REPORT' not in os.environ and 'LAB_REPORT_FD' in os.environ\n" + PASSING)
        self.assertEqual(o.status, "passed", o.message)

    def test_a_left_file_that_is_a_pipe_or_a_link_is_refused_at_once(self):
        # What a sanitized run leaves (its log) is read so: a named pipe in its
        # place would block a plain open() forever; a link would have the
        # harness read whatever it points to.
        pipe, link = self.dir / "pipe", self.dir / "link"
        os.mkfifo(pipe)
        os.symlink("/etc/hostname", link)
        started = time.monotonic()
        with self.assertRaisesRegex(PROC.LeftFileError, "not a regular file"):
            PROC.read_left_file(pipe)
        with self.assertRaisesRegex(PROC.LeftFileError, "symbolic link"):
            PROC.read_left_file(link)
        self.assertLess(time.monotonic() - started, 5)
        self.assertEqual(SAN.sanitizer_errors(pipe), None)

    def test_a_left_file_is_read_only_up_to_its_cap(self):
        big = self.dir / "big"
        big.write_bytes(b"x" * 2000)
        self.assertEqual(len(PROC.read_left_file(big, cap=4096)), 2000)
        with self.assertRaises(PROC.LeftFileError):
            PROC.read_left_file(big, cap=1000)

    def test_exit_zero_in_the_middle_of_a_test_fails(self):
        o = self.outcome("line(event='start', test=name)\nsys.exit(0)\n")
        self.assertEqual(o.status, "failed")
        self.assertIn("exit status 0 during the test", o.message)

    def test_a_forged_summary_on_stdout_fails(self):
        o = self.outcome("line(event='start', test=name)\nprint('11 passed, 0 failed', flush=True)\nos._exit(0)\n")
        self.assertEqual(o.status, "failed")
        self.assertIn("11 passed", o.message)  # quoted as the last output, not believed

    def test_a_crash_is_named(self):
        o = self.outcome("line(event='start', test=name)\nos.kill(os.getpid(), signal.SIGSEGV)\n")
        self.assertIn("crashed (SIGSEGV)", o.message)

    def test_a_hang_is_killed_at_the_timeout_with_its_children(self):
        marker = self.dir / "child-alive"
        o = self.outcome(f"line(event='start', test=name)\n"
                         f"import subprocess\n"
                         f"subprocess.Popen(['sh', '-c', 'sleep 3; touch {marker}'])\n"
                         f"time.sleep(60)\n", timeout=1)
        self.assertIn("timed out after 1 s", o.message)
        import time
        time.sleep(3.5)
        self.assertFalse(marker.exists(), "the hung test's child outlived the kill")

    def test_a_skip_is_never_a_pass_but_a_large_test_without_memory_is_not_graded(self):
        end = ("line(event='start', test=name); line(event='end', test=name, status='skipped', reason=%r)\n"
               "line(event='summary', passed=0, failed=0, skipped=1)\n")
        self.assertEqual(self.outcome(end % "no GPU").status, "failed")
        self.assertEqual(self.outcome(end % "not graded here: needs 17 GiB").status, "not-graded")

    def test_a_report_about_another_test_or_a_wrong_summary_fails(self):
        other = self.outcome("line(event='start', test='other'); line(event='end', test='other', status='passed')\n"
                             "line(event='summary', passed=1, failed=0, skipped=0)\n")
        self.assertEqual(other.status, "failed")
        wrong = self.outcome("line(event='start', test=name); line(event='end', test=name, status='passed')\n"
                             "line(event='summary', passed=5, failed=0, skipped=0)\n")
        self.assertEqual(wrong.status, "failed")
        garbage = self.outcome("report.write('{not json\\n'); report.flush()\n")
        self.assertIn("malformed", garbage.message)

    def test_a_failure_keeps_its_message(self):
        o = self.outcome("line(event='start', test=name)\n"
                         "line(event='end', test=name, status='failed', failure='index 7: got 3, expected 4')\n"
                         "line(event='summary', passed=0, failed=1, skipped=0)\n")
        self.assertEqual((o.status, o.message), ("failed", "index 7: got 3, expected 4"))

    def test_sanitizer_logs_are_read_for_their_error_counts(self):
        log = self.dir / "s.log"
        log.write_text("========= Invalid __global__ read\n========= ERROR SUMMARY: 3 errors\n")
        self.assertEqual(SAN.sanitizer_errors(log), 3)
        log.write_text("========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)\n")
        self.assertEqual(SAN.sanitizer_errors(log, "racecheck"), 1)
        log.write_text("========= ERROR SUMMARY: 0 errors\n")
        self.assertEqual(SAN.sanitizer_errors(log), 0)
        self.assertIsNone(SAN.sanitizer_errors(self.dir / "missing.log"))
        # Lines the code under test wrote into the log (its descriptor is
        # inherited) come before the sanitizer's own summary, written last;
        # and a memcheck log is read for memcheck's summary only.
        log.write_text("========= ERROR SUMMARY: 0 errors\n========= RACECHECK SUMMARY: 0 hazards displayed "
                       "(0 errors, 0 warnings)\n========= Invalid __global__ read\n========= ERROR SUMMARY: 1 error\n")
        self.assertEqual(SAN.sanitizer_errors(log), 1)


    def test_without_a_sandbox_a_daemon_is_still_ended(self):
        PROC.become_subreaper()  # as grade.py's main does: orphans come to the harness
        marker = self.dir / "daemon-alive"
        self.outcome(f"import subprocess\nsubprocess.Popen(['setsid', 'sh', '-c', 'sleep 2; touch {marker}'])\n"
                     "line(event='start', test=name)\n")
        time.sleep(3)
        self.assertFalse(marker.exists(), "a process the test left behind outlived it")

    def test_a_test_waits_for_a_gpu_place_and_the_wait_is_not_its_time(self):
        import threading
        g = self.grading(False)
        g.opts.gpu_jobs, g.gpu_place = 1, f"gpu-harness-test-{os.getpid()}"
        marker = self.dir / "started"
        held, release = threading.Event(), threading.Event()

        def other_grading():  # another grading's process holds the GPU's only place
            with GPUS.place(g.gpu_place, 1):
                held.set()
                release.wait()

        def test_run():
            outcomes.append(self.outcome(f"open({str(marker)!r}, 'w').close()\nline(event='start', test=name)\n"
                                         "line(event='end', test=name, status='passed')\n", grading=g))

        outcomes: list = []
        holder = threading.Thread(target=other_grading, daemon=True)
        runner = threading.Thread(target=test_run, daemon=True)
        holder.start()
        held.wait()
        runner.start()
        try:
            time.sleep(0.5)
            self.assertFalse(marker.exists(), "the test started while another process held the GPU's only place")
        finally:
            released = time.monotonic()
            release.set()
            holder.join()
            runner.join()
        self.assertTrue(marker.exists())
        self.assertNotIn("timed out", outcomes[0].message)
        # Its time counts from its start, after the place came free.
        self.assertLessEqual(g.seconds[case().name], time.monotonic() - released)

    def test_a_tool_the_harness_runs_itself_is_no_orphan(self):
        # nm and readelf run beside the graded processes (symbols.py): the
        # reaping after another run's end once killed them ("nm exited -9").
        PROC.become_subreaper()
        tool = subprocess.Popen(["sleep", "30"])
        try:
            PROC.reap_orphans()
            PROC.run(["true"], self.dir, 5)  # reaps at its end, as every run does
            self.assertIsNone(tool.poll(), "reap_orphans killed a process of the harness's own")
        finally:
            tool.kill()
            tool.wait()

    def test_a_test_binary_changed_after_the_build_does_not_run(self):
        g = self.grading(False)
        binary = fake_binary(self.dir, "line(event='start', test=name)\n")
        g.remember(binary)
        binary.write_bytes(binary.read_bytes())  # the same bytes, written again: a new change time
        o = g.run_case(binary, case(), self.dir / "log", 5)[0]
        self.assertIn("changed after it was built", o.message)

    def test_a_spent_budget_fails_the_tests_left(self):
        g = self.grading(False)
        g.budget.seconds = 0
        o = self.outcome("line(event='start', test=name)\n", grading=g)
        self.assertIn("time budget", o.message)

    def test_logs_are_capped(self):
        self.outcome("sys.stdout.write('x' * (3 << 20)); sys.stdout.flush()\n")
        log = (self.dir / "log").read_bytes()
        self.assertLess(len(log), PROC.LOG_CAP_BYTES + 200)
        self.assertIn(b"log cut", log)


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



class Judged(JudgedPair, unittest.TestCase):
    """The verdict is the judge's report; the graded process gets no seed and
    no report pipe, and ends with the judge."""

    def test_the_verdict_is_the_judges_and_the_graded_process_gets_no_seed(self):
        outcome, _ = self.run_pair(self.JUDGE, self.graded("sock.recv(100)\n"))
        self.assertEqual(outcome.status, "passed", outcome.message)
        env = json.loads((self.dir / "seen" / "env.json").read_text())
        self.assertNotIn("LAB_SEED", env)
        self.assertFalse({"LAB_REPORT_FD", "LAB_RESULTS_FD"} & set(env), "the graded process holds a report pipe")
        self.assertIn("LAB_JUDGE_FD", env)

    def test_a_graded_process_that_outlives_the_judge_is_stopped(self):
        outcome, seconds = self.run_pair(self.JUDGE, self.graded("time.sleep(60)\n"))
        self.assertEqual(outcome.status, "passed", outcome.message)
        self.assertLess(seconds, 20)

    def test_a_graded_process_cannot_write_the_verdict(self):
        # It has no report pipe: what it prints, or writes to descriptors it
        # guesses, is not read; the judge's report says the call failed.
        forger = ("for fd in range(3, 64):\n    try:\n"
                  "        os.write(fd, b'{\"event\": \"summary\", \"passed\": 1, \"failed\": 0, \"skipped\": 0}\\n')\n"
                  "    except OSError:\n        pass\nprint('1 passed, 0 failed')\n")
        outcome, _ = self.run_pair(self.JUDGE, forger + "sock = socket.socket(fileno=int(os.environ['LAB_JUDGE_FD']))\n"
                                   "sock.recv(100)\nsock.send(b'not done')\n")
        self.assertEqual(outcome.status, "failed")

    @unittest.skipUnless(SB.Sandbox().available, "no sandbox can start on this machine")
    def test_the_socket_reaches_into_the_sandbox(self):
        outcome, _ = self.run_pair(self.JUDGE, self.graded("sock.recv(100)\n", record=False), sandbox=True)
        self.assertEqual(outcome.status, "passed", outcome.message)


class Verdicts(unittest.TestCase):
    """A report is a claim; the trusted run's results are the truth, compared
    by the harness (harness.judge, results.compare)."""
    TRUSTED = REP.Trusted("passed", "")

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)
        self.theirs = self.stream("trusted", {"t": [("output [seed 1]", "i32", ints(1, 2, 3, 4)),
                                                    ("input A after the run [seed 1]", "tagged", ints(5, 0, 6, 1))]})

    def tearDown(self):
        self.tmp.cleanup()

    def stream(self, name: str, tests: dict, cut: int = 0) -> RS.Stream:
        path = self.dir / name
        data = frames(tests)
        path.write_bytes(data[: len(data) - cut])
        return RS.read_stream(path)

    def test_a_pass_needs_the_trusted_runs_results(self):
        same = self.stream("same", {"t": [("output [seed 1]", "i32", ints(1, 2, 3, 4)),
                                          ("input A after the run [seed 1]", "tagged", ints(5, 0, 6, 1))]})
        self.assertEqual(RS.compare(same, self.theirs, "t"), "")
        self.assertEqual(JUDGE.judge(REP.Outcome("passed"), self.TRUSTED, "").status, "passed")
        forged = JUDGE.judge(REP.Outcome("passed"), self.TRUSTED, RS.compare(self.stream("none", {}), self.theirs, "t"))
        self.assertEqual(forged.status, "failed")
        self.assertIn("no results", forged.message)

    def test_the_first_difference_is_named_with_the_trusted_values(self):
        wrong = self.stream("wrong", {"t": [("output [seed 1]", "i32", ints(1, 2, 9, 4)),
                                            ("input A after the run [seed 1]", "tagged", ints(5, 0, 6, 1))]})
        self.assertEqual(RS.compare(wrong, self.theirs, "t"),
                         "result 1 of 2 (output [seed 1]): at index 2 it read back 9, the trusted run 3")
        tags = self.stream("tags", {"t": [("output [seed 1]", "i32", ints(1, 2, 3, 4)),
                                          ("input A after the run [seed 1]", "tagged", ints(5, 0, 6, 7))]})
        self.assertIn("at index 1 it read back 6#7, the trusted run 6#1", RS.compare(tags, self.theirs, "t"))
        short = self.stream("short", {"t": [("output [seed 1]", "i32", ints(1, 2, 3))]})
        self.assertIn("it read back 3 values, the trusted run 4", RS.compare(short, self.theirs, "t"))
        other = self.stream("other", {"t": [("output [seed 2]", "i32", ints(1, 2, 3, 4))]})
        self.assertIn("handed over 'output [seed 2]' in its place", RS.compare(other, self.theirs, "t"))

    def test_a_stream_cut_short_or_malformed_fails(self):
        one = self.stream("one", {"t": [("output [seed 1]", "i32", ints(1, 2, 3, 4))]})
        self.assertIn("handed over 1 results where the trusted run handed over 2", RS.compare(one, self.theirs, "t"))
        cut = self.stream("cut", {"t": [("output [seed 1]", "i32", ints(1, 2, 3, 4)),
                                        ("input A after the run [seed 1]", "tagged", ints(5, 0, 6, 1))]}, cut=3)
        self.assertIn("ends inside a result", cut.problem)
        self.assertNotEqual(RS.compare(cut, self.theirs, "t"), "")
        (self.dir / "junk").write_bytes(b"Sxyz")
        self.assertIn("malformed", RS.read_stream(self.dir / "junk").problem)
        unended = self.stream("unended", {"t": [("output [seed 1]", "i32", ints(1, 2, 3, 4)),
                                                ("input A after the run [seed 1]", "tagged", ints(5, 0, 6, 1))]}, cut=1)
        self.assertEqual(RS.compare(unended, self.theirs, "t"), "its results end before the test case did")

    def test_the_collector_keeps_a_pipe_up_to_its_cap(self):
        data = frames({"t": [("output [seed 1]", "i32", ints(*range(1000)))]})
        for cap, whole in ((1 << 20, True), (100, False)):
            read_end, write_end = os.pipe()
            c = RS.Collector(read_end, self.dir / f"pipe{cap}", cap)
            os.write(write_end, data)
            os.close(write_end)
            s = c.finish()
            self.assertEqual(bool(s.tests.get("t")) and not s.problem, whole)

    def test_the_trusted_run_decides_what_is_not_graded(self):
        skipped = REP.Trusted("skipped", "not graded here: needs 17 GiB of device memory")
        self.assertEqual(JUDGE.judge(REP.Outcome("passed"), skipped, "").status, "not-graded")
        # the student's process said "no memory" where the trusted one had it
        claim = REP.Outcome("not-graded", "not graded here: needs 17 GiB")
        self.assertEqual(JUDGE.judge(claim, self.TRUSTED, "").status, "failed")
        self.assertEqual(JUDGE.judge(REP.Outcome("failed", "index 3"), self.TRUSTED, "").message, "index 3")
        self.assertEqual(JUDGE.judge(REP.Outcome("passed"), None, "").status, "not-graded")

    def test_the_trusted_report_is_read_per_test(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "r.jsonl"
            path.write_text('{"event":"start","test":"a"}\n'
                            '{"event":"end","test":"a","status":"passed","reason":"","failure":""}\n'
                            '{"event":"end","test":"b","status":"skipped","reason":"not graded here"}\n'
                            'garbage\n')
            got = REP.read_report_ends(path)
        self.assertEqual(got["a"], REP.Trusted("passed", ""))
        self.assertEqual((got["b"].status, got["b"].message), ("skipped", "not graded here"))

    def test_the_traces_objections_fail_a_passing_report(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "r.jsonl"
            path.write_text('{"event":"start","test":"t"}\n{"event":"end","test":"t","status":"passed",'
                            '"trace":"it called cudaMemPoolCreate"}\n'
                            '{"event":"summary","passed":1,"failed":0,"skipped":0}\n')
            o = REP.read_report(path, "t", PROC.Run(0, 1, ""), 5)
        self.assertEqual(o.status, "failed")
        self.assertIn("cudaMemPoolCreate", o.message)

    def test_a_report_that_says_passed_but_exits_non_zero_fails(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "r.jsonl"
            path.write_text('{"event":"start","test":"t"}\n{"event":"end","test":"t","status":"passed"}\n'
                            '{"event":"summary","passed":1,"failed":0,"skipped":0}\n')
            self.assertEqual(REP.read_report(path, "t", PROC.Run(0, 1, ""), 5).status, "passed")
            self.assertEqual(REP.read_report(path, "t", PROC.Run(3, 1, ""), 5).status, "failed")


def plain_options(sandbox: str | None) -> OPT.Options:
    """The harness's options with every default but the seed and SANDBOX."""
    return OPT.Options(argparse.Namespace(timeout=None, timeout_scale=None, build_timeout=None, sanitize="0",
                                          no_large=None, arch=None, parts=None, seed="5", out=None, base=None,
                                          timing=None, sandbox=sandbox, work_root=None))


class Environment(unittest.TestCase):
    def test_a_submission_sees_an_allowlist_of_the_harness_environment(self):
        saved = dict(os.environ)
        try:
            os.environ.update({"MAKEFLAGS": "-j4 -- GRADES=/secret/grades", "GRADE_TOKEN": "t0ken", "PWD": "/secret"})
            env = PROC.test_env(plain_options("0"), {"CUDA_VISIBLE_DEVICES": "1"})
        finally:
            os.environ.clear()
            os.environ.update(saved)
        self.assertEqual(env["CUDA_VISIBLE_DEVICES"], "1")
        self.assertIn("PATH", env)
        for name in ("MAKEFLAGS", "GRADE_TOKEN", "PWD"):
            self.assertNotIn(name, env)
        self.assertEqual(set(env) - set(PROC.ENV_KEPT), {"LAB_SEED", "LAB_TRACE", "LAB_CONFINE", "LAB_LARGE", "NO_COLOR"})


class Archives(unittest.TestCase):
    def test_an_archive_is_looked_at_up_to_a_bound_of_members(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "many.tar"
            with tarfile.open(path, "w") as tar:
                for i in range(SUB.ARCHIVE_MEMBERS + 5):
                    data = b"x"
                    info = tarfile.TarInfo(f"junk/{i}.txt")
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
            notes: list[str] = []
            readers = SUB._archive_readers(path, notes)
        self.assertEqual(len(readers), SUB.ARCHIVE_MEMBERS)
        self.assertTrue(any("the rest were not looked at" in n for n in notes), notes)


class Unsandboxed(unittest.TestCase):
    def test_nothing_is_graded_without_a_sandbox_said_or_not(self):
        # Outside a sandbox a test can end the harness and write results.json
        # itself: where none can start, and with SANDBOX=0, grading refuses in one line.
        opts = plain_options(None)
        opts.sandbox = SB.Sandbox(tools=())  # as where no namespace can be made
        for why in (opts.unsandboxed(), plain_options("0").unsandboxed()):
            self.assertIn("not graded without a sandbox", why)
            self.assertIn("results.json", why)
            self.assertNotIn("\n", why)

    def test_make_grade_sandbox_0_refuses_and_writes_no_grade(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "out"
            args = argparse.Namespace(submission=str(CT.LAB), out=str(out), student=None, base=str(Path(tmp) / "base"))
            with mock.patch.object(LOCAL, "prepare_base", lambda base, opts, say: base), \
                    mock.patch.object(LOCAL, "lease", side_effect=AssertionError("no GPU is held to refuse")):
                status = LOCAL.cmd_grade(args, plain_options("0"))
            data = json.loads((out / "results.json").read_text())
        self.assertEqual(status, 2)
        self.assertIn("NOT GRADED: not graded without a sandbox", data["output"])


class NoGpu(unittest.TestCase):
    def test_make_grade_without_a_gpu_refuses_before_building_anything(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "out"
            args = argparse.Namespace(submission=str(CT.LAB), out=str(out), student=None, base=str(Path(tmp) / "base"))
            with mock.patch.object(LOCAL, "gpu_listed", lambda: (False, "nvidia-smi lists no GPU")), \
                    mock.patch.object(LOCAL, "prepare_base", side_effect=AssertionError("built without a GPU")), \
                    mock.patch.object(LOCAL, "lease", side_effect=AssertionError("no GPU is held to refuse")):
                opts = plain_options(None)
                opts.unsandboxed = lambda: ""  # as where a sandbox starts
                status = LOCAL.cmd_grade(args, opts)
            data = json.loads((out / "results.json").read_text())
        self.assertEqual(status, 1)
        self.assertEqual(data["score"], 0)
        self.assertIn("NOT GRADED: no GPU: nvidia-smi lists no GPU", data["output"])

    def test_grade_all_without_a_gpu_refuses_before_building_and_records_nobody(self):
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "class" / "alice").mkdir(parents=True)
            grades = Path(tmp) / "grades"
            args = argparse.Namespace(submissions=str(Path(tmp) / "class"), out=str(grades), seed=None, base=None,
                                      scheduler=None)
            with mock.patch.object(LOCAL, "gpu_listed", lambda: (False, "nvidia-smi lists no GPU")), \
                    mock.patch.object(LOCAL, "prepare_base", side_effect=AssertionError("built without a GPU")):
                status = LOCAL.cmd_grade_all(args, plain_options(None))
            self.assertEqual(status, 1)
            self.assertEqual(sorted(p.name for p in grades.iterdir()), ["seed"])


class Hints(unittest.TestCase):
    """hints/: each question's second hint, shown only when asked (make hint)."""

    def show(self, *argv, answer=""):
        return subprocess.run([sys.executable, str(CT.LAB / "hints" / "show.py"), *argv], input=answer,
                              capture_output=True, text=True)

    def test_every_question_has_one_and_none_is_code(self):
        for qid in CT.all_questions(CT.LAB):
            text = (CT.LAB / "hints" / f"{qid}.md").read_text()
            self.assertTrue(text.startswith(f"# {qid}, "), qid)
            self.assertNotIn("```", text, f"{qid}'s hint holds a code block")
            for span in re.findall(r"`([^`]*)`", text):  # names (a file's path too), never formulas
                self.assertIsNone(re.search(r"[-+*%^=]|\s/|/\s", span), f"{qid}'s hint: `{span}`")
        handout = (CT.LAB / "handout.md").read_text()
        self.assertNotIn("Hint 2: the idea", handout)
        self.assertEqual(handout.count("make hint Q="), len(CT.all_questions(CT.LAB)))

    def test_a_hint_is_shown_only_when_asked(self):
        hint = (CT.LAB / "hints" / "Q3.md").read_text()
        for answer in ("", "n\n"):
            r = self.show("Q3", answer=answer)
            self.assertEqual(r.returncode, 1)
            self.assertNotIn(hint.splitlines()[2], r.stdout)
        self.assertIn(hint, self.show("3", answer="y\n").stdout)
        self.assertEqual(self.show("x3", "--yes").stdout, (CT.LAB / "hints" / "X3.md").read_text())
        self.assertEqual(self.show("Q9").returncode, 2)


class DocumentsCheck(unittest.TestCase):
    def test_outside_a_repository_builds_and_outputs_are_no_part_of_the_lab(self):
        import restated
        with tempfile.TemporaryDirectory() as tmp:
            lab = Path(tmp)
            for rel in ("handout.md", "grade-results/results.json", "check-results/report.txt", "build/x.o", "part1"):
                (lab / rel).parent.mkdir(parents=True, exist_ok=True)
                (lab / rel).write_text("text")
            self.assertEqual(restated.lab_files(lab), ["handout.md"])


class CheckSubmission(unittest.TestCase):
    def test_a_hand_in_is_checked_with_the_emulated_feedback_and_never_graded(self):
        from harness.schedulers import gradescope as GS
        seen = {}

        def feedback(submission, out, base, opts, student, why, started):
            seen.update(submission=submission, base=base, student=student, why=why)
            return {}

        with tempfile.TemporaryDirectory() as tmp:
            hand_in = Path(tmp) / "alice.zip"
            hand_in.write_bytes(b"")
            out = Path(tmp) / "check-results"
            with mock.patch.object(GS, "prepare_emulated_base", lambda base, parts, exclude, log: base), \
                    mock.patch.object(GS, "feedback", feedback), \
                    mock.patch.object(GS, "prepare_base", side_effect=AssertionError("a GPU build")):
                status = G.main(["check-submission", "--submission", str(hand_in), "--out", str(out)])
            self.assertEqual(status, 0)
            self.assertEqual(seen["submission"], hand_in.resolve())
            self.assertEqual(seen["base"], Path(tmp).resolve() / ".check-results-base")
            self.assertEqual(seen["student"], "alice.zip")
            self.assertIn("a hand-in check", seen["why"])
            self.assertEqual(G.main(["check-submission", "--submission", str(Path(tmp) / "missing")]), 2)


class CallTraffic(JudgedPair, unittest.TestCase):
    """Each judged call's PCIe bytes, metered by the judge (tests/judge/pcie.hpp)
    and judged by the harness (pcie.py): the stand-in judge writes its lines
    as the real one does, from the figures measured on an H200."""

    HONEST = "mergeSmall<int>\t29000\t1\t49000\t0.001\n"  # a launch and its synchronisation
    ON_HOST = "mergeSmallMany<int>\t5649664\t1\t6300000\t0.004\n"  # its arrays down and back

    def judge(self, *runs):
        """A judge whose n-th run (counted in a file) writes runs[n]'s lines."""
        count = self.dir / "runs"
        return (f"n = len(open({str(count)!r}).read()) if os.path.exists({str(count)!r}) else 0\n"
                f"open({str(count)!r}, 'a').write('x')\n"
                f"open(os.environ['LAB_PCIE_LOG'], 'a').write({list(runs)!r}[min(n, {len(runs) - 1})])\n" + self.JUDGE)

    def test_honest_calls_pass_without_a_note(self):
        outcome, _ = self.run_pair(self.judge(self.HONEST * 50), self.graded("sock.recv(100)\n"), metered=True)
        self.assertEqual(outcome.status, "passed", outcome.message)
        self.assertEqual(self.notes, [])

    def test_calls_done_on_the_host_fail_the_case_when_they_do_so_twice(self):
        outcome, _ = self.run_pair(self.judge(self.ON_HOST), self.graded("sock.recv(100)\n"), metered=True)
        self.assertEqual(outcome.status, "failed")
        self.assertIn("over PCIe", outcome.message)
        self.assertTrue(any("(twice)" in n for n in self.notes), self.notes)
        self.assertEqual((self.dir / "runs").read_text(), "xx")

    def test_a_burst_seen_once_costs_nothing(self):
        outcome, _ = self.run_pair(self.judge(self.ON_HOST, self.HONEST), self.graded("sock.recv(100)\n"),
                                   metered=True)
        self.assertEqual(outcome.status, "passed", outcome.message)
        self.assertTrue(any("not in a second" in n for n in self.notes), self.notes)

    def test_the_rule_adds_small_calls_up_and_leaves_tiny_cases_alone(self):
        from harness import pcie
        honest = [pcie.Call("mergeSmall<int>", 29000, 1, 49000, 0.001)] * 6000
        on_host = [pcie.Call(c.name, c.arrays, c.launches, c.moved + int(1.1 * c.arrays), c.seconds) for c in honest]
        self.assertEqual(pcie.traffic(honest).verdict(), "")
        self.assertIn("work done on the host", pcie.traffic(on_host).verdict())
        self.assertEqual(pcie.traffic(on_host[:10]).verdict(), "")  # 290 KB of arrays: under the floor
        launches = [pcie.Call("oddEvenSort<int>", 24000, 4097, 9_215_900, 0.038)]  # measured, the most launches
        self.assertEqual(pcie.traffic(launches).verdict(), "")


class HostTraffic(unittest.TestCase):
    """The test phase's PCIe bytes, read outside every graded process (pcie.py)."""

    def test_the_meter_adds_up_steps_of_counters_that_wrap_at_32_bits(self):
        from harness import pcie
        readings = iter([(4294967000, 10), (100, 20), (300, 4294967290), (400, 5)])
        with mock.patch.object(pcie, "_counters", lambda uuid: next(readings, (400, 5))), \
                mock.patch.object(pcie, "SAMPLE", 3600):
            with pcie.Meter("GPU-x") as m:
                m._step()
                m._step()
        self.assertEqual(m.bytes, (396 + 10) + (200 + 4294967270) + (100 + 11))

    def test_the_bytes_go_to_the_log_and_decide_nothing(self):
        from harness import pipeline
        with tempfile.TemporaryDirectory() as tmp:
            log = Path(tmp) / "pcie.tsv"
            pipeline.log_host_traffic(log, 900 << 20, 1000 << 20)
            self.assertEqual(log.read_text(), f"tests\t{900 << 20}\ntrusted runs\t{1000 << 20}\n")
            log.unlink()
            pipeline.log_host_traffic(log, None, 1000)  # no NVML: nothing written
            self.assertFalse(log.exists())


class EmulatedOnlyTests(unittest.TestCase):
    """The tests built only for the emulator (#ifdef LAB_EMULATED) carry
    [emulated], and a GPU's grading never lists them (course_table.py)."""

    def test_tagged_exactly_where_compiled_for_the_emulator_alone(self):
        for part, _ in CT.PARTS:
            inside, tagged, guarded = False, set(), set()
            for line in (CT.LAB / "tests" / f"test_{part}.cpp").read_text().splitlines():
                if line.startswith("#ifdef LAB_EMULATED"):
                    inside = True
                elif line.startswith("#endif"):
                    inside = False
                for name, tags in CT.TEST_CASE_RE.findall(line):
                    if "[emulated]" in tags:
                        tagged.add(name)
                    if inside:
                        guarded.add(name)
            self.assertEqual(tagged, guarded, part)

    def test_a_gpu_grading_leaves_them_out(self):
        only = CT.emulated_names(CT.LAB)
        self.assertEqual(len(only), 2)
        gpu = {n for q in CT.all_questions(CT.LAB).values() for n in q.weights}
        emulated = {n for q in CT.all_questions(CT.LAB, emulated=True).values() for n in q.weights}
        self.assertFalse(only & gpu)
        self.assertEqual(emulated - gpu, only)


class SlowSanitizedRun(unittest.TestCase):
    """A sanitized run well past what its graded runs predict is a note for a
    person, and an honest one is not (sanitizers.py), on the H200's figures."""

    def notes_for(self, took: float, graded: float) -> list[str]:
        with tempfile.TemporaryDirectory() as tmp:
            g = mock.Mock(seconds={"a": graded}, logs=Path(tmp), notes=[])
            g.budget.left.return_value = 1e6
            g.binary_intact.return_value = True
            runs = mock.Mock(groups={"Q1": ["a"]}, limits={"Q1": 1000.0}, binaries={"Q1": Path("x")})
            clock = iter([0.0, took])
            with mock.patch.object(SAN, "sanitized_run", lambda *a: 0), \
                    mock.patch.object(SAN, "time", mock.Mock(monotonic=lambda: next(clock))):
                SAN.sanitize_one(g, runs, "Q1", "racecheck")
            return g.notes

    def test_the_stall_is_noted_and_honest_runs_are_not(self):
        # graded 7 s: 28.5 s expected. Q2 under racecheck took 31 s honestly;
        # stalled 40 s under the sanitizer, 42-46 s.
        self.assertEqual(self.notes_for(31.0, 7.0), [])
        self.assertIn(SAN.SLOW_RUN_NOTE, " ".join(self.notes_for(42.0, 7.0)))
        self.assertEqual(self.notes_for(37.0, 7.0), [], "1.3 times, but under 10 s over")
        # a long run (225 s expected): 35 s over is still within a quarter
        self.assertEqual(self.notes_for(260.0, 400.0), [])
        self.assertIn(SAN.SLOW_RUN_NOTE, " ".join(self.notes_for(290.0, 400.0)))


class GpuLease(unittest.TestCase):
    """A grading holds its GPU alone, machine-wide (gpus.lease): no classmate's
    process runs on it meanwhile; a wait or a probe that fails for what the
    submission did not take is a lab error, never a score."""

    GPUS = [("0", "GPU-lease-test-a"), ("1", "GPU-lease-test-b")]

    def test_one_grading_at_a_time_holds_a_gpu(self):
        self.assertEqual(most_at_once(lambda: GPUS.lease(self.GPUS[:1], 30), 4, 0.2), 1)

    def test_a_grading_takes_a_gpu_no_other_holds(self):
        with GPUS.lease(self.GPUS[:1], 5) as first:
            self.assertEqual(first, {"CUDA_VISIBLE_DEVICES": "0"})
            with GPUS.lease(self.GPUS, 5) as second:
                self.assertEqual(second, {"CUDA_VISIBLE_DEVICES": "1"})

    def test_a_gpu_held_too_long_by_others_is_a_lab_error(self):
        said = []
        with GPUS.lease(self.GPUS[:1], 5):
            with self.assertRaisesRegex(GPUS.LabError, "other gradings held"):
                with GPUS.lease(self.GPUS[:1], 0.3, said.append):
                    self.fail("leased twice")
        with self.assertRaisesRegex(GPUS.LabError, "a place of"):
            with GPUS.place("lease-test", 1), GPUS.place("lease-test", 1, wait=0.3):
                self.fail("placed twice")

    def test_the_visible_gpus_are_named_by_uuid(self):
        with tempfile.TemporaryDirectory() as tmp:
            smi = Path(tmp) / "nvidia-smi"
            smi.write_text("#!/bin/sh\necho '0, GPU-aaaa-1111'\necho '1, GPU-bbbb-2222'\n")
            smi.chmod(0o755)
            env = {"PATH": f"{tmp}:{os.environ['PATH']}"}
            with mock.patch.dict(os.environ, {**env, "CUDA_VISIBLE_DEVICES": ""}):
                self.assertEqual(GPUS.visible_gpus(), [("GPU-aaaa-1111", "GPU-aaaa-1111"),
                                                       ("GPU-bbbb-2222", "GPU-bbbb-2222")])
            with mock.patch.dict(os.environ, {**env, "CUDA_VISIBLE_DEVICES": "1"}):
                self.assertEqual(GPUS.visible_gpus(), [("1", "GPU-bbbb-2222")])
            with mock.patch.dict(os.environ, {**env, "CUDA_VISIBLE_DEVICES": "GPU-aaaa"}):
                self.assertEqual(GPUS.visible_gpus(), [("GPU-aaaa", "GPU-aaaa-1111")])

    def test_a_probe_that_fails_on_a_listed_gpu_is_a_lab_error_not_no_gpu(self):
        calls = []

        def probe(base, env, opts):
            calls.append(env)
            return False, "no GPU: crashed (SIGABRT)", 0

        with mock.patch.object(GPUS, "probe_gpu", probe), mock.patch.object(GPUS, "PROBE_PAUSE", 0), \
                mock.patch.object(GPUS, "gpu_listed", lambda: (True, "GPU 0: a GPU")):
            with self.assertRaisesRegex(GPUS.LabError, "probe failed 3 times"):
                GPUS.probe_held(Path("/nonexistent"), {"CUDA_VISIBLE_DEVICES": "0"}, None)
        self.assertEqual(len(calls), GPUS.PROBE_TRIES)
        with mock.patch.object(GPUS, "probe_gpu", probe), \
                mock.patch.object(GPUS, "gpu_listed", lambda: (False, "nvidia-smi lists no GPU")):
            self.assertFalse(GPUS.probe_held(Path("/nonexistent"), {}, None)[0])  # no GPU at all: as before

    def test_a_lab_error_writes_no_score_and_says_grade_again(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "out"
            status = LOCAL.lab_error(CT.LAB, out, plain_options(None), "tester", "the probe failed")
            data = json.loads((out / "results.json").read_text())
        self.assertEqual(status, 3)
        self.assertIn("a lab error, not the submission's", data["output"])
        self.assertIn("grade it again", data["output"])


class Confinement(unittest.TestCase):
    """Each graded test case is one process (tests/confine.cpp)."""

    def test_a_confined_test_program_starts_threads_but_no_process(self):
        binary = CT.LAB / "build" / "test_common"
        if not binary.exists():
            self.skipTest("build/test_common is not built (make tests)")
        r = subprocess.run([str(binary), "[confine]"], capture_output=True, text=True, timeout=60,
                           env={**os.environ, "LAB_CONFINE": "1"})
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("1 passed, 0 failed", r.stdout)


class Includes(unittest.TestCase):
    def test_includes_from_outside_the_copy_or_of_its_tests_are_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp) / "work"
            (work / "part1_merge_path").mkdir(parents=True)
            dep = work / "student.d"
            dep.write_text("build/student/part1_merge_path/student.o : part1_merge_path/student.cu \\\n"
                           "  part1_merge_path/part1.cuh /usr/include/stdio.h \\\n"
                           "  ../../part1_merge_path/reference.cu /etc/passwd tests/oracle/oracle_part1.cpp\n"
                           "part1_merge_path/part1.cuh:\n")
            got = BUILD.include_problems(dep, work, [Path("/usr/include")])
        self.assertEqual(got, ["../../part1_merge_path/reference.cu", "/etc/passwd", "tests/oracle/oracle_part1.cpp"])

    def test_a_missing_dependency_file_is_a_problem(self):
        self.assertTrue(BUILD.include_problems(Path("/nonexistent.d"), Path("/tmp"), []))

    def test_the_headers_of_the_toolkit_in_use_are_system_headers_wherever_it_lies(self):
        from unittest import mock
        with tempfile.TemporaryDirectory() as tmp:
            kit = fake_toolkit(Path(tmp))
            work = Path(tmp) / "work"
            work.mkdir()
            dep = work / "student.d"
            dep.write_text(f"student.o : student.cu {kit}/bin/../include/cuda_runtime.h {tmp}/elsewhere.h\n")
            with mock.patch.dict(os.environ, {"NVCC": str(kit / "bin" / "nvcc")}):
                roots = BUILD.system_include_roots()
            self.assertIn(kit.resolve(), roots)
            self.assertEqual(BUILD.include_problems(dep, work, roots), [f"{tmp}/elsewhere.h"])

    def test_thrust_and_cub_headers_are_found_however_the_source_spells_them(self):
        # CUB's BlockMergeSort behind a namespace alias: the source never says
        # cub::, the dependency file names the header all the same.
        with tempfile.TemporaryDirectory() as tmp:
            dep = Path(tmp) / "student.d"
            dep.write_text("build/student/part3_merge_sort/student.o : part3_merge_sort/student.cu \\\n"
                           "  /usr/local/cuda/bin/../targets/x86_64-linux/include/cccl/cub/block/block_merge_sort.cuh \\\n"
                           "  /usr/local/cuda/include/cuda_runtime.h part3_merge_sort/part3.cuh \\\n"
                           "  /usr/local/cuda/include/thrust/sort.h part3_merge_sort/my_cub_notes.cuh\n")
            got = BUILD.library_includes(dep)
            self.assertEqual([Path(d).name for d in got], ["block_merge_sort.cuh", "sort.h"])
            dep.write_text("student.o : student.cu /usr/local/cuda/include/cuda_runtime.h part3_merge_sort/part3.cuh\n")
            self.assertEqual(BUILD.library_includes(dep), [])


@unittest.skipUnless(SB.Sandbox().available, "no sandbox can start on this machine: " + SB.Sandbox().why)
class Sandbox(unittest.TestCase):
    """What a sandboxed test process can and cannot do (sandbox.py), with the
    first tool that starts here; SandboxBwrap repeats it with bubblewrap. Each
    check would fail without a sandbox."""
    TOOLS = ("unshare", "bwrap")

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)
        self.iso = Isolation()
        self.iso.dir = self.dir

    def tearDown(self):
        self.tmp.cleanup()

    def passes(self, body):
        return self.iso.outcome("line(event='start', test=name)\n" + body +
                                "line(event='end', test=name, status='passed')\n"
                                "line(event='summary', passed=1, failed=0, skipped=0)\n", sandbox=True,
                                tools=self.TOOLS)

    def test_a_passing_report_still_comes_through(self):
        self.assertEqual(self.passes("").status, "passed")

    def test_it_cannot_write_outside_its_scratch_folder_nor_see_the_lab(self):
        victim = self.dir / "results.json"
        victim.write_text("true results")
        with tempfile.NamedTemporaryFile(prefix="lab-outside-") as outside:  # in the machine's /tmp
            o = self.passes(f"assert not os.path.exists({str(CT.LAB / 'Makefile')!r})\n"
                            f"assert not os.path.exists({outside.name!r})\n"
                            f"try:\n    open({str(victim)!r}, 'w').write('forged')\nexcept OSError:\n    pass\n")
        self.assertEqual(o.status, "passed", o.message)
        self.assertEqual(victim.read_text(), "true results")

    def test_the_cuda_toolkit_in_use_is_shown_read_only_and_nothing_beside_it(self):
        # A toolkit outside the system's folders (unpacked without root, or
        # PyPI's wheels): a build inside must find it, and see nothing more.
        from unittest import mock
        with tempfile.TemporaryDirectory() as kit_dir:
            kit = fake_toolkit(Path(kit_dir))
            (Path(kit_dir) / "beside.txt").write_text("not the toolkit's")
            nvcc, beside = str(kit / "bin" / "nvcc"), str(Path(kit_dir) / "beside.txt")
            with mock.patch.dict(os.environ, {"NVCC": nvcc}):
                o = self.passes(f"assert os.path.exists({nvcc!r})\n"
                                f"assert not os.path.exists({beside!r})\n"
                                f"try:\n    open({nvcc!r}, 'w').write('forged')\nexcept OSError:\n    pass\n")
            self.assertEqual(o.status, "passed", o.message)
            self.assertEqual((kit / "bin" / "nvcc").read_text(), "#!/bin/sh\n")

    def test_a_daemon_it_leaves_is_killed_with_it(self):
        marker = self.dir / "out" / "daemon-alive"
        marker.parent.mkdir()
        os.chmod(marker.parent, 0o777)
        self.passes(f"import subprocess\nsubprocess.Popen(['setsid', 'sh', '-c', 'sleep 2; touch {marker}'])\n")
        import time
        time.sleep(3)
        self.assertFalse(marker.exists(), "a process the test left behind outlived it")

    def test_its_first_process_names_nothing_of_the_grading(self):
        # Its own command is its to see; the sandbox's mounts and the lab are not.
        o = self.passes("first = open('/proc/1/cmdline', 'rb').read().decode(errors='replace')\n"
                        f"assert {str(CT.LAB)!r} not in first, first\n"
                        "assert 'bind' not in first and 'mount' not in first, first\n")
        self.assertEqual(o.status, "passed", o.message)

    def test_every_mount_under_sys_is_read_only_so_a_test_cannot_raise_its_limits(self):
        # /sys/fs/cgroup (and any other mount below /sys) read-only too, as /sys
        # is: a test cannot write its cgroup's memory.max or pids.max.
        o = self.passes("mounts = [l.split() for l in open('/proc/self/mountinfo')]\n"
                        "under = [(m[4], m[5]) for m in mounts if m[4] == '/sys' or m[4].startswith('/sys/')]\n"
                        "assert under, mounts\n"
                        "assert all('ro' in opts.split(',') for _, opts in under), under\n"
                        "import glob\n"
                        "for limit in glob.glob('/sys/fs/cgroup/**/memory.max', recursive=True)[:20]:\n"
                        "    try:\n        open(limit, 'w').write('max')\n        raise SystemExit('wrote ' + limit)\n"
                        "    except OSError:\n        pass\n")
        self.assertEqual(o.status, "passed", o.message)

    def test_a_harness_leaves_no_sandbox_folder_behind(self):
        # Each harness makes a mount point for its sandboxes in the system's
        # temporary folder; it is removed when the harness ends.
        code = ("import sys; sys.path.insert(0, %r)\nfrom harness import sandbox as SB\n"
                "box = SB.Sandbox(tools=%r)\nprint(box.root_dir if box.available else '')\n") % (str(HERE), self.TOOLS)
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        root = r.stdout.strip()
        if root:  # the unshare sandbox makes one; bwrap's needs none
            self.assertFalse(Path(root).exists(), f"{root} outlived the harness")

    def test_its_tmp_and_shm_are_small(self):
        o = self.passes("import shutil\n"
                        "assert shutil.disk_usage('/tmp').total <= 512 << 20, shutil.disk_usage('/tmp')\n"
                        "assert shutil.disk_usage('/dev/shm').total <= 256 << 20, shutil.disk_usage('/dev/shm')\n")
        self.assertEqual(o.status, "passed", o.message)

    def test_a_build_sees_no_gpu_and_a_test_the_graded_one_only(self):
        box = SB.Sandbox(tools=self.TOOLS)
        listing = "import os\nprint(sorted(n for n in os.listdir('/dev') if n.startswith('nvidia')))"
        seen = {}
        for limits, gpu in ((SB.BUILD, None), (SB.TEST, ["nvidiactl"])):
            r = PROC.run(box.wrap([PYTHON, "-c", listing], Path("/"), limits, gpu=gpu), self.dir, 30, sandboxed=True)
            seen[limits.what] = r.output.strip()
        self.assertEqual(seen["build"], "[]")
        if Path("/dev/nvidiactl").exists():
            self.assertEqual(seen["test"], "['nvidiactl']")

    def test_a_log_it_names_goes_to_the_harness_through_a_pipe(self):
        # As the sanitizer's log and the demos' CSV: "{log}" names a pipe's end.
        g = self.iso.grading(True)
        g.opts.sandbox = SB.Sandbox(hidden=(CT.LAB,), tools=self.TOOLS)
        g.opts.sandbox.own(self.dir)
        r, results, report, log = g.sandboxed_with_pipes(["/bin/sh", "-c", 'echo written > "$1"', "sh", "{log}"],
                                                         SB.TEST, 30, self.dir / "out.log", self.dir / "stem", 0, 0,
                                                         log_cap=1 << 20)
        results.wait()
        report.wait()
        self.assertEqual((r.returncode, log.wait().read_text()), (0, "written\n"), r.output)

    def test_it_has_no_network(self):
        import socket
        with socket.socket() as server:  # a server on this machine's loopback, which a sandbox cannot reach
            server.bind(("127.0.0.1", 0))
            server.listen(1)
            port = server.getsockname()[1]
            o = self.passes(f"import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
                            "    reached = True\nexcept OSError:\n    reached = False\nassert not reached\n")
        self.assertEqual(o.status, "passed", o.message)


@unittest.skipUnless(SB.Sandbox(tools=("bwrap",)).available, "bubblewrap cannot start a sandbox here")
class SandboxBwrap(Sandbox):
    TOOLS = ("bwrap",)


class LimitsTable(unittest.TestCase):
    @unittest.skipUnless((CT.LAB / "part1_merge_path" / "reference.cu").exists(),
                         "a student copy has no INSTRUCTORS.md")
    def test_the_readmes_limits_are_the_sandboxs(self):
        readme = (CT.LAB / "INSTRUCTORS.md").read_text()
        rows = {}
        for line in readme.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if line.strip().startswith("|") and len(cells) == 4:
                rows[cells[0]] = cells[1:]
        kinds = (SB.BUILD, SB.TEST, SB.SANITIZED)
        self.assertEqual(rows["host memory, its `/tmp` and `/dev/shm` included"],
                         [SB.describe_bytes(k.memory) for k in kinds])
        self.assertEqual(rows["processes and threads"], [str(k.tasks) for k in kinds])
        self.assertEqual(rows["largest file it writes"], [SB.describe_bytes(k.file_size) for k in kinds])
        self.assertEqual(rows["private `/tmp`"], [k.tmp for k in kinds])
        self.assertEqual(rows["private `/dev/shm`"], [k.shm for k in kinds])
        prose = " ".join(readme.split())
        self.assertIn(f"{SB.NPROC_WITHOUT_CGROUP} processes per user", prose)
        self.assertIn(f"program of more than {BUILD.BINARY_CAP >> 20} MiB", prose)
        self.assertIn(f"at most `GPU_JOBS` processes (default {OPT.GPU_JOBS})", prose)
        slowest = "mergeSmall merges every size from 0 to 1024 at several splits"
        q1 = CT.read_points(CT.LAB, "part1")["Q1"]
        self.assertIn(f'"{slowest}", has {q1.timeouts[slowest]:g} s for', prose)


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


class TrustedParts(unittest.TestCase):
    def test_shared_trusted_runs_cover_their_own_parts_whoever_asks_first(self):
        # The selftest grades faults of one part each against one trusted run:
        # a first caller grading Part 1 alone must not leave Parts 2-4 without
        # trusted results (each of their questions then scored 0, measured).
        from harness import trusted as TR
        with tempfile.TemporaryDirectory() as tmp:
            runs = TR.TrustedRuns(Path(tmp), plain_options(None), Path(tmp) / "logs")
            seen = []
            with mock.patch.object(TR.TrustedRuns, "_run_all", lambda self, parts, env: seen.append(list(parts))):
                runs.run_all({"CUDA_VISIBLE_DEVICES": "0"})
                runs.part("part2", False, {"CUDA_VISIBLE_DEVICES": "0"})
            runs.close()
        self.assertEqual(seen, [[p for p, _ in CT.PARTS]])


class TrustedLargeSlots(unittest.TestCase):
    def test_trusted_large_processes_take_turns_machine_wide(self):
        self.assertEqual(most_at_once(lambda: GPUS.place("test", 2), 5, 0.3), 2)
        self.assertEqual(GPUS.large_jobs(143771, 4), min(4, (os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") >> 20)
                                                    // GPUS.LARGE_PROCESS_MIB) or 1)
        self.assertEqual(GPUS.large_jobs(16000, 4), 1)


class GpuNodes(unittest.TestCase):
    def test_a_sandbox_is_shown_the_graded_gpu_node_only(self):
        with tempfile.TemporaryDirectory() as tmp:
            driver, dev = Path(tmp) / "gpus", Path(tmp) / "dev"
            dev.mkdir()
            for name in ("nvidia0", "nvidia1", "nvidia3", "nvidiactl", "nvidia-uvm", "nvidia-caps", "null"):
                (dev / name).touch()
            for bus, minor, uuid in (("0000:07:00.0", 0, "GPU-aaaa"), ("0000:0f:00.0", 3, "GPU-bbbb")):
                (driver / bus).mkdir(parents=True)
                (driver / bus / "information").write_text(f"Model: \t\t NVIDIA H200\nGPU UUID: \t {uuid}\n"
                                                           f"Device Minor: \t {minor}\n")
            self.assertEqual(SB.gpu_nodes("GPU-bbbb", driver, dev), ["nvidia-caps", "nvidia-uvm", "nvidiactl",
                                                                      "nvidia3"])
            self.assertIsNone(SB.gpu_nodes("GPU-cccc", driver, dev))  # not the driver's: every node, said so


class Scoring(unittest.TestCase):
    def question(self, weights, points=6.0):
        q = CT.Question("Q1", "part1", points, 60, 0.5, "Merge")
        for name, w in weights.items():
            q.tests.append(case(name))
            q.weights[name] = w
        return q

    def test_points_split_by_weight_and_weight_zero_gives_nothing(self):
        q = self.question({"a": 1, "b": 2, "refuses": 0})
        r = JUDGE.QuestionResult(q, {"a": REP.Outcome("passed"), "b": REP.Outcome("failed", "x"),
                                 "refuses": REP.Outcome("passed")})
        self.assertAlmostEqual(r.score, 2.0)
        self.assertEqual(r.counts(), (1, 2))
        self.assertEqual(r.first_failure, "b: x")

    def test_a_not_graded_test_leaves_the_split(self):
        q = self.question({"a": 1, "large": 1})
        r = JUDGE.QuestionResult(q, {"a": REP.Outcome("passed"), "large": REP.Outcome("not-graded", "needs memory")})
        self.assertAlmostEqual(r.score, 6.0)
        self.assertEqual(r.counts(), (1, 1))

    def test_a_test_that_never_ran_scores_nothing(self):
        r = JUDGE.QuestionResult(self.question({"a": 1}), {})
        self.assertEqual(r.score, 0)

    def test_sanitizer_errors_cost_the_penalty(self):
        q = self.question({"a": 1})
        r = JUDGE.QuestionResult(q, {"a": REP.Outcome("passed")}, sanitizer="memcheck reported 2 errors")
        self.assertAlmostEqual(r.score, 3.0)

    def test_results_json_table_and_gradebook(self):
        q = self.question({"a": 1, "b": 1, "zero": 0})
        r = JUDGE.QuestionResult(q, {"a": REP.Outcome("passed"), "b": REP.Outcome("failed", 'bad "quote"')})
        data = OUT.results_json([r], ["missing: x"], 42)
        self.assertEqual(data["score"], 3.0)
        self.assertEqual([t["name"] for t in data["tests"]], ["Q1 a", "Q1 b"])
        self.assertEqual({k for t in data["tests"] for k in t},
                         {"name", "score", "max_score", "output", "visibility", "status"})
        self.assertEqual([t["status"] for t in data["tests"]], ["passed", "failed"])
        self.assertIn("LAB_SEED=42", data["output"])
        self.assertIn("3/6", OUT.table([r]))
        line = OUT.gradebook_line('a "b"', [r], 42, ['note "x"'])
        self.assertEqual(line, '"a ""b""",3,6,3,"no report handed in",42,"note ""x"""')
        line = OUT.gradebook_line("c", [r], 1, [], report="report.md and 2 figures")
        self.assertIn('"to be graded by a person: report.md and 2 figures"', line)

    def test_refusing_writes_score_zero_and_the_reason(self):
        with tempfile.TemporaryDirectory() as tmp:
            OUT.refuse(Path(tmp), "alice", "no GPU: no NVIDIA driver", 7)
            data = json.loads((Path(tmp) / "results.json").read_text())
            self.assertEqual(data["score"], 0)
            self.assertIn("NOT GRADED: no GPU", data["output"])
            self.assertIn(f'"alice",0,{TOTAL},', (Path(tmp) / "gradebook.csv").read_text())


class Records(unittest.TestCase):
    def test_the_gradebook_comes_from_the_harness_records_not_the_students_folders(self):
        with tempfile.TemporaryDirectory() as tmp:
            grades = Path(tmp)
            q = list(CT.all_questions(CT.LAB).values())
            records = BOOK.Records(grades)
            results = [JUDGE.QuestionResult(x, {}) for x in q]
            records.add({"student": "alice", "score": 0, "gradebook": OUT.gradebook_line("alice", results, 1, [])})
            (grades / "alice").mkdir()
            (grades / "alice" / "gradebook.csv").write_text(f"header\n\"alice\",{TOTAL},{TOTAL}\n")  # a forgery
            BOOK.write_gradebook(grades, [("alice", None), ("bob", None)], BOOK.Records(grades).records)
            book = (grades / "gradebook.csv").read_text().splitlines()
        self.assertTrue(book[1].startswith(f'"alice",0,{TOTAL},'), book[1])
        self.assertIn("not graded", book[2])

    def test_slurm_tasks_get_grade_alls_options_less_the_submitting_hosts(self):
        argv = ["grade-all", "--submissions", "class", "--out", "grades", "--regrade", "bob", "--timeout", "9",
                "--scheduler", "slurm", "--slurm-gres=", "--slurm-partition", "gpu", "--seed", "7",
                "--arch", "sm_80", "--base", "b", "--sanitize", "0"]
        self.assertEqual(SLURM.task_argv(argv), ["--timeout", "9", "--arch", "sm_80", "--sanitize", "0"])

    def test_slurm_task_records_are_gathered_and_refusals_graded_again(self):
        with tempfile.TemporaryDirectory() as tmp:
            grades = Path(tmp)
            tasks = grades / SLURM.TASKS_DIR
            tasks.mkdir(parents=True)
            results = [JUDGE.QuestionResult(x, {}) for x in CT.all_questions(CT.LAB).values()]
            (tasks / "alice.json").write_text(json.dumps(
                {"student": "alice", "score": 0, "gradebook": OUT.gradebook_line("alice", results, 1, [])}))
            (tasks / "bob.json").write_text(json.dumps(
                {"student": "bob", "score": 0, "refused": "no GPU", "gradebook": OUT.gradebook_line("bob", results, 1, [])}))
            (tasks / "broken.json").write_text("{")
            records = BOOK.Records(grades)
            refused = SLURM.gather_tasks(grades, records)
            self.assertEqual(list(records.records), ["alice"])
            self.assertEqual(list(refused), ["bob"])
            self.assertEqual(list(BOOK.Records(grades).records), ["alice"])  # in records.jsonl now
            self.assertFalse((tasks / "alice.json").exists())

    def test_results_say_incomplete_until_the_verdict_is_written(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            OUT.write_atomically(out / "results.json", json.dumps(OUT.incomplete_json("grading did not finish")))
            self.assertIn("INCOMPLETE", json.loads((out / "results.json").read_text())["output"])
            OUT.write_outputs(out, "alice", [JUDGE.QuestionResult(q, {}) for q in CT.all_questions(CT.LAB).values()], [], 3)
            self.assertNotIn("INCOMPLETE", json.loads((out / "results.json").read_text())["output"])
            self.assertEqual(sorted(p.name for p in out.iterdir()),
                             ["gradebook.csv", "report.txt", "results.json", "summary.json"])


class Options(unittest.TestCase):
    def parse(self, *argv):
        return G.main(["grade", *argv])

    def test_bad_options_are_refused_with_status_2(self):
        self.assertEqual(self.parse("--timeout", "-1"), 2)
        self.assertEqual(self.parse("--timeout", "soon"), 2)
        self.assertEqual(self.parse("--sanitize", "yes"), 2)
        self.assertEqual(self.parse("--seed", "-3"), 2)
        self.assertEqual(self.parse("--parts", "part9"), 2)
        self.assertEqual(self.parse("--timing", "fast"), 2)
        self.assertEqual(self.parse("--submission", "/nonexistent/submission"), 2)
        self.assertEqual(G.main(["grade-all", "--submissions", "/nonexistent"]), 2)


class Speed(unittest.TestCase):
    HEADER = "study,implementation,n,d,shape,median_ms,keys_per_s,peer,peer_ms,ratio,gpu\n"

    def csv(self, folder: Path, name: str, rows: str) -> Path:
        path = folder / name
        path.write_text(self.HEADER + textwrap.dedent(rows))
        return path

    def test_ratios_are_geometric_means_over_rows_both_measured(self):
        with tempfile.TemporaryDirectory() as tmp:
            ref = TIMING.read_timing_csv(self.csv(Path(tmp), "ref.csv", """\
                copy,cudaMemcpy,1024,0,,0.5,1,,,,GPU X
                Q5,reference,1024,0,,1.0,1,thrust::merge,2.0,0.5,GPU X
                Q5,reference,1024,0,,1.0,1,rank-naive,3.0,0.33,GPU X
                Q5,reference,4096,0,,2.0,1,thrust::merge,2.0,1.0,GPU X
                Q7,reference,4096,0,256x17,1.0,1,,,,GPU X
                """))
            student = TIMING.read_timing_csv(self.csv(Path(tmp), "student.csv", """\
                Q5,student,1024,0,,4.0,1,thrust::merge,2.0,2.0,GPU X
                Q5,student,4096,0,,2.0,1,thrust::merge,2.0,1.0,GPU X
                Q7,student,4096,0,128x4,9.0,1,,,,GPU X
                Q9,student,1,0,,nan,1,,,,GPU X
                """))
        self.assertEqual(len(ref), 3)  # one time per row key; the copy row is no study
        ratios = TIMING.speed_ratios(student, ref)
        self.assertEqual(set(ratios), {"Q5"})  # Q7's shapes differ: nothing to compare
        self.assertAlmostEqual(ratios["Q5"][0], 2.0)  # (4 / 1 * 2 / 2) ** (1 / 2)
        self.assertEqual(ratios["Q5"][1], 2)
        note = TIMING.speed_note(ratios, "GPU X", ["./part3 crashed"])
        self.assertIn("Q5 2.00", note)
        self.assertIn("no points", note)
        self.assertIn("not timed: ./part3 crashed", note)

    def test_a_missing_or_garbled_csv_times_nothing(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.assertEqual(TIMING.read_timing_csv(Path(tmp) / "none.csv"), {})
            bad = Path(tmp) / "bad.csv"
            bad.write_bytes(b"\xff\xfe garbage")
            self.assertEqual(TIMING.read_timing_csv(bad), {})
        self.assertIn("nothing comparable", TIMING.speed_note({}, "GPU X", []))


class Faults(unittest.TestCase):
    @unittest.skipUnless((CT.LAB / "part1_merge_path" / "reference.cu").exists(), "a student copy has no reference")
    def test_every_planted_fault_applies_to_the_reference(self):
        import faults as F

        reference = F.reference_submission(CT.LAB)
        self.assertEqual(sorted(reference), sorted(MANIFEST))
        self.assertNotIn("reference_search.cuh", "".join(reference.values()))
        questions = CT.all_questions(CT.LAB)
        for fault in F.FAULTS:
            files = F.apply(fault, reference)
            self.assertNotEqual(files, reference, fault.name)
            self.assertTrue(set(fault.expect) <= set(questions), fault.name)
            self.assertTrue(any(v != "full" for v in fault.expect.values()), fault.name)

    @unittest.skipUnless((CT.LAB / "part1_merge_path" / "reference.cu").exists(), "a student copy has no reference")
    def test_every_hostile_submission_hands_in_the_manifest_files(self):
        import faults as F

        skeleton, reference = F.skeleton_submission(CT.LAB), F.reference_submission(CT.LAB)
        for attack in F.ATTACKS:
            files = attack.make(CT.LAB, skeleton, reference)
            self.assertEqual(sorted(files), sorted(MANIFEST), attack.name)
            self.assertNotEqual(files, reference, attack.name)


class Regions(unittest.TestCase):
    @unittest.skipUnless((CT.LAB / "part1_merge_path" / "reference.cu").exists(), "a student copy has no reference")
    def test_skeletons_and_references_differ_only_inside_question_regions(self):
        import regions

        self.assertEqual(regions.problems(CT.LAB), [])

    def test_unbalanced_markers_are_reported(self):
        import regions

        with self.assertRaises(ValueError):
            regions.skeleton_view("x\n// [Q1 begins]\ny\n")
        with self.assertRaises(ValueError):
            regions.skeleton_view("// [Q1 begins]\n// [Q2 ends]\n")
        self.assertEqual(regions.skeleton_view("// head\nint a;\n  // [Q5 begins] --\nbody\n  // [Q5 ends]\n"),
                         ["int a;", "[Q5]"])


@unittest.skipUnless(R, "make release is the instructors' (release.py is not in a student copy)")
class Release(unittest.TestCase):
    def test_instructor_files_and_text_stay_out(self):
        self.assertFalse(R.student_file("part1_merge_path/reference.cu"))
        self.assertFalse(R.student_file("part1_merge_path/reference_search.cuh"))
        self.assertFalse(R.student_file("tests/grading/faults.py"))
        self.assertFalse(R.student_file(".ci/run"))
        self.assertTrue(R.student_file("part1_merge_path/student.cu"))
        self.assertTrue(R.student_file("tests/grading/grade.py"))
        text = "keep\n<!-- instructor-only -->\nsecret\n<!-- /instructor-only -->\nkeep too\n"
        self.assertEqual(R.INSTRUCTOR_TEXT.sub("", text), "keep\nkeep too\n")

    def test_a_repository_ships_only_what_git_tracks(self):
        with tempfile.TemporaryDirectory() as tmp:
            lab = Path(tmp)
            (lab / "part1_merge_path").mkdir()
            (lab / "part1_merge_path" / "student.cu").write_text("// tracked\n")
            (lab / "handout.md").write_text("tracked\n")
            (lab / ".gitignore").write_text("build/\n")
            self.assertEqual(R.lab_files(lab), [".gitignore", "handout.md", "part1_merge_path/student.cu"])  # no repository: all
            quiet = {"cwd": lab, "check": True, "capture_output": True}
            subprocess.run(["git", "init", "-q"], **quiet)
            subprocess.run(["git", "add", "."], **quiet)
            (lab / "part1_merge_path" / "my_solution.cu").write_text("// a scratch file\n")
            (lab / "build").mkdir()
            (lab / "build" / "x.o").write_text("")
            with contextlib.redirect_stdout(io.StringIO()) as said:
                files = R.lab_files(lab)
            self.assertEqual(files, [".gitignore", "handout.md", "part1_merge_path/student.cu"])
            self.assertIn("left out 1 file(s) git does not track: part1_merge_path/my_solution.cu", said.getvalue())

    def test_the_student_copy_gives_no_answer_away(self):
        if not (CT.LAB / "part1_merge_path" / "reference.cu").exists():
            self.skipTest("this is a student copy already (make release checks it for leaks)")
        with tempfile.TemporaryDirectory() as tmp:
            target = R.write_release(CT.LAB, Path(tmp))
            self.assertEqual(R.leaks(target, CT.LAB), [])  # the check by shape included
            self.assertFalse((target / "TUNING.md").exists())
            self.assertFalse(any((target / "results").glob("*/*")))
            self.assertTrue((target / "results" / "bench.py").exists())

    def test_planted_answers_are_found(self):
        with tempfile.TemporaryDirectory() as tmp:
            lab = Path(tmp)
            (lab / "results" / "gpu").mkdir(parents=True)
            (lab / "results" / "gpu" / "q7.png").write_bytes(b"png")
            (lab / "a.cpp").write_text("int s(const int* B, int k, int lo, int hi) {\n"
                                       "  while (lo < hi) { int mid = lo + (hi - lo) / 2; if (B[k - 1 - mid] < 3) hi = mid; }\n"
                                       "  return lo; }\n")
            (lab / "b.cu").write_text("int p(int i, int size) { return i ^ (size - 1); }\n")
            (lab / "c.cpp").write_text('// lo + (hi - lo) / 2 and B[k - 1 - i] in a comment\n'
                                       'const char* t = "i ^ (size - 1)";\n')
            found = R.leaks(lab)
            self.assertEqual(len(found), 3, found)
            self.assertTrue(any(f.startswith("a.cpp: a diagonal search") for f in found))
            self.assertTrue(any(f.startswith("b.cu: the bitonic network") for f in found))
        self.assertFalse(R.student_file("TUNING.md"))
        self.assertFalse(R.student_file("results/nvidia-h200/q7.png"))

    @unittest.skipUnless((HERE / "reference_leaked_bench_peers.cu.txt").exists(), "a student copy has no reference")
    def test_the_naive_merge_sort_that_once_shipped_is_found_by_its_shape(self):
        # part3_merge_sort/bench_peers.cu as it shipped with the naive GPU merges:
        # the searches by formula missed it; its merge sort's pass repeats three
        # statements of Q6's region (SortPass::mergeOf) in a row.
        old = (HERE / "reference_leaked_bench_peers.cu.txt").read_text()
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp)
            (copy / "part3_merge_sort").mkdir()
            (copy / "part3_merge_sort" / "bench_peers.cu").write_text(old)
            self.assertEqual(R.leaks(copy), [])
            found = R.leaks(copy, CT.LAB)
        line = 1 + old[:old.index("const long long start")].count("\n")
        self.assertEqual(len(found), 1, found)
        self.assertTrue(found[0].startswith(f"part3_merge_sort/bench_peers.cu:{line}-{line + 1}: 3 statements"), found)
        self.assertIn("question region Q6 of part3_merge_sort/reference.cu", found[0])

    def test_a_region_renamed_and_reformatted_is_found_and_two_statements_are_not(self):
        # A made-up region (no answer of the lab's), in a made-up instructor file.
        region = ("int f(float* w, int base, int step, int lane, int total, float scale) {\n"
                  "    // [Q9 begins] ---\n"
                  "    const int left = base + step * (2 * lane);  // the pair's first\n"
                  "    const int right = min(left + step, total - 1);\n"
                  "    w[left] = w[left] * scale + w[right] * (1 - scale);\n"
                  "    return left;\n"
                  "    // [Q9 ends] ---\n"
                  "}\n")
        shipped = {
            # one line, other names and types, a comment, two declarations in one
            "renamed.cu": "#include <x>\n\nvoid g() {\n  long a = b + c * (2 * d) /* x */, e = std::min(a + c, n - 1); "
                          "v[a] = v[a]*k + v[e]*(1 - k); }\n",
            # in a Python string, as a test's snippet would be
            "snippet.py": 'CODE = """\nint l = b + s * (2 * x);\nint r = min(l + s, t - 1);\n"""\n'
                          'MORE = "w[l] = w[l] * k + w[r] * (1 - k);\\n"\n',
            # two of the three statements, then others
            "two.cu": "int a = b + c * (2 * d);\nint e = min(a + c, n - 1);\nw[e] = 0;\nreturn a * a + e * e;\n",
        }
        with tempfile.TemporaryDirectory() as tmp:
            lab, copy = Path(tmp) / "lab", Path(tmp) / "copy"
            (lab / "p").mkdir(parents=True)
            copy.mkdir()
            (lab / "p" / "reference_x.cu").write_text(region)
            for name, text in shipped.items():
                (copy / name).write_text(text)
            found = R.shape_leaks(copy, lab)
        self.assertEqual(len(found), 2, found)
        self.assertTrue(found[0].startswith("renamed.cu:4-4: 3 statements in a row shaped as in question region Q9 "
                                            "of p/reference_x.cu (its lines 3-5)"), found)
        self.assertTrue(found[1].startswith("snippet.py:2-5: 3 statements"), found)


# ---------------------------------------------------------------- Gradescope


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


class ExactPoints(unittest.TestCase):
    def test_shares_add_up_to_the_points_exactly(self):
        self.assertEqual(JUDGE.split_cents(6, {str(i): 1 for i in range(7)}),
                         {"0": 86, "1": 86, "2": 86, "3": 86, "4": 86, "5": 85, "6": 85})
        self.assertEqual(JUDGE.split_cents(3, {"skeleton passes": 0, "a": 1, "b": 2}),
                         {"skeleton passes": 0, "a": 100, "b": 200})
        self.assertEqual(JUDGE.split_cents(1, {}), {})
        for q in CT.all_questions(CT.LAB).values():
            shares = JUDGE.QuestionResult(q, {}).test_cents()
            self.assertEqual(sum(share for _, share in shares.values()), round(q.points * 100), q.qid)
            total = sum(q.weights.values())
            for name, (_, share) in shares.items():  # each within a hundredth of its exact share
                self.assertLess(abs(share - 100 * q.points * q.weights[name] / total), 1, name)

    def test_a_graded_results_json_for_gradescope(self):
        # The GPU path's writer, on a made-up grading: some tests passed, one
        # failed, one not graded, a sanitizer error, a part that does not build.
        questions = CT.all_questions(CT.LAB)
        results = [JUDGE.QuestionResult(q, {}) for q in questions.values()]
        q1, q2, q5 = (results[list(questions).index(qid)] for qid in ("Q1", "Q2", "Q5"))
        names = [c.name for c in q1.question.tests if q1.question.weights[c.name]]
        q1.outcomes = {n: REP.Outcome("passed") for n in names}
        q1.outcomes[names[-1]] = REP.Outcome("failed", "wrong results: index 3")
        q2.outcomes = {c.name: REP.Outcome("passed") for c in q2.question.tests}
        large = next(c.name for c in q2.question.tests if c.large)
        q2.outcomes[large] = REP.Outcome("not-graded", "not graded: the [large] tier is off (NO_LARGE=1)")
        q2.sanitizer = "racecheck reported 1 error in Q2's tests (logs/Q2-racecheck.log)"
        q5.build_error = "student.cu:3: error: expected ';'"
        data = OUT.results_json(results, ["a note"], 7, report="report.md and 1 figure", seconds=75.4)
        gradescope_fields(self, data)
        self.assertEqual(data["execution_time"], 75)
        rows = {row["name"]: row for row in data["tests"]}
        self.assertEqual(rows[f"Q1 {names[0]}"]["status"], "passed")
        self.assertEqual(rows[f"Q1 {names[-1]}"]["status"], "failed")
        self.assertNotIn("status", rows[f"Q2 {large}"])  # neither passed nor failed
        self.assertEqual(rows["Q2 compute-sanitizer"]["status"], "failed")
        self.assertTrue(all(row["status"] == "failed" and "does not compile" in row["output"]
                            for name, row in rows.items() if name.startswith("Q5 ")))
        asked = ", ".join(q for q, question in questions.items() if question.report_points)
        report = rows[f"Report ({asked}): graded by a person, not here"]
        self.assertEqual((report["status"], report["max_score"]), ("passed", 0))
        self.assertIn("report.md and 1 figure", report["output"])
        # the rows of a question add up to its score, exactly
        self.assertEqual(sum(Fraction(str(row["score"])) for n, row in rows.items() if n.startswith("Q1 ")),
                         Fraction(str(q1.score)))
        self.assertEqual(data["score"], round(sum(r.score for r in results), 4))
        none = OUT.results_json(results, [], 7)
        self.assertEqual(none["tests"][-1]["status"], "failed")
        self.assertIn("none handed in", none["tests"][-1]["output"])


class GpuListed(unittest.TestCase):
    def listed(self, script: str):
        with tempfile.TemporaryDirectory() as tmp:
            smi = Path(tmp) / "nvidia-smi"
            smi.write_text("#!/bin/sh\n" + script)
            smi.chmod(0o755)
            with mock.patch.dict(os.environ, {"PATH": f"{tmp}:{os.environ['PATH']}"}):
                return GPUS.gpu_listed()

    def test_nvidia_smi_is_asked_before_anything_is_built(self):
        self.assertEqual(self.listed("echo 'GPU 0: NVIDIA H200 (UUID: GPU-aaaa)'"),
                         (True, "GPU 0: NVIDIA H200 (UUID: GPU-aaaa)"))
        ok, why = self.listed("echo 'NVIDIA-SMI has failed because it could not communicate with the driver' >&2\n"
                              "exit 9")
        self.assertFalse(ok)
        self.assertIn("could not communicate with the driver", why)
        with mock.patch.object(shutil, "which", return_value=None):
            self.assertEqual(GPUS.gpu_listed(), (False, "no NVIDIA driver: nvidia-smi is not installed"))


class AutograderRouting(unittest.TestCase):
    """cmd_autograder's choice, without a GPU: where one is listed it grades
    through make grade's own path (grade_probed); where the autograder
    fails, the student still gets a results.json that says so."""

    def run_autograder(self, root: Path, **patches) -> int:
        with mock.patch.multiple(GS, say=mock.DEFAULT, **patches):
            return G.main(["autograder", "--root", str(root)])

    def layout(self, tmp: str) -> Path:
        root = Path(tmp)
        (root / "submission").mkdir()
        (root / "submission" / "report.md").write_text("# my report\n")
        return root

    def test_with_a_gpu_it_grades_as_make_grade_does(self):
        seen = {}

        def grade_probed(submission, out, base, opts, student, gpu, gpu_env):
            seen.update(submission=submission, base=base, gpu=gpu, gpu_env=gpu_env)
            results = [JUDGE.QuestionResult(q, {}) for q in CT.all_questions(CT.LAB).values()]
            OUT.write_outputs(out, student, results, [], opts.seed, report=OUT.take_report(submission, out), seconds=3)
            return 0

        with tempfile.TemporaryDirectory() as tmp:
            root = self.layout(tmp)
            real_which = shutil.which

            def which(tool, *args, **kwargs):  # a CUDA toolkit for the autograder's own question only
                return "/usr/local/cuda/bin/nvcc" if tool == "nvcc" and not args and not kwargs \
                    else real_which(tool, *args, **kwargs)

            with mock.patch.object(shutil, "which", side_effect=which), \
                    mock.patch.object(OPT.Options, "unsandboxed", return_value=""):
                status = self.run_autograder(root, gpu_listed=lambda: (True, "GPU 0: NVIDIA H200"),
                                             prepare_base=lambda base, opts, log: base,
                                             probe_held=lambda base, env, opts: (True, "GPU: NVIDIA H200", 1),
                                             visible_gpus=lambda: [("0", "GPU-autograder-test")],
                                             grade_probed=grade_probed)
            data = json.loads((root / "results" / "results.json").read_text())
            self.assertTrue((root / "results" / "lab" / "report" / "report.md").is_file())
        self.assertEqual(status, 0)
        self.assertEqual((seen["submission"], seen["base"], seen["gpu"]),
                         (root / "submission", root / "lab-base", "GPU: NVIDIA H200"))
        self.assertEqual(seen["gpu_env"], {"CUDA_VISIBLE_DEVICES": "0"})  # the GPU it holds (lease)
        gradescope_fields(self, data)
        self.assertNotIn(OUT.PROVISIONAL, data["output"])
        self.assertEqual(data["tests"][-1]["status"], "passed")

    def test_an_autograder_that_fails_says_so_and_acknowledges_the_report(self):
        def broken(*args, **kwargs):
            raise OSError("no space left on device")

        with tempfile.TemporaryDirectory() as tmp:
            root = self.layout(tmp)
            status = self.run_autograder(root, gpu_listed=lambda: (False, "no NVIDIA driver"),
                                         prepare_emulated_base=broken)
            data = json.loads((root / "results" / "results.json").read_text())
        self.assertEqual(status, 3)
        self.assertEqual(data["score"], 0)
        self.assertIn("could not check this submission (no space left on device)", data["output"])
        self.assertIn("report: report.md", data["output"])
        self.assertEqual(data["tests"][-1]["status"], "passed")


class GradescopeEmulated(unittest.TestCase):
    """make gradescope's zip in Gradescope's layout, in a temporary root
    (AUTOGRADER_ROOT), without a GPU: setup.sh (installing nothing) builds the
    emulated base once, then run_autograder gives each submission provisional
    feedback. Part 1 only, to keep it short (a full emulated run takes a few
    minutes of build and tests on 2 cores)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.root = Path(cls.tmp.name) / "autograder"
        source = cls.root / "source"
        source.mkdir(parents=True)
        archive = Path(cls.tmp.name) / "autograder.zip"
        with mock.patch.object(GS, "say"):
            G.main(["gradescope", "--out", str(archive)])
        zipfile.ZipFile(archive).extractall(source)
        cls.env = {**os.environ, "AUTOGRADER_ROOT": str(cls.root), "AUTOGRADER_NO_INSTALL": "1"}
        cls.env.pop("MAKEFLAGS", None)
        cls.setup = subprocess.run(["bash", str(source / "setup.sh"), "--parts", "part1", "--gpu-base", "0"],
                                   env=cls.env, capture_output=True, text=True, timeout=1800)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def submit(self, files: dict[str, bytes]) -> tuple[dict, str]:
        self.assertEqual(self.setup.returncode, 0, self.setup.stdout[-2000:] + self.setup.stderr[-2000:])
        submission = self.root / "submission"
        shutil.rmtree(submission, ignore_errors=True)
        for rel, content in files.items():
            (submission / rel).parent.mkdir(parents=True, exist_ok=True)
            (submission / rel).write_bytes(content)
        run = subprocess.run(["bash", str(self.root / "source" / "run_autograder"), "--parts", "part1",
                              "--feedback-only", "1"], cwd=self.root, env=self.env, capture_output=True, text=True,
                             timeout=1800)
        self.assertEqual(run.returncode, 0, run.stdout[-2000:] + run.stderr[-2000:])
        data = json.loads((self.root / "results" / "results.json").read_text())
        gradescope_fields(self, data)
        self.assertEqual(data["score"], 0)
        self.assertTrue(all(row["score"] == 0 for row in data["tests"]))
        self.assertTrue(data["output"].startswith(OUT.PROVISIONAL))
        self.assertIn("is not your grade: your grade comes from a grading of your final submission on a GPU after "
                      "the deadline", data["output"])
        return data, run.stdout

    def rows(self, data: dict) -> dict[str, dict]:
        return {row["name"].split(" ")[0]: row for row in data["tests"]}

    # Only where the lab's student.cu is the skeleton for sure: in a student's
    # own copy it may be solved (the GitHub workflow runs these tests there).
    @unittest.skipUnless((CT.LAB / "part1_merge_path" / "reference.cu").exists(), "a student copy's student.cu may be solved")
    def test_the_untouched_skeleton_and_a_report(self):
        skeleton = (CT.LAB / "part1_merge_path" / "student.cu").read_bytes()
        data, _ = self.submit({"lab/part1_merge_path/student.cu": skeleton,
                               "lab/report.md": b"# Report\n\n![grid](fig/grid.png)\n", "lab/fig/grid.png": b"png"})
        rows = self.rows(data)
        self.assertEqual(rows["Q1"]["status"], "failed")
        q1 = CT.all_questions(CT.LAB)["Q1"]
        emulated = [c for c in q1.tests if not c.large]
        passed = sum(q1.weights[c.name] == 0 for c in emulated)  # the argument refusals: given code
        self.assertEqual(rows["Q1"]["name"], f"Q1 {q1.title}: {passed}/{len(emulated)} pass emulated (provisional)")
        self.assertIn("First failure: ", rows["Q1"]["output"])
        self.assertIn("  passed  mergeSmallMany refuses bad sizes and counts", rows["Q2"]["output"])
        self.assertIn("Not emulated: 1 test past 2^31 elements", rows["Q2"]["output"])
        self.assertNotIn("status", rows["Q3"])  # Part 2: not checked in this run
        self.assertEqual(rows["Report"]["status"], "passed")
        self.assertIn("report: report.md and 1 figure", data["output"])
        self.assertEqual((self.root / "results" / "lab" / "report" / "fig" / "grid.png").read_bytes(), b"png")

    @unittest.skipUnless((CT.LAB / "part1_merge_path" / "reference.cu").exists(), "a student copy has no reference")
    def test_the_reference_handed_in_as_a_students_files(self):
        import faults as F

        files = {rel: text.encode() for rel, text in F.reference_submission(CT.LAB).items()}
        data, _ = self.submit({**files, "report.pdf": b"%PDF-1.4\n"})
        rows = self.rows(data)
        for qid in ("Q1", "Q2"):
            self.assertEqual(rows[qid]["status"], "passed", rows[qid]["output"])
            self.assertNotIn("FAILED", rows[qid]["output"])
        self.assertIn("tests pass on the CPU emulator", rows["Q1"]["output"])
        self.assertEqual(rows["Report"]["status"], "passed")
        self.assertIn("report: report.pdf", data["output"])

    def test_a_part_that_does_not_compile_and_no_report(self):
        skeleton = (CT.LAB / "part1_merge_path" / "student.cu").read_text()
        data, _ = self.submit({"part1_merge_path/student.cu": (skeleton + "\nint broken(\n").encode()})
        rows = self.rows(data)
        self.assertEqual(rows["Q1"]["status"], "failed")
        self.assertIn("Does not compile for the emulator (g++):", rows["Q1"]["output"])
        self.assertIn("student.cu", rows["Q1"]["output"])
        self.assertEqual(rows["Report"]["status"], "failed")
        self.assertIn("report: none handed in", data["output"])


class Scores(unittest.TestCase):
    def test_scores_csv_matches_the_roster_by_submission_email_or_sid(self):
        questions = list(CT.all_questions(CT.LAB).values())
        full = [JUDGE.QuestionResult(q, {c.name: REP.Outcome("passed") for c in q.tests}) for q in questions]
        with tempfile.TemporaryDirectory() as tmp:
            grades = Path(tmp)
            records = BOOK.Records(grades)
            q1_only = full[:1] + [JUDGE.QuestionResult(q, {}) for q in questions[1:]]
            for student, results in (("submission_11", full), ("Bob@Uni.edu", q1_only)):
                records.add({"student": student, "score": round(sum(r.score for r in results), 4),
                             "gradebook": OUT.gradebook_line(student, results, 1, [])})
            roster = grades / "roster.csv"
            roster.write_text("First Name,Last Name,SID,Email,Submission\n"
                              "Ann,Lee,111,ann@uni.edu,submission_11\n"
                              "Ben,Lee,112,ben@uni.edu,submission_11\n"  # a group of two
                              "Bob,Ray,113,bob@uni.edu,\n"
                              "Cy,Ng,114,cy@uni.edu,\n")
            students = [("submission_11", None), ("Bob@Uni.edu", None), ("dan", None)]
            with mock.patch.object(BOOK, "say") as said:
                BOOK.write_gradebook(grades, students, records.records, roster=roster)
            rows = list(csv.reader((grades / "scores.csv").read_text().splitlines()))
            self.assertEqual(rows[0], BOOK.SCORES_HEADER)
            top, most = f"{sum(r.score for r in full):g}", f"{BOOK.max_points(questions):g}"
            q1 = f"{questions[0].points:g}"
            self.assertEqual(rows[1:], [["Ann Lee", "ann@uni.edu", "111", top, most, "submission_11"],
                                        ["Ben Lee", "ben@uni.edu", "112", top, most, "submission_11"],
                                        ["Bob Ray", "bob@uni.edu", "113", q1, most, "Bob@Uni.edu"],
                                        ["Cy Ng", "cy@uni.edu", "114", "", most, ""],
                                        ["dan", "", "", "", most, "dan"]])
            warnings = " ".join(c.args[0] for c in said.call_args_list)
            self.assertIn("no submission for Cy Ng", warnings)
            self.assertIn("dan: not in the roster", warnings)
            # the same from the gradebook alone, afterwards (scores)
            (grades / "scores.csv").unlink()
            with mock.patch.object(BOOK, "say"):
                self.assertEqual(G.main(["scores", "--gradebook", str(grades / "gradebook.csv"), "--roster",
                                         str(roster)]), 0)
            self.assertEqual(list(csv.reader((grades / "scores.csv").read_text().splitlines())), rows)
            # without a roster: a row per submission, the email where the name is one
            with mock.patch.object(BOOK, "say"):
                G.main(["scores", "--gradebook", str(grades / "gradebook.csv"), "--csv", str(grades / "plain.csv")])
            plain = list(csv.reader((grades / "plain.csv").read_text().splitlines()))
            self.assertEqual(plain[2], ["Bob@Uni.edu", "Bob@Uni.edu", "", q1, most, "Bob@Uni.edu"])
            self.assertEqual(plain[3][3], "")  # dan: not graded, no score rather than 0

    def test_a_roster_without_email_sid_or_submission_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            roster = Path(tmp) / "roster.csv"
            roster.write_text("Student,Grade\nann,1\n")
            with self.assertRaises(CT.GradingError):
                BOOK.read_roster(roster)


CI_SUMMARY = CT.LAB / ".ci" / "summary.py"


@unittest.skipUnless(CI_SUMMARY.exists(), "the lab's CI (.ci/) is not in the student copy")
class CiSummary(unittest.TestCase):
    """CI reads the last line of .ci/run as the count of tests it ran: a made-up
    run's logs go through .ci/summary.py as .ci/run sends them, and no line but
    the last may read as a count."""
    LOOKS_LIKE_A_COUNT = re.compile(r"^(\w+: )?[0-9]+ passed, [0-9]+ failed")

    def summary(self, *args):
        r = subprocess.run([sys.executable, str(CI_SUMMARY), *map(str, args)], capture_output=True, text=True,
                           env={"PATH": os.environ["PATH"]})
        return r.returncode, r.stdout.splitlines()

    def test_only_the_last_line_reads_as_a_count_and_it_adds_up_the_programs(self):
        with tempfile.TemporaryDirectory() as tmp:
            tests, emulated, broken = Path(tmp) / "make-test.log", Path(tmp) / "emulated.log", Path(tmp) / "b.log"
            tests.write_text("==> build/test_common\nAll tests passed\n12 passed, 0 failed, 1 skipped\n"
                             "==> build/test_tuned\nNo tests ran\n0 passed, 0 failed\n"
                             "==> the grading harness's own tests\n121 passed, 1 failed, 1 skipped\n")
            emulated.write_text("test_tuned: 0 passed, 0 failed\n7 passed, 2 failed\n")
            broken.write_text("".join(f"line {i}\n" for i in range(100)) +
                              "3 passed, 1 failed\nworkflow: 0 passed, 0 failed\nmake: *** Error 2\n")
            printed = []
            for name, rc, log in (("make-test", 0, tests), ("emulated", 0, emulated), ("release", 2, broken)):
                status, lines = self.summary("step", name, rc, 75, log, "what the step checks")
                self.assertEqual(status, 0)
                printed += lines
            status, lines = self.summary("total", tests, emulated)
            printed += lines
        self.assertEqual(status, 0)
        self.assertIn("CI   1m15s  release: what the step checks: FAILED (exit 2)", printed)
        self.assertIn("  | make: *** Error 2", printed)  # a failed step's tail is shown ...
        self.assertNotIn("  | line 5", printed)  # ... its last lines only
        counts = [line for line in printed[:-1] if self.LOOKS_LIKE_A_COUNT.match(line)]
        self.assertEqual(counts, [], "a line before the last reads as a count of tests")
        self.assertEqual(printed[-1], "tests: 140 passed, 3 failed, 2 skipped")
        self.assertEqual(len([line for line in printed if re.search(r"[0-9]+ passed, [0-9]+ failed", line)]), 1)

    def test_logs_without_a_count_say_so_in_words_and_fail(self):
        with tempfile.TemporaryDirectory() as tmp:
            log = Path(tmp) / "make-test.log"
            log.write_text("make: *** [Makefile:363: test] Error 2\n")
            status, lines = self.summary("total", log)
        self.assertEqual(status, 1)
        self.assertEqual(len(lines), 1)
        self.assertIn("no test ran", lines[0])
        self.assertNotRegex(lines[0], r"[0-9]+ passed")


ObjectProblems = test_symbols.ObjectProblems  # the link-time checks' own tests (symbols.py) run here too


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=1).result
    failed = len(result.failures) + len(result.errors)
    skipped = len(result.skipped)
    if result.testsRun == 0:  # said in words: a count of zero reads as a run that passed
        print("no tests here: none of the harness's tests matches " + " ".join(sys.argv[1:]))
        sys.exit(1)
    print(f"{result.testsRun - failed - skipped} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    sys.exit(1 if failed else 0)
