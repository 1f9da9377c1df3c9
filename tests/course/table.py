"""The course table (tests/course.ini), read and checked: the lab's one list of
parts, questions, points, time limits, trace rules and planted faults.

Everything that needs a fact of the table reads it here; documents restate it
only between generated markers (docs.py). Standard library only, so that the
Makefile's helpers, CI and Gradescope's image can all import it.
"""

from __future__ import annotations

import configparser
import functools
import sys
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

TABLE = Path("tests") / "course.ini"
OUTCOMES = ("full", "zero", "partial", "less")


class CourseError(Exception):
    """The table cannot be read: the message names the file and section."""


@dataclass(frozen=True)
class Part:
    name: str
    folder: str
    interface: str
    student_files: tuple[str, ...]
    title: str
    summary: str

    def files(self) -> list[str]:
        """The part's student files, relative to the lab."""
        return [f"{self.folder}/{f}" for f in self.student_files]


@dataclass(frozen=True)
class Question:
    qid: str
    part: str
    points: Fraction
    report: Fraction
    time_limit: float
    sanitizer_penalty: float
    title: str
    heading: str
    summary: str
    kernels: tuple[str, ...]
    shape: str
    bonus: bool


@dataclass(frozen=True)
class TestRule:
    name: str
    weight: float = 1.0
    time_limit: float | None = None


@dataclass(frozen=True)
class Fault:
    name: str
    what: str
    expect: dict = field(hash=False)  # question -> one of OUTCOMES
    sanitize: bool
    gpu_only: bool
    emulated: str


@dataclass(frozen=True)
class Course:
    path: Path
    documents: tuple[str, ...]
    parts: tuple[Part, ...]
    questions: tuple[Question, ...]
    tests: dict = field(hash=False)  # test name -> TestRule
    faults: tuple[Fault, ...]

    def part(self, name: str) -> Part:
        return next(p for p in self.parts if p.name == name)

    def question(self, qid: str) -> Question:
        return next(q for q in self.questions if q.qid == qid)

    def questions_of(self, part: str) -> list[Question]:
        return [q for q in self.questions if q.part == part]

    def student_files(self) -> list[str]:
        """Every file a student hands in (the manifest), part by part."""
        return [f for p in self.parts for f in p.files()]

    def code_points(self, bonus: bool = False) -> Fraction:
        return sum((q.points for q in self.questions if q.bonus == bonus), Fraction(0))

    def report_points(self) -> Fraction:
        return sum((q.report for q in self.questions), Fraction(0))


def _number(section: configparser.SectionProxy, key: str, where: str, default=None) -> Fraction:
    text = section.get(key, default)
    if text is None:
        raise CourseError(f"{where}: no '{key}'")
    try:
        value = Fraction(text)
    except (ValueError, ZeroDivisionError):
        raise CourseError(f"{where}: '{key}' must be a number, not {text!r}") from None
    if value < 0:
        raise CourseError(f"{where}: '{key}' must not be negative, not {text}")
    return value


def _text(section: configparser.SectionProxy, key: str, where: str) -> str:
    text = section.get(key, "").strip()
    if not text:
        raise CourseError(f"{where}: no '{key}'")
    return " ".join(text.split())


def _yes(section: configparser.SectionProxy, key: str, where: str) -> bool:
    text = section.get(key, "no").strip()
    if text not in ("yes", "no"):
        raise CourseError(f"{where}: '{key}' must be yes or no, not {text!r}")
    return text == "yes"


def _part(name: str, s: configparser.SectionProxy, where: str) -> Part:
    return Part(name, _text(s, "folder", where), _text(s, "interface", where),
                tuple(_text(s, "student files", where).split()), _text(s, "title", where), _text(s, "summary", where))


def _question(qid: str, s: configparser.SectionProxy, where: str, bonus_prefix: str) -> Question:
    points = _number(s, "points", where)
    if (points * 100).denominator != 1:
        raise CourseError(f"{where}: points must be whole hundredths (its tests' shares are split in "
                          f"hundredths), not {s.get('points')}")
    limit = _number(s, "time limit", where)
    if limit <= 0:
        raise CourseError(f"{where}: 'time limit' must be more than 0 seconds")
    penalty = _number(s, "sanitizer penalty", where)
    if penalty > 1:
        raise CourseError(f"{where}: 'sanitizer penalty' is a fraction of the points, at most 1")
    return Question(qid, _text(s, "part", where), points, _number(s, "report", where, "0"), float(limit),
                    float(penalty), _text(s, "title", where), _text(s, "heading", where), _text(s, "summary", where),
                    tuple(_text(s, "kernels", where).split()), _text(s, "shape", where), qid.startswith(bonus_prefix))


def _test(name: str, s: configparser.SectionProxy, where: str) -> TestRule:
    unknown = set(s) - {"weight", "time limit"}
    if unknown:
        raise CourseError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    limit = s.get("time limit")
    if limit is not None and _number(s, "time limit", where) <= 0:
        raise CourseError(f"{where}: 'time limit' must be more than 0 seconds")
    return TestRule(name, float(_number(s, "weight", where, "1")), float(limit) if limit is not None else None)


def _fault(name: str, s: configparser.SectionProxy, where: str) -> Fault:
    expect = {}
    for item in _text(s, "expect", where).split(","):
        words = item.split()
        if len(words) != 2 or words[1] not in OUTCOMES:
            raise CourseError(f"{where}: 'expect' lists 'question outcome' pairs ({', '.join(OUTCOMES)}), "
                              f"not {item.strip()!r}")
        expect[words[0]] = words[1]
    return Fault(name, _text(s, "what", where), expect, _yes(s, "sanitize", where), _yes(s, "gpu only", where),
                 _text(s, "emulated", where))


def _sections(parser: configparser.ConfigParser, path: Path):
    """(kind, name, section, where) of every section but [course], in order."""
    for title in parser.sections():
        if title == "course":
            continue
        kind, _, name = title.partition(" ")
        if kind not in ("part", "question", "test", "fault") or not name.strip():
            raise CourseError(f"{path}: [{title}]: a section is [course], [part NAME], [question ID], "
                              f"[test NAME] or [fault NAME]")
        yield kind, name.strip(), parser[title], f"{path} [{title}]"


def _check(course: Course) -> None:
    """What the sections must agree on."""
    names = [p.name for p in course.parts]
    for q in course.questions:
        if q.part not in names:
            raise CourseError(f"{course.path} [question {q.qid}]: part {q.part!r} is not a [part]")
    qids = {q.qid for q in course.questions}
    for f in course.faults:
        for qid in f.expect:
            if qid not in qids:
                raise CourseError(f"{course.path} [fault {f.name}]: {qid} is not a [question]")
    for p in course.parts:
        if not p.folder.startswith(p.name + "_"):  # tools name a part by its folder's first word
            raise CourseError(f"{course.path} [part {p.name}]: its folder must start with '{p.name}_'")
        if not course.questions_of(p.name):
            raise CourseError(f"{course.path} [part {p.name}]: no question belongs to it")


@functools.lru_cache(maxsize=None)
def load(lab: Path) -> Course:
    """The table of the lab at `lab`, read and checked (CourseError when it cannot be)."""
    path = Path(lab) / TABLE
    parser = configparser.ConfigParser(interpolation=None, delimiters=("=",), comment_prefixes=("#",),
                                       strict=True, empty_lines_in_values=False)
    parser.optionxform = str  # keys as written
    try:
        parser.read_string(path.read_text(), source=str(path))
    except (OSError, configparser.Error) as e:
        raise CourseError(f"{path}: {e}") from None
    if "course" not in parser:
        raise CourseError(f"{path}: no [course] section")
    head = parser["course"]
    bonus_prefix = _text(head, "bonus prefix", f"{path} [course]")
    parts, questions, tests, faults = [], [], {}, []
    for kind, name, s, where in _sections(parser, path):
        if kind == "part":
            parts.append(_part(name, s, where))
        elif kind == "question":
            questions.append(_question(name, s, where, bonus_prefix))
        elif kind == "test":
            tests[name] = _test(name, s, where)
        else:
            faults.append(_fault(name, s, where))
    course = Course(path, tuple(_text(head, "documents", f"{path} [course]").split()), tuple(parts),
                    tuple(questions), tests, tuple(faults))
    _check(course)
    return course


def points(value: Fraction | float) -> str:
    """A number of points as the documents write it: 6, 0.5, 17.5."""
    return f"{float(value):g}"


LISTS = {
    "parts": lambda c: [p.name for p in c.parts],
    "folders": lambda c: [p.folder for p in c.parts],
    "student-files": lambda c: c.student_files(),
    "gpu-only-faults": lambda c: [f.name for f in c.faults if f.gpu_only],
}


def main(argv: list[str]) -> int:
    """No argument: a summary of the table. With a list's name: that list, one
    item per line (for the shell: `for part in $(python3 -m tests.course.table parts)`)."""
    here = Path(__file__).resolve().parents[2]
    try:
        c = load(here)
    except CourseError as e:
        print(f"course: {e}", file=sys.stderr)
        return 1
    if argv and argv[0] in LISTS:
        print("\n".join(LISTS[argv[0]](c)))
        return 0
    if argv:
        print(f"course: no list {argv[0]!r} (lists: {', '.join(LISTS)})", file=sys.stderr)
        return 2
    print(f"{c.path}: {len(c.parts)} parts, {len(c.questions)} questions ({points(c.code_points())} code points, "
          f"{points(c.report_points())} report points, {points(c.code_points(bonus=True))} bonus), "
          f"{len(c.tests)} test rules, {len(c.faults)} planted faults")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
