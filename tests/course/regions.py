#!/usr/bin/env python3
"""Skeleton and reference differ only inside their question regions.

Each student file and its reference mark the code a question asks for between
`// [Qn begins]` and `// [Qn ends]` lines (`[Xn ...]` for the bonus extras) (same questions, same order). Outside
them the two files must be the same text, apart from the opening comment, the
search header's name and the implementation's name (the same translation that
hands the reference in as student files, faults.reference_submission). So an
argument check, a message or an instantiation list lives once, in code both
builds share, and a student's edits outside the regions are never needed.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from tests.grading.harness.course_table import LAB, read_manifest

REGION = re.compile(r"^\s*// \[([QX][0-9]+(?:-[QX][0-9]+)?) (begins|ends)\]")
# (reference, student) of every student file of the course table: a student*
# file's twin is its reference* file.
PAIRS = [(f.replace("/student", "/reference", 1), f) for f in read_manifest(LAB)]


def skeleton_view(text: str) -> list[str]:
    """The lines outside the regions (each region a single `[Qn]` line), without
    the opening comment block. Raises ValueError on unbalanced markers."""
    lines = text.splitlines()
    while lines and lines[0].startswith("//") and not REGION.match(lines[0]):
        lines.pop(0)
    out, inside = [], None
    for number, line in enumerate(lines, 1):
        m = REGION.match(line)
        if m and m.group(2) == "begins":
            if inside:
                raise ValueError(f"line {number}: [{m.group(1)} begins] inside [{inside}]")
            inside = m.group(1)
            out.append(f"[{inside}]")
        elif m:
            if inside != m.group(1):
                raise ValueError(f"line {number}: [{m.group(1)} ends] without its begin")
            inside = None
        elif inside is None:
            out.append(line)
    if inside:
        raise ValueError(f"[{inside} begins] is never closed")
    return out


def region_bodies(text: str) -> list[tuple[str, int, list[str]]]:
    """Each question region of a text: its label, the line number of its
    `begins` marker, and the lines between the markers."""
    found, label, first, body = [], None, 0, []
    for number, line in enumerate(text.splitlines(), 1):
        m = REGION.match(line)
        if m and m.group(2) == "begins":
            label, first, body = m.group(1), number, []
        elif m and label:
            found.append((label, first, body))
            label = None
        elif label:
            body.append(line)
    return found


def problems(lab: Path) -> list[str]:
    import difflib

    from tests.redteam import faults

    translated = faults.reference_submission(lab)
    found = []
    for ref, stu in PAIRS:
        try:
            a = skeleton_view(translated[stu])
            b = skeleton_view((lab / stu).read_text())
        except ValueError as err:
            found.append(f"{ref} / {stu}: {err}")
            continue
        if not any(line.startswith(("[Q", "[X")) for line in b):
            found.append(f"{stu} has no question regions")
        if a != b:
            diff = "\n".join(list(difflib.unified_diff(a, b, ref, stu, lineterm="", n=1))[:30])
            found.append(f"{ref} and {stu} differ outside their question regions:\n{diff}")
    return found


if __name__ == "__main__":
    issues = problems(LAB)
    print("\n".join(issues) if issues else "skeletons and references differ only inside their question regions")
    sys.exit(1 if issues else 0)
