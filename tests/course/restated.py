"""Facts of the course table written outside its generated parts (docs.py --check).

Every text file of the lab is read without its generated parts; what is left
must not restate the table:
- a question's points ("Q2 ... (3 + 1 points)"), or its code or report points
  right after its name in a list ("Q2 1, Q3 1");
- the totals of points (the code points, with or without the report's and the
  bonus), and a total that is not a whole number anywhere ("the assignment's 17.5");
- the sanitizer penalty in words near what it costs ("costs half of ...");
- in the documents (Markdown), a part's questions as a range ("Q5-Q7"), and the
  reference's default shapes (the generator's default_shapes, from DefaultShapes) after
  the word "default";
- the list of parts: every part's folder named within a few lines;
- the list of planted faults: three or more of them named in one file (but
  faults.py, whose edits are keyed by the table's names and checked against it).
The table, its reader and its generator are the only places these may be written.
The generator (docs.py) calls this check and passes itself as `gen` (its blocks,
owned lines and spellings), so that this module imports nothing of it.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.course import table as C
from tests.grading.harness.building import SKIP_NAMES

ALLOWED = {"tests/course.ini", "tests/course/table.py", "tests/course/docs.py", "tests/course/restated.py"}
SKIPPED = re.compile(r"^results/[^/]+/|\.(png|jpg|pdf|zip|gz|xz|ipynb)$|^tests/grading/reference_leaked_")
NEAR = 10  # lines: every part's folder within this many is a list of the parts
PENALTY_CONTEXT = r"\b(?:penalt\w*|costs?|loses?|lost)\b"
UNITS = r"(?!\s*(?:s|ms|x|%|GB|GiB|MiB|KiB)\b)"
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


def ungenerated(lab: Path, rel: str, course: C.Course, gen) -> str:
    """The file's text with its generated parts (blocks and owned lines) left out."""
    text = (lab / rel).read_text()

    def blank(m: re.Match) -> str:  # the part's lines stay, empty: the line numbers stay the file's
        return "\n" * m.group(0).count("\n")

    text = gen.HASH_BLOCK.sub(blank, gen.MD_BLOCK.sub(blank, text))
    if rel == "handout.md":
        text = "\n".join(ln if gen.owned_line(course, ln + "\0") == ln + "\0" else "" for ln in text.split("\n"))
    return text


def totals(course: C.Course) -> list[str]:
    code, report = course.code_points(), course.report_points()
    return [C.points(code), C.points(code + course.code_points(bonus=True))] + \
        ([C.points(code + report)] if report else [])


def file_problems(rel: str, text: str, course: C.Course, gen) -> list[str]:
    found = []

    def at(m: re.Match) -> int:
        return text.count(chr(10), 0, m.start()) + 1

    for q in course.questions:
        values = {C.points(v) for v in (q.points, q.report) if v}
        for value in values:
            for m in re.finditer(rf"(?<![\w-]){q.qid} {re.escape(value)}(?=[,;:)]|\s+and\b|$)", text, re.M):
                found.append(f"{rel}:{at(m)}: a question's points in a list ({m.group(0)!r})")
    for share in sorted({q.sanitizer_penalty for q in course.questions}):
        for word in gen.share_words(share):
            pattern = rf"{PENALTY_CONTEXT}[^.]{{0,60}}?(?<![\w.]){re.escape(word)}(?![\w%])"
            for m in re.finditer(pattern, text, re.I):
                found.append(f"{rel}:{at(m)}: the sanitizer penalty ({' '.join(m.group(0).split())!r})")
    if rel.endswith(".md") and (gen.LAB / "part3_merge_sort" / "reference.cu").exists():
        for threads, items in gen.default_shapes().values():
            for m in re.finditer(rf"\bdefault\b[^.]{{0,60}}?(?<![\d.]){threads} ?x ?{items}(?!\d)", text, re.I):
                found.append(f"{rel}:{at(m)}: a default shape ({' '.join(m.group(0).split())!r})")
    numbered = [part for part in course.parts if not all(q.bonus for q in course.questions_of(part.name))]
    for part in course.parts:
        ids = [q.qid for q in course.questions_of(part.name)]
        if len(ids) < 2:
            continue
        if rel.endswith(".md"):  # a part's questions: generated in the documents
            for m in re.finditer(rf"(?<![\w\[-]){ids[0]}-{ids[-1]}(?![\w-])", text):
                found.append(f"{rel}:{at(m)}: {part.name}'s questions ({m.group(0)!r})")
        elif part in numbered:  # code says "Part 3 (Q5-Q7)" by hand: it must be the whole part
            n = numbered.index(part) + 1
            for m in re.finditer(rf"\bPart {n}\b[^()\n]{{0,60}}\({ids[0]}-([QX]\d+)\)", text):
                if m.group(1) != ids[-1]:
                    found.append(f"{rel}:{at(m)}: {m.group(0)!r} is stale (the table gives {part.name} "
                                 f"{ids[0]}-{ids[-1]}; write that), and the range")
    for m in QUESTION_POINTS.finditer(text):
        found.append(f"{rel}:{at(m)}: a question's points ({m.group(0)!r})")
    code = re.escape(C.points(course.code_points()))
    for total in map(re.escape, totals(course)):  # "17.5 points", "of 20", "19.5/17.5"; the code total as a value
        pattern = rf"(?<![\d.]){total} (?:code )?points\b|(?<![\d.]){total}(?=/)|\bof (?:the )?{total}\b"
        if total == code:
            pattern += rf"|(?<=\": ){code}\b|(?<=\",){code}\b|(?<=\",0,){code}\b"
        if "." in total:  # not a whole number: anywhere but as a time or a size
            pattern += rf"|(?<![\d.]){total}(?![\d]){UNITS}"
        for m in re.finditer(pattern, text):
            found.append(f"{rel}:{at(m)}: a total of points ({m.group(0)!r})")
    lines = text.split("\n")
    for first in range(len(lines)):
        window = "\n".join(lines[first:first + NEAR])
        if len(course.parts) > 1 and all(p.folder in window for p in course.parts):
            found.append(f"{rel}:{first + 1}: names every part's folder (the list of parts)")
            break
    faults = [f.name for f in course.faults if "-" in f.name and re.search(rf"(?<![\w-]){re.escape(f.name)}(?![\w-])", text)]
    if len(faults) >= 3 and rel != "tests/redteam/faults.py":
        found.append(f"{rel}: names {len(faults)} planted faults ({', '.join(faults[:3])}, ...: the list of faults)")
    return found


def problems(lab: Path, course: C.Course, gen) -> list[str]:
    found = []
    for rel in lab_files(lab):
        if rel in ALLOWED or rel in gen.WHOLE_FILES or SKIPPED.search(rel) or not (lab / rel).is_file():
            continue
        try:
            text = ungenerated(lab, rel, course, gen)
        except (UnicodeDecodeError, OSError):
            continue
        found += file_problems(rel, text, course, gen)
    return [f"{p} is written outside the course table's generated parts" for p in found]
