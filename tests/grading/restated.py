"""Facts of the course table written outside its generated parts (docs.py --check).

Every text file of the lab is read without its generated parts; what is left
must not restate the table:
- a question's points ("Q2 ... (3 + 1 points)");
- the totals of points (the code points, with or without the report's);
- the list of parts: every part's folder named within a few lines;
- the list of planted faults: three or more of them named in one file (but
  faults.py, whose edits are keyed by the table's names and checked against it).
The table, its reader and its generator are the only places these may be written.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import course as C
import docs
from harness.building import SKIP_NAMES

ALLOWED = {"tests/course.ini", "tests/grading/course.py", "tests/grading/docs.py", "tests/grading/restated.py",
           *docs.WHOLE_FILES}
SKIPPED = re.compile(r"^results/[^/]+/|\.(png|jpg|pdf|zip|gz|xz|ipynb)$|^tests/grading/reference_leaked_")
NEAR = 10  # lines: every part's folder within this many is a list of the parts
QUESTION_POINTS = re.compile(r"\b[QX]\d+\b[^\n]{0,40}?\b\d+(?:\.\d+)?(?: \+ \d+(?:\.\d+)?)? points?\b")


def lab_files(lab: Path) -> list[str]:
    """The lab's text files: git's list where the lab is a repository, else a
    walk that leaves out builds and outputs (SKIP_NAMES: a student's copy is no
    repository, and its grade-results/ is no part of the lab)."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=lab,
                            capture_output=True, text=True)
    if listed.returncode == 0 and listed.stdout.strip():
        return sorted(set(listed.stdout.split("\n")) - {""})
    return sorted(p.relative_to(lab).as_posix() for p in lab.rglob("*")
                  if p.is_file() and not SKIP_NAMES & set(p.relative_to(lab).parts))


def ungenerated(lab: Path, rel: str, course: C.Course) -> str:
    """The file's text with its generated parts (blocks and owned lines) left out."""
    text = (lab / rel).read_text()
    text = docs.HASH_BLOCK.sub("", docs.MD_BLOCK.sub("", text))
    if rel == "handout.md":
        text = "\n".join(ln for ln in text.split("\n") if docs.owned_line(course, ln + "\0") == ln + "\0")
    return text


def totals(course: C.Course) -> list[str]:
    code, report = course.code_points(), course.report_points()
    return [C.points(code), C.points(code + course.code_points(bonus=True))] + \
        ([C.points(code + report)] if report else [])


def file_problems(rel: str, text: str, course: C.Course) -> list[str]:
    found = []
    for m in QUESTION_POINTS.finditer(text):
        found.append(f"{rel}:{text.count(chr(10), 0, m.start()) + 1}: a question's points ({m.group(0)!r})")
    code = re.escape(C.points(course.code_points()))
    for total in map(re.escape, totals(course)):  # "17.5 points", "of 20", "19.5/17.5"; the code total as a value
        pattern = rf"(?<![\d.]){total} (?:code )?points\b|(?<![\d.]){total}(?=/)|\bof (?:the )?{total}\b"
        if total == code:
            pattern += rf"|(?<=\": ){code}\b|(?<=\",){code}\b|(?<=\",0,){code}\b"
        for m in re.finditer(pattern, text):
            found.append(f"{rel}:{text.count(chr(10), 0, m.start()) + 1}: a total of points ({m.group(0)!r})")
    lines = text.split("\n")
    for first in range(len(lines)):
        window = "\n".join(lines[first:first + NEAR])
        if len(course.parts) > 1 and all(p.folder in window for p in course.parts):
            found.append(f"{rel}:{first + 1}: names every part's folder (the list of parts)")
            break
    faults = [f.name for f in course.faults if "-" in f.name and re.search(rf"(?<![\w-]){re.escape(f.name)}(?![\w-])", text)]
    if len(faults) >= 3 and rel != "tests/grading/faults.py":
        found.append(f"{rel}: names {len(faults)} planted faults ({', '.join(faults[:3])}, ...: the list of faults)")
    return found


def problems(lab: Path, course: C.Course) -> list[str]:
    found = []
    for rel in lab_files(lab):
        if rel in ALLOWED or SKIPPED.search(rel) or not (lab / rel).is_file():
            continue
        try:
            text = ungenerated(lab, rel, course)
        except (UnicodeDecodeError, OSError):
            continue
        found += file_problems(rel, text, course)
    return [f"{p} is written outside the course table's generated parts" for p in found]
