"""The course table as the harness reads it: parts, questions with their
points, time limits and sanitizer penalties, the test cases of each part's
grader (read from its source) with their weights, the student files and
documents. The table itself is course.py's."""

from __future__ import annotations

from ...course import table as course
import re
from dataclasses import dataclass, field
from pathlib import Path


GRADING = Path(__file__).resolve().parents[1]  # tests/grading: grade.py, the Gradescope scripts
LAB = GRADING.parents[1]


def read_parts(lab: Path) -> list[tuple[str, str]]:
    """(name, folder) of every part, in order: the course table's (course.py)."""
    return [(p.name, p.folder) for p in course.load(lab).parts]


PARTS = read_parts(LAB)


class GradingError(Exception):
    """A problem with the harness's own inputs (options, lab files): exit non-zero."""


@dataclass
class TestCase:
    part: str
    name: str
    tags: list[str]
    questions: list[str]

    @property
    def large(self) -> bool:
        return "large" in self.tags

    @property
    def emulated(self) -> bool:
        """Built only for the emulator (#ifdef LAB_EMULATED): the sparse runs
        past 2^31 that stand in for the [large] tier there; never on a GPU."""
        return "emulated" in self.tags


@dataclass
class Question:
    """A question of the course table (table.Question: its points, limits,
    titles and trace rules) with the test cases of its part's grader, their
    weights and their own time limits: the one model of a question, as
    grading sees it."""
    table: course.Question
    tests: list[TestCase] = field(default_factory=list)
    weights: dict[str, float] = field(default_factory=dict)
    timeouts: dict[str, float] = field(default_factory=dict)  # a test case's own time limit, where it has one

    qid = property(lambda self: self.table.qid)
    part = property(lambda self: self.table.part)
    title = property(lambda self: self.table.title)
    sanitizer_penalty = property(lambda self: self.table.sanitizer_penalty)
    bonus = property(lambda self: self.table.bonus)  # adds to the score but not to the maximum (the extras)
    points = property(lambda self: float(self.table.points))
    timeout = property(lambda self: self.table.time_limit)
    # Read by a person from the student's report, never by the harness.
    report_points = property(lambda self: float(self.table.report))

    @property
    def max_points(self) -> float:
        return 0.0 if self.bonus else self.points


TEST_CASE_RE = re.compile(r'TEST_CASE\(\s*"((?:[^"\\]|\\.)*)"\s*,\s*"([^"]*)"\s*\)')


SAFE_NAME_RE = re.compile(r"^[A-Za-z0-9 _'^.()|+=<>-]+$")


def read_test_cases(lab: Path, part: str, emulated: bool = False) -> list[TestCase]:
    """The test cases of a part, read from its grader source (not from a binary
    that links student code, which could print any list it likes): those of a
    GPU's build, or with `emulated` those of the emulator's too ([emulated])."""
    source = (lab / "tests" / f"test_{part}.cpp").read_text()
    cases = []
    for name, tags in TEST_CASE_RE.findall(source):
        if not SAFE_NAME_RE.match(name):
            raise GradingError(f"test name {name!r} has characters a Catch2 test spec would read as syntax")
        tag_list = re.findall(r"\[([^\]]*)\]", tags)
        questions = [t for t in tag_list if re.fullmatch(r"[QX]\d+", t)]
        if emulated or "emulated" not in tag_list:
            cases.append(TestCase(part, name, tag_list, questions))
    return cases


def read_points(lab: Path, part: str, emulated: bool = False) -> dict[str, Question]:
    """Questions of a part with their test cases, weights and time limits: the
    course table's questions, matched with the test cases of the part's grader."""
    try:
        table = course.load(lab)
    except course.CourseError as e:
        raise GradingError(str(e)) from None
    questions = {q.qid: Question(q) for q in table.questions_of(part)}
    cases = read_test_cases(lab, part, emulated)
    for case in cases:
        for qid in case.questions:
            if qid not in questions:
                raise GradingError(f"test {case.name!r} is tagged {qid}, which {table.path} does not list for {part}")
            rule = table.tests.get(case.name, course.TestRule(case.name))
            questions[qid].tests.append(case)
            questions[qid].weights[case.name] = rule.weight
            if rule.time_limit is not None:
                questions[qid].timeouts[case.name] = rule.time_limit
    for q in questions.values():
        if sum(q.weights.values()) <= 0:
            raise GradingError(f"{table.path}: {q.qid} has no test case that carries points")
    return questions


def unknown_test_rules(lab: Path) -> list[str]:
    """The table's [test] sections that name no test case of any grader."""
    names = {c.name for part, _ in read_parts(lab) for c in read_test_cases(lab, part, emulated=True)}
    return sorted(set(course.load(lab).tests) - names)


def all_questions(lab: Path, emulated: bool = False) -> dict[str, Question]:
    """Every question with its test cases: a GPU's, or the emulator's."""
    out: dict[str, Question] = {}
    for part, _ in PARTS:
        out.update(read_points(lab, part, emulated))
    return out


def emulated_names(lab: Path) -> set[str]:
    """The test cases only the emulator's build has: reports that hold one
    are an emulated run's."""
    return {c.name for part, _ in PARTS for c in read_test_cases(lab, part, emulated=True) if c.emulated}


def questions_of_run(lab: Path, seen) -> dict[str, Question]:
    """Every question with the test cases of the run whose reports name the
    tests `seen`: an emulated run's when one of them only the emulator builds."""
    return all_questions(lab, emulated=bool(set(seen) & emulated_names(lab)))


def read_manifest(lab: Path) -> list[str]:
    """The student files that are built and graded (the course table's parts)."""
    return course.load(lab).student_files()


def read_documents(lab: Path) -> list[str]:
    """The optional documents (report.md, ...): taken for the person who grades
    them, never built or run (the course table's [course] documents)."""
    return list(course.load(lab).documents)


def report_points(questions) -> float:
    return sum(q.report_points for q in questions)
