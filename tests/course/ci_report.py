#!/usr/bin/env python3
"""What `make test` found, for CI: JUnit XML and a Markdown summary, read from
the reports the test programs wrote (build/reports/ or build/emu/reports/:
LAB_REPORT's <program>.jsonl, the program's output <program>.out and its exit
status <program>.rc; see tests/main.cpp).

    python3 -m tests.course.ci_report junit OUT_DIR [--emulated] REPORT_DIR
    python3 -m tests.course.ci_report summary [--title TITLE] REPORT_DIR...

junit writes one XML file per test program into OUT_DIR (`make test
JUNIT=OUT_DIR` calls it): OUT_DIR/<program>.xml, or <program>-emulated.xml for
an emulated run. Each test case is a <testcase> whose classname is the program
and the question it is tagged with (test_part1.Q1); a test that did not run (no
GPU) is <skipped>, never a pass; a test the program started but never ended (a
crash, a hang, exit()) is an <error>. A program that writes no report (the
emulator's self-test, the harness's own tests) is one test case, passed when it
exited with status 0.

summary prints Markdown (for $GITHUB_STEP_SUMMARY): per question, its tests
passed, failed and not run, and the code points the passing tests would carry
(provisional: only a grading on a GPU gives points); then the first failure of
each failed test.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from tests.grading.harness.course_table import LAB, PARTS, questions_of_run, read_test_cases
from tests.grading.harness.judging import QuestionResult

# The programs `make test` runs that write no report, by what they check.
OWN_CHECKS = {"harness": "the grading harness's own tests", "test_emulator": "the emulator's self-test",
              "idioms": "the idioms against the GPU tools' table"}
OUTPUT_CAP = 200_000  # characters of a program's output kept in its XML (the end)
MESSAGE_CAP = 300  # characters of a failure in the summary
# Terminal colours, and the characters XML 1.0 cannot hold.
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
NOT_XML = re.compile("[^\x09\x0a\x0d\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def clean(text: str) -> str:
    return NOT_XML.sub("", ANSI.sub("", text))


@dataclass
class Case:
    name: str
    status: str  # passed, failed, skipped, error
    message: str = ""


@dataclass
class Program:
    name: str  # the test program, e.g. test_part1
    cases: list[Case] = field(default_factory=list)
    exit_status: int | None = None  # None: no .rc (it did not end)
    finished: bool = False  # its report ends with a summary
    output: str = ""

    def count(self, status: str) -> int:
        return sum(c.status == status for c in self.cases)


def read_program(folder: Path, name: str) -> Program:
    """One program's outcome from its report, output and exit status."""
    prog = Program(name)
    rc = folder / f"{name}.rc"
    try:
        prog.exit_status = int(rc.read_text().strip())
    except (OSError, ValueError):
        pass
    out = folder / f"{name}.out"
    if out.exists():
        prog.output = out.read_text(errors="replace")
    report = folder / f"{name}.jsonl"
    if not report.exists():
        status = "passed" if prog.exit_status == 0 else "failed"
        tail = "\n".join(prog.output.splitlines()[-20:])
        prog.cases.append(Case(OWN_CHECKS.get(name, f"{name}: its own checks"), status,
                               "" if status == "passed" else f"exit status {prog.exit_status}: {tail}"))
        prog.finished = prog.exit_status is not None
        return prog
    open_case = None
    for line in report.read_text(errors="replace").splitlines():
        try:
            e = json.loads(line)
        except json.JSONDecodeError:
            continue
        event = e.get("event")
        if event == "start":
            open_case = str(e.get("test"))
        elif event == "end":
            status = str(e.get("status"))
            message = e.get("reason") if status == "skipped" else e.get("failure")
            if e.get("trace"):
                message = f"{message or ''} (launch trace: {e['trace']})".strip()
            prog.cases.append(Case(str(e.get("test")), status if status in ("passed", "failed", "skipped") else "error",
                                   str(message or "")))
            open_case = None
        elif event == "summary":
            prog.finished = True
    if open_case is not None:
        how = "was stopped" if prog.exit_status is None else f"ended with status {prog.exit_status}"
        prog.cases.append(Case(open_case, "error",
                               f"the program {how} during this test (a crash, a hang or exit() in the code under test)"))
    elif not prog.finished:
        prog.cases.append(Case(f"{name} (the run)", "error", "the program ended without its summary line"))
    return prog


def read_programs(folder: Path) -> list[Program]:
    """Every program that left an exit status or a report in `folder`."""
    names = sorted({p.stem for p in folder.glob("*.rc")} | {p.stem for p in folder.glob("*.jsonl")})
    return [read_program(folder, n) for n in names]


def questions_of(lab: Path = LAB) -> dict[str, list[str]]:
    """Test name -> the questions it is tagged with, over every part's graders."""
    out: dict[str, list[str]] = {}
    for part, _ in PARTS:
        for case in read_test_cases(lab, part, emulated=True):
            out[case.name] = case.questions
    return out


# ---------------------------------------------------------------- JUnit

def junit(prog: Program, tagged: dict[str, list[str]], emulated: bool) -> ET.ElementTree:
    suite_name = prog.name + (" (emulated)" if emulated else "")
    suite = ET.Element("testsuite", name=suite_name, tests=str(len(prog.cases)),
                       failures=str(prog.count("failed")), errors=str(prog.count("error")),
                       skipped=str(prog.count("skipped")))
    for case in prog.cases:
        classname = ".".join([prog.name, *tagged.get(case.name, [])])
        tc = ET.SubElement(suite, "testcase", classname=classname, name=clean(case.name))
        if case.status == "failed":
            ET.SubElement(tc, "failure", message=clean(case.message)[:2000]).text = clean(case.message)
        elif case.status == "error":
            ET.SubElement(tc, "error", message=clean(case.message)[:2000]).text = clean(case.message)
        elif case.status == "skipped":
            ET.SubElement(tc, "skipped", message=clean(case.message)[:2000])
    ET.SubElement(suite, "system-out").text = clean(prog.output[-OUTPUT_CAP:])
    root = ET.Element("testsuites", name=suite_name, tests=suite.get("tests"), failures=suite.get("failures"),
                      errors=suite.get("errors"), skipped=suite.get("skipped"))
    root.append(suite)
    ET.indent(root)
    return ET.ElementTree(root)


def write_junit(out_dir: Path, folder: Path, emulated: bool) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    tagged = questions_of()
    written = []
    for prog in read_programs(folder):
        path = out_dir / f"{prog.name}{'-emulated' if emulated else ''}.xml"
        junit(prog, tagged, emulated).write(path, encoding="utf-8", xml_declaration=True)
        written.append(path)
    return written


# ---------------------------------------------------------------- Markdown

def cell(text: str) -> str:
    """Text for a Markdown table cell or list item: one line, no table syntax."""
    return " ".join(clean(text).split()).replace("|", "\\|").replace("<", "&lt;")


def summary(folders: list[Path], title: str, lab: Path = LAB) -> str:
    programs = [p for f in folders for p in read_programs(f)]
    lines = [f"## {title}", ""]
    if not programs:
        return "\n".join(lines + ["No test reports: the tests did not build or did not run (see the step's log).", ""])
    totals = {s: sum(p.count(s) for p in programs) for s in ("passed", "failed", "error", "skipped")}
    if not any(totals.values()):
        return "\n".join(lines + [f"No tests here: {len(programs)} test programs ran no test case.", ""])
    lines.append(f"{len(programs)} test programs: {totals['passed']} passed, {totals['failed'] + totals['error']} "
                 f"failed" + (f", {totals['skipped']} not run" if totals["skipped"] else "") + ".")
    lines.append("")
    outcomes = {c.name: c for p in programs for c in p.cases}
    questions = [q for q in questions_of_run(lab, outcomes).values() if any(n in outcomes for n in q.weights)]
    if questions:
        lines += ["| Question | | Tests passed | Failed | Not run | Code points of the tests passed |",
                  "|---|---|---|---|---|---|"]
        for q in questions:
            cases = [outcomes.get(n) for n in q.weights]
            passed = sum(c is not None and c.status == "passed" for c in cases)
            failed = sum(c is not None and c.status in ("failed", "error") for c in cases)
            not_run = len(cases) - passed - failed
            shares = QuestionResult(q, {}).test_points()  # every test case's share of the points
            points = sum(shares[n][1] for n in q.weights if n in outcomes and outcomes[n].status == "passed")
            mark = "❌" if failed else ("✅" if passed else "⏭️")
            lines.append(f"| {mark} {q.qid} | {cell(q.title)} | {passed} of {len(cases)} | {failed} | {not_run} | "
                         f"{round(points, 2):g} of {q.points:g}{' (bonus)' if q.bonus else ''} |")
        lines += ["", "Provisional: only a grading on a GPU (`make grade`) gives points. Not run: tests that need a "
                  "GPU where there is none, and the hidden [large] tier (past 2^31 elements), which only grading "
                  "runs; a test that did not run is never counted as passed.", ""]
    graded = {n for q in questions for n in q.weights}
    others = [p for p in programs if not any(c.name in graded for c in p.cases)]
    for p in others:
        if not p.cases:  # said in words: a count of zero tests reads as a run that passed
            lines.append(f"- ⚠️ `{p.name}`: no tests here (the program ran no test case)")
            continue
        mark = "❌" if p.count("failed") + p.count("error") else "✅"
        lines.append(f"- {mark} `{p.name}`: {p.count('passed')} passed, {p.count('failed') + p.count('error')} failed"
                     + (f", {p.count('skipped')} not run" if p.count("skipped") else ""))
    if others:
        lines.append("")
    failures = [(p.name, c) for p in programs for c in p.cases if c.status in ("failed", "error")]
    if failures:
        lines += ["<details><summary>Failed tests, with their first failure</summary>", ""]
        for name, c in failures:
            message = cell(c.message)
            message = message[:MESSAGE_CAP] + ("…" if len(message) > MESSAGE_CAP else "")
            lines.append(f"- `{name}`: **{cell(c.name)}**: {message}")
        lines += ["", "</details>", ""]
    skips = sorted({cell(c.message) for p in programs for c in p.cases if c.status == "skipped"})
    if skips:
        lines += ["Not run here: " + "; ".join(skips)[:MESSAGE_CAP], ""]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    j = sub.add_parser("junit", help="one JUnit XML file per test program")
    j.add_argument("out_dir", type=Path)
    j.add_argument("reports", type=Path, help="the folder the test programs' reports are in")
    j.add_argument("--emulated", action="store_true", help="an emulated run (EMULATE=1)")
    s = sub.add_parser("summary", help="Markdown, per question")
    s.add_argument("reports", type=Path, nargs="+")
    s.add_argument("--title", default="make test")
    args = p.parse_args(argv)
    if args.command == "junit":
        written = write_junit(args.out_dir, args.reports, args.emulated)
        print(f"JUnit XML: {len(written)} file(s) in {args.out_dir}")
        return 0
    print(summary(args.reports, args.title))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
