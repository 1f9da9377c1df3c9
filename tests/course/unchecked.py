#!/usr/bin/env python3
"""What `make test` could not check here: called after the graders with the
reports they wrote (LAB_REPORT), it names the tests that did not run (no GPU)
and says once how many code points they carry, by the points tables.

    python3 -m tests.course.unchecked build/reports/*.jsonl
"""
from __future__ import annotations

import sys
from pathlib import Path

from tests.grading.harness.course_table import LAB, questions_of_run
from tests.grading.harness.judging import QuestionResult
from tests.grading.harness.reports import read_report_ends


def read_reports(reports: list[Path]) -> tuple[dict[str, str], set[str]]:
    """(test name -> why it did not run, every test name that ran) over the reports."""
    ends = {name: end for path in reports for name, end in read_report_ends(path).items()}
    return {name: end.message for name, end in ends.items() if end.status == "skipped"}, set(ends)


def _points(names: set[str], questions) -> tuple[float, float, list[str]]:
    """(code points, bonus points, "Q1: 4 of its 6 tests" per question) the named tests carry."""
    code = bonus = 0.0
    per = []
    for q in questions:
        shares = QuestionResult(q, {}).test_points()
        missed = [n for n in q.weights if n in names]
        points = sum(shares[n][1] for n in missed)
        code, bonus = (code, bonus + points) if q.bonus else (code + points, bonus)
        if missed:
            per.append(f"{q.qid}: {len(missed)} of its {len(q.tests)} tests")
    return round(code, 2), round(bonus, 2), per


def summary(skipped: dict[str, str], seen: set[str], lab: Path = LAB) -> str:
    """The tests that did not run and the points they carry, plus the [large]
    tier of the parts that ran (hidden: make test never runs it)."""
    questions = [q for q in questions_of_run(lab, seen).values() if any(c.name in seen for c in q.tests)]
    code_max = sum(q.points for q in questions if not q.bonus)
    bonus_max = sum(q.points for q in questions if q.bonus)
    lines = []
    if skipped:
        code, bonus, per = _points(set(skipped), questions)
        why = "; ".join(sorted(set(skipped.values())))[:200]
        lines += [f"NOT CHECKED HERE: {len(skipped)} test(s) did not run ({why}).",
                  "  They carry " + " and ".join(
                      ([f"{code:g} of these parts' {code_max:g} code points"] if code_max else []) +
                      ([f"{bonus:g} of their {bonus_max:g} bonus points"] if bonus_max else []))
                  + f" (per question: {', '.join(per) or 'none with points'}).",
                  "  A test that did not run is never counted as passed: a GPU run (or the grading) checks them."]
    large = {c.name for q in questions for c in q.tests if c.large and c.name not in seen}
    if large:
        code, bonus, per = _points(large, questions)
        lines += [f"Not run by make test: the [large] tier, {len(large)} hidden test(s) past 2^31 elements "
                  f"({code:g} code points: {', '.join(per)}), which grading runs. On a GPU with about 17 GB free: "
                  "LAB_LARGE=1 build/student/test_<part> '[large]'."]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    text = summary(*read_reports([Path(a) for a in argv]))
    if text:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
