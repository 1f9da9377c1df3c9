"""Judging: a test case's verdict from its report (a claim) and its results
against the trusted run's (results.py), a question's points split over its
test cases, a question's score and first failure."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from . import results as res
from .reports import Outcome

if TYPE_CHECKING:  # for the annotations only
    from .course_table import Question
    from .reports import Trusted
    from .running import Claims, Grading


def judge(student: Outcome, trusted: Trusted | None, differs: str) -> Outcome:
    """The verdict on one test case: the student's report (a claim) against the
    trusted run of the same test on the same seed (the truth). A pass needs
    both to say passed and the student's results to equal the trusted run's
    (`differs`: "" when they do, else what differs first: results.compare)."""
    if trusted is None:
        return Outcome("not-graded", "not graded: the trusted run did not report this test (a problem of the lab, "
                                     "not of the submission; see logs/trusted-*.log)")
    if trusted.status == "skipped":
        reason = trusted.message if trusted.message.startswith("not graded") else "not graded: " + trusted.message
        return Outcome("not-graded", reason + " (decided by the trusted run)")
    if trusted.status != "passed":
        return Outcome("not-graded", "not graded: the trusted run failed this test (a problem of the lab): " +
                       trusted.message[:300])
    if student.status == "not-graded":
        return Outcome("failed", f"{student.message}, but the trusted run on this GPU ran it: a test that did not "
                                 f"run is never a pass")
    if student.status != "passed":
        return student
    if differs:
        return Outcome("failed", "wrong results: " + differs)
    return Outcome("passed")


def split_cents(points: float, weights: dict[str, float]) -> dict[str, int]:
    """`points` split over `weights` in hundredths of a point: each share
    rounded down, then the hundredths left over go one each to the largest
    remainders (the earlier test on a tie), so that the shares add up to
    exactly `points` (6 points over 7 tests: 0.86 five times and 0.85 twice,
    where shares rounded one by one would add up to 6.02 or 5.95)."""
    cents = round(Fraction(points) * 100)
    total = sum(Fraction(w) for w in weights.values())
    if total <= 0:
        return {name: 0 for name in weights}
    exact = {name: cents * Fraction(w) / total for name, w in weights.items()}
    shares = {name: math.floor(x) for name, x in exact.items()}
    by_remainder = sorted(exact, key=lambda name: shares[name] - exact[name])  # stable: ties keep the tests' order
    for name in by_remainder[: cents - sum(shares.values())]:
        shares[name] += 1
    return shares


@dataclass
class QuestionResult:
    question: Question
    outcomes: dict[str, Outcome]  # test name -> outcome
    sanitizer: str = ""  # what the sanitizer found, "" when clean or not run
    build_error: str = ""

    def test_cents(self) -> dict[str, tuple[int, int]]:
        """(score, max) per test case in hundredths of a point: the question's
        points split by weight over the graded test cases (split_cents); a
        not-graded one is left out of the split."""
        q = self.question
        graded = {n: w for n, w in q.weights.items() if self.outcomes.get(n, Outcome("failed")).status != "not-graded"}
        shares = split_cents(q.points, graded)
        out = {}
        for name in q.weights:
            share = shares.get(name, 0)
            passed = self.outcomes.get(name, Outcome("failed")).status == "passed"
            out[name] = (share if passed else 0, share)
        return out

    def test_points(self) -> dict[str, tuple[float, float]]:
        """test_cents in points."""
        return {name: (score / 100, share / 100) for name, (score, share) in self.test_cents().items()}

    @property
    def score(self) -> float:
        raw = sum(s for s, _ in self.test_cents().values()) / 100
        if self.sanitizer:
            raw *= 1.0 - self.question.sanitizer_penalty
        return round(raw, 4)

    @property
    def first_failure(self) -> str:
        if self.build_error.startswith("not graded"):
            return self.build_error
        if self.build_error:
            return "does not compile: " + self.build_error.splitlines()[0]
        for case in self.question.tests:
            o = self.outcomes.get(case.name)
            if o and o.status == "failed" and self.question.weights[case.name] > 0:
                return f"{case.name}: {o.message}"
        return self.sanitizer

    def counts(self) -> tuple[int, int]:
        weighted = [n for n, w in self.question.weights.items() if w > 0]
        graded = [n for n in weighted if self.outcomes.get(n, Outcome("failed")).status != "not-graded"]
        return sum(self.outcomes.get(n, Outcome("failed")).status == "passed" for n in graded), len(graded)


def judge_cases(g: Grading, results: list[QuestionResult], large: bool, claims: Claims,
                trusted: tuple[dict[str, Trusted], res.Stream]) -> None:
    """Each of the tier's claims judged against the trusted run's: its report
    and what its results differ in (compared as each test ended: run_case)."""
    ends, stream = trusted
    seen: dict[str, Outcome] = {}
    for r in results:
        q = r.question
        for case in q.tests:
            if case.large != large:
                continue
            if case.name not in seen:
                if case.large and not g.opts.large:
                    seen[case.name] = Outcome("not-graded", f"not graded: the [large] tier is {g.opts.large_off}")
                elif case.large and ends.get(case.name) and ends[case.name].status == "skipped":
                    # The lab's probe said the tier fits this GPU; the trusted run must not skip.
                    seen[case.name] = Outcome("not-graded", "not graded, a lab error: the trusted run skipped "
                                                              f"it on a GPU the tier fits ({ends[case.name].message})")
                    g.notes.append(f"lab error, for a person to look at: the trusted run skipped {case.name}")
                elif not stream.tests.get(case.name) and q.weights.get(case.name, 1) > 0 and case.name in ends:
                    seen[case.name] = Outcome("not-graded", "not graded: the trusted run handed over no results "
                                                              "for this test (a problem of the lab)")
                else:
                    claim, differs = claims[case.name]
                    seen[case.name] = judge(claim, ends.get(case.name), differs if claim.status == "passed" else "")
                o = seen[case.name]
                g.log(f"  {g.student}: {q.qid} {case.name}: {o.status}{': ' + o.message[:200] if o.message else ''}")
            r.outcomes[case.name] = seen[case.name]
