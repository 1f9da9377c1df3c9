#!/usr/bin/env python3
"""What the documents restate of the course table (tests/course.ini), generated;
and the tables of measured results they restate (results/tables.py).

  python3 -m tests.course.docs          rewrite every generated part (make docs)
  python3 -m tests.course.docs --check  exit 1 when one differs from what the table
                                         gives, or a fact of the table is written
                                         outside them (make test runs this)

Generated parts are of three kinds:
- blocks between `<!-- course:NAME -->` and `<!-- /course:NAME -->` (Markdown; may
  sit inside a line) or between the lines `# course:NAME` and `# /course:NAME`
  (Makefile);
- lines the table owns by their shape: the handout's headings of parts and
  questions (`## Part 1 — `, `### Q1 — `) and the report template's `## Q2  ...`;
- whole files: tests/course/manifest.txt.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

LAB = Path(__file__).resolve().parents[2]
from tests.course import table as C
from results import tables

SOURCE = "make docs, from tests/course.ini"
# Markdown blocks: `course:` ones made from the course table (BLOCKS), `results:`
# ones from the committed measurements (tables.BLOCKS).
MD_BLOCK = re.compile(r"<!-- (course|results):(\S+) -->(.*?)<!-- /\1:\2 -->", re.S)
HASH_BLOCK = re.compile(r"^# course:(\S+)\n(.*?)^# /course:\1\n", re.S | re.M)
REPORT_COLUMN = 69  # where the report template's "(1 point)" starts


# ---------------------------------------------------------------- how facts read


def amount(code, report=0) -> str:
    """'6 points', '1 point', '3 + 1 points'."""
    if report:
        return f"{C.points(code)} + {C.points(report)} points"
    return f"{C.points(code)} point{'' if code == 1 else 's'}"


def is_bonus_part(course: C.Course, part: C.Part) -> bool:
    return all(q.bonus for q in course.questions_of(part.name))


def question_range(course: C.Course, part: C.Part) -> str:
    """'Q1-Q2' for consecutive questions, 'Q1, Q2, Q8' otherwise."""
    ids = [q.qid for q in course.questions_of(part.name)]
    numbers = [int(i[1:]) for i in ids]
    if len(ids) > 1 and numbers == list(range(numbers[0], numbers[0] + len(ids))):
        return f"{ids[0]}-{ids[-1]}"
    return ", ".join(ids)


def part_label(course: C.Course, part: C.Part) -> str:
    """'1' for the first part, 'extras' for a part of bonus questions only."""
    if is_bonus_part(course, part):
        return part.name
    return str(course.parts.index(part) + 1)


def listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


# ---------------------------------------------------------------- blocks


def points_table(course: C.Course) -> str:
    rows = ["| Question | Part | What | Code | Report | Points |", "|---|---|---|---|---|---|"]

    def row(q: C.Question) -> str:
        report = f" {C.points(q.report)} " if q.report else " "
        return (f"| {q.qid} | {part_label(course, course.part(q.part))} | {q.summary} | {C.points(q.points)} |"
                f"{report}| {C.points(q.points + q.report)} |")

    rows += [row(q) for q in course.questions if not q.bonus]
    code, report = course.code_points(), course.report_points()
    rows.append(f"| | | total | {C.points(code)} | {C.points(report)} | {C.points(code + report)} |")
    rows += [row(q) for q in course.questions if q.bonus]
    return "\n" + "\n".join(rows) + "\n"


def bonus_sentence(course: C.Course) -> str:
    bonus = [q.qid for q in course.questions if q.bonus]
    total = course.code_points() + course.report_points()
    return (f"The extras ({bonus[0]}-{bonus[-1]}, \"Extras\" below) are bonus: up to "
            f"{C.points(course.code_points(bonus=True))} points on top of the {C.points(total)}.")


def share_words(share: float) -> list[str]:
    """How a document may spell a fraction of the points: "half", "50%"."""
    words = {0.5: ["half"], 0.25: ["a quarter", "one quarter"], 0.75: ["three quarters"], 1.0: ["all"]}
    return words.get(share, []) + [f"{round(share * 100)}%", f"{round(share * 100)} %"]


def penalty(course: C.Course) -> str:
    """The share of a question's points a sanitizer's error costs, in words."""
    shares = {q.qid: q.sanitizer_penalty for q in course.questions}
    if len(set(shares.values())) == 1:
        return share_words(next(iter(shares.values())))[0]
    return "per question, " + ", ".join(f"{qid} {share_words(v)[0]}" for qid, v in shares.items())


def default_shapes() -> dict[str, tuple[int, int]]:
    """The reference's default launch shapes, read from `DefaultShapes` in
    part3_merge_sort/reference.cu (the one place they live): merge, sort."""
    text = (LAB / "part3_merge_sort" / "reference.cu").read_text()
    value = {name: int(v) for name, v in re.findall(r"static constexpr int (k\w+) = (\d+);", text)}
    return {"merge": (value["kThreads"], value["kItems"]), "sort": (value["kSortThreads"], value["kSortItems"])}


def shape_maker(kind: str, what: str):
    def make(course: C.Course) -> str:
        threads, items = default_shapes()[kind]
        return f"{threads} x {items}" if what == "shape" else str(threads * items)
    return make


def report_weights(course: C.Course) -> str:
    """'Q2 1, Q3 1, Q7 0.5': the report's points of each question that has some."""
    return ", ".join(f"{q.qid} {C.points(q.report)}" for q in course.questions if q.report)


def report_questions(course: C.Course) -> str:
    with_report = [q.qid for q in course.questions if q.report]
    return f"{listed(with_report)} ({C.points(course.report_points())} in all)"


def hand_in(course: C.Course) -> str:
    """The handout's list of the files a student hands in, two to a line."""
    lines, pending = ["", "```"], []
    for part in course.parts:
        files = part.files()
        if is_bonus_part(course, part):
            lines += ["    ".join(pending)] if pending else []
            pending = []
            lines.append(f"{files[0]:<42} (the bonus questions; leave it as it is if you skip them)")
            continue
        for f in files:
            pending.append(f"{f:<30}")
            if len(pending) == 2:
                lines.append(" ".join(pending).rstrip())
                pending = []
    if pending:
        lines.append(" ".join(pending).rstrip())
    return "\n".join(lines + ["```", ""])


def trace_table(course: C.Course) -> str:
    rows = ["| Question | kernels your launcher may run | shape checked |", "|---|---|---|"]
    rows += [f"| {q.qid} | {', '.join(f'`{k}`' for k in q.kernels)} | {q.shape} |" for q in course.questions]
    return "\n" + "\n".join("  " + r for r in rows) + "\n  "


def layout_rows(course: C.Course) -> str:
    """README's rows of the part folders in its table of what is where."""
    rows = []
    for p in course.parts:
        bonus = " (bonus)" if is_bonus_part(course, p) else ""
        rows.append(f"| `{p.folder}/` | {question_range(course, p)}{bonus}: {p.summary} |")
    return "\n" + "\n".join(rows) + "\n"


def student_files(course: C.Course) -> str:
    """README's list of where each question's regions are."""
    rows = []
    for p in course.parts:
        files = listed([f"`{f}`" for f in p.files()])
        bonus = " (bonus)" if is_bonus_part(course, p) else ""
        rows.append(f"   - {question_range(course, p)}{bonus}: {files}")
    return "\n" + "\n".join(rows) + "\n"


def fault_table(course: C.Course) -> str:
    """INSTRUCTORS.md's table of the planted faults, emulated: faults with the same
    note share a row."""
    notes: dict[str, list[C.Fault]] = {}
    for f in course.faults:
        notes.setdefault(("**GPU only**: " if f.gpu_only else "as on a GPU: ") + f.emulated, []).append(f)
    rows = ["| Fault | Emulated |", "|---|---|"]
    rows += [f"| {', '.join(f'`{f.name}`' for f in fs)} | {note} |" for note, fs in notes.items()]
    return "\n" + "\n".join(rows) + "\n"


def fault_count(course: C.Course) -> str:
    gpu_only = sum(f.gpu_only for f in course.faults)
    others = "the other needs" if gpu_only == 1 else f"the {gpu_only} others need"
    return f"{len(course.faults) - gpu_only} of the {len(course.faults)} agree with the GPU; {others} a GPU"


def idiom_table(course: C.Course) -> str:
    """emulator/README.md's table of the idioms (emulator/idioms.tsv): the GPU tools'
    verdicts and the emulator's, each column checked where its tool runs."""
    spec = importlib.util.spec_from_file_location("idioms", LAB / "emulator" / "idioms.py")
    idioms = sys.modules.setdefault("idioms", importlib.util.module_from_spec(spec))
    spec.loader.exec_module(idioms)

    def cell(verdict: str) -> str:
        return verdict if verdict == "clean" else f"**{verdict}**"

    rows = ["| Idiom | " + " | ".join(idioms.GPU_TOOLS) + " | emulator |", "|---|---|---|---|---|"]
    rows += [f"| `{i.name}`: {i.what} | " + " | ".join(cell(v) for v in i.verdicts.values()) + " |"
             for i in idioms.read_table()]
    return "\n" + "\n".join(rows) + "\n"


def make_parts(course: C.Course) -> str:
    lines = [f"# ({SOURCE}: the parts, in order, and their folders)",
             f"PARTS := {' '.join(p.name for p in course.parts)}"]
    lines += [f"{p.name}_DIR := {p.folder}" for p in course.parts]
    return "\n".join(lines) + "\n"


def manifest(course: C.Course) -> str:
    lines = [f"# The files a student submits ({SOURCE}; do not edit): only these are",
             "# taken from a submission, into a pristine copy of the lab. Paths are relative to",
             "# the lab's root; a submission may hold them under one top folder (an archive of",
             "# the whole lab works too).", *course.student_files(), "",
             "# The written report, for the person who grades it: never built or run. The",
             "# first found is taken (and a report.md's linked figures); \"?\" marks it optional.",
             *(f"? {d}" for d in course.documents)]
    return "\n".join(lines) + "\n"


BLOCKS = {
    "handout.md": {"points": points_table, "bonus": bonus_sentence, "hand-in": hand_in, "trace": trace_table,
                   "report-questions": report_questions, "penalty": penalty,
                   **{f"{kind}-{what}": shape_maker(kind, what) for kind in ("merge", "sort") for what in ("shape", "tile")}},
    "README.md": {"layout": layout_rows, "student-files": student_files},
    "INSTRUCTORS.md": {"faults": fault_table, "fault-count": fault_count, "penalty": penalty,
                       "report-weights": report_weights},
    "emulator/README.md": {"idioms": idiom_table},
    "Makefile": {"parts": make_parts},
    "TUNING.md": {f"{kind}-shape": shape_maker(kind, "shape") for kind in ("merge", "sort")},
}
WHOLE_FILES = {"tests/course/manifest.txt": manifest}


# ---------------------------------------------------------------- owned lines


def owned_line(course: C.Course, line: str) -> str:
    """The line as the table writes it, when the table owns its shape."""
    m = re.match(r"^### ([QX]\d+) — ", line)
    if m and any(q.qid == m.group(1) for q in course.questions):
        q = course.question(m.group(1))
        return f"### {q.qid} — {q.heading} ({amount(q.points, q.report)})"
    m = re.match(r"^## (Part (\d+)|Extras) — ", line)
    if m:
        return part_heading(course, m.group(2)) or line
    m = re.match(r"^## ([QX]\d+)  (\S.*?)\s+\([0-9.]+ points?\)$", line)
    if m and any(q.qid == m.group(1) and q.report for q in course.questions):
        q = course.question(m.group(1))
        return f"## {q.qid}  {m.group(2)}".ljust(REPORT_COLUMN) + f"({C.points(q.report)} point" + \
            ("s)" if q.report > 1 else ")")
    return line


def part_heading(course: C.Course, number: str | None) -> str | None:
    """'## Part 2 — ... (6 points)' for part `number` of the graded parts;
    '## Extras — ... (bonus, 2 points)' for the bonus part (number None)."""
    plain = [p for p in course.parts if not is_bonus_part(course, p)]
    bonus = [p for p in course.parts if is_bonus_part(course, p)]
    if number:
        part = plain[int(number) - 1] if int(number) <= len(plain) else None
    else:
        part = bonus[0] if bonus else None
    if part is None:
        return None
    total = sum((q.points + q.report for q in course.questions_of(part.name)), C.Fraction(0))
    if number:
        return f"## Part {number} — {part.title} ({amount(total)})"
    return f"## Extras — {part.title} (bonus, {amount(total)})"


# ---------------------------------------------------------------- generating


def generate(rel: str, text: str, course: C.Course, lab: Path = LAB) -> tuple[str, list[str]]:
    """The text with every generated part rewritten (the tables of results from
    lab's CSVs), and the blocks it lacks."""
    if rel in WHOLE_FILES:
        return WHOLE_FILES[rel](course), []
    makers = {("course", name): (make, course) for name, make in BLOCKS.get(rel, {}).items()}
    makers |= {("results", name): (make, lab) for name, make in tables.BLOCKS.get(rel, {}).items()}
    seen: set[tuple[str, str]] = set()

    def block(kind: str, name: str, whole: str, hashed: bool) -> str:
        if (kind, name) not in makers:
            return whole
        seen.add((kind, name))
        make, source = makers[kind, name]
        body = make(source)
        if hashed:
            return f"# {kind}:{name}\n{body}# /{kind}:{name}\n"
        return f"<!-- {kind}:{name} -->{body}<!-- /{kind}:{name} -->"

    text = MD_BLOCK.sub(lambda m: block(m.group(1), m.group(2), m.group(0), False), text)
    text = HASH_BLOCK.sub(lambda m: block("course", m.group(1), m.group(0), True), text)
    missing = sorted(name for _, name in set(makers) - seen)
    if rel == "handout.md":
        lines = text.split("\n")
        text = "\n".join(owned_line(course, ln) for ln in lines)
        missing += [f"heading of {q.qid} ('### {q.qid} — ...')" for q in course.questions
                    if not any(ln.startswith(f"### {q.qid} — ") for ln in lines)]
    return text, missing


def targets(lab: Path) -> list[str]:
    return [rel for rel in dict.fromkeys([*BLOCKS, *tables.BLOCKS, *WHOLE_FILES])
            if (lab / rel).exists() or rel in WHOLE_FILES]


def run(lab: Path, check: bool) -> list[str]:
    """Rewrites (or, with check, compares) every generated part; the problems."""
    try:
        course = C.load(lab)
    except C.CourseError as e:
        return [str(e)]
    problems = []
    for rel in targets(lab):
        path = lab / rel
        old = path.read_text() if path.exists() else ""
        new, missing = generate(rel, old, course, lab)
        problems += [f"{rel}: no {name}" if name.startswith("heading") else
                     f"{rel}: no generated block '{name}' (its markers are gone)" for name in missing
                     if not (rel == "INSTRUCTORS.md" and name.startswith("fault") and not course.faults)
                     and not (name.endswith(("-shape", "-tile")) and not (lab / "part3_merge_sort" / "reference.cu").exists())]
        if new != old:
            if check:
                problems.append(f"{rel}: differs from what it is generated from ({first_difference(old, new)})")
            else:
                path.write_text(new)
    if check:
        from tests.course import restated
        problems += restated.problems(lab, course, sys.modules[__name__])
    return problems


def first_difference(old: str, new: str) -> str:
    a, b = old.splitlines(), new.splitlines()
    for number, (x, y) in enumerate(zip(a, b), 1):
        if x != y:
            col = next((i for i, (c, d) in enumerate(zip(x, y)) if c != d), min(len(x), len(y)))
            start = max(0, col - 25)
            return f"line {number}: has {x[start:col + 25]!r}, make docs writes {y[start:col + 25]!r}"
    return f"line {min(len(a), len(b)) + 1}: lines added or missing"


def main() -> int:
    check = "--check" in sys.argv[1:]
    problems = run(LAB, check)
    for p in problems:
        print(f"docs: {p}", file=sys.stderr)
    if problems:
        written = [p for p in problems if p.endswith("is written outside the course table's generated parts")]
        if written:  # make docs does not touch these: they are the text's own
            print("docs: a fact of the table written by hand stays wrong after make docs: say it without the "
                  "number or the list, or put it between course: markers with a generator in tests/course/docs.py",
                  file=sys.stderr)
        if len(written) < len(problems):
            print("docs: run make docs (after editing tests/course.ini, not the generated parts)" if check else
                  "docs: not every generated part could be written", file=sys.stderr)
        return 1
    print("docs: every generated part agrees with tests/course.ini and results/" if check else
          "docs: the generated parts of " + ", ".join(targets(LAB)) + " rewritten from tests/course.ini and results/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
