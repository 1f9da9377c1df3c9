#!/usr/bin/env python3
"""`make release`: the student copy of the lab in dist/lab and dist/lab.tar.gz.

Left out: every file whose name starts with `reference` (the instructor
solution), the planted faulty submissions and their self-test, and CI. Text
between `<!-- instructor-only -->` and `<!-- /instructor-only -->` in Markdown is
cut. Then the copy is checked: it has no reference file, it builds (IMPL=student
is its default), and its graders fail exactly the questions' tests: every test
that carries points fails, every test of weight 0 passes (GPU tests only where
a GPU is present; without one they are skipped, saying so).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness as h  # noqa: E402

INSTRUCTOR_FILES = {"tests/grading/faults.py", "tests/grading/selftest.py", "tests/grading/emulated.py", "TUNING.md",
                    "MAINTAINING.md"}
INSTRUCTOR_DIRS = (".ci/",)
# The measured results of the studies (results/<gpu>/: CSVs and figures) answer
# them; the scripts that make a student's own (results/*.py) stay.
RESULTS_FOLDERS = re.compile(r"^results/[^/]+/")
INSTRUCTOR_TEXT = re.compile(r"<!-- instructor-only -->.*?<!-- /instructor-only -->\n?", re.S)


def lab_files(lab: Path) -> list[str]:
    """The files of the lab: everything but builds, outputs and hidden folders,
    less what git ignores where git can tell."""
    files = sorted(p.relative_to(lab).as_posix() for p in lab.rglob("*") if p.is_file()
                   and not any(part in h.SKIP_NAMES or (part.startswith(".") and part != ".gitignore")
                               for part in p.relative_to(lab).parts))
    try:
        ignored = subprocess.run(["git", "check-ignore", "--stdin"], cwd=lab, input="\n".join(files),
                                 capture_output=True, text=True).stdout.split("\n")
    except OSError:
        ignored = []
    return [f for f in files if f not in set(ignored)]


def student_file(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return not (name.startswith("reference") or rel in INSTRUCTOR_FILES or rel.startswith(INSTRUCTOR_DIRS)
                or RESULTS_FOLDERS.match(rel))


def write_release(lab: Path, dist: Path) -> Path:
    target = dist / "lab"
    if target.exists():
        shutil.rmtree(target)
    for rel in filter(student_file, lab_files(lab)):
        src, dst = lab / rel, target / rel
        if not src.is_file():
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        if rel.endswith(".md"):
            dst.write_text(INSTRUCTOR_TEXT.sub("", src.read_text()))
            shutil.copymode(src, dst)
        else:
            shutil.copy2(src, dst)
    with tarfile.open(dist / "lab.tar.gz", "w:gz") as tar:
        tar.add(target, arcname="lab")
    return target


# What the student copy must not hold, looked for in its code (comments left
# out) and text: a diagonal search (a midpoint and a probe of B on the
# diagonal), the bitonic network's partners computed, and the studies' answers.
MIDPOINT = re.compile(r"\w+\s*\+\s*\(\s*\w+\s*-\s*\w+\s*\)\s*(/\s*2|>>\s*1)|\(\s*\w+\s*\+\s*\w+\s*\)\s*(/\s*2|>>\s*1)")
DIAGONAL_PROBE = re.compile(r"\[\s*\w+\s*-\s*1\s*-\s*\w+\s*\]")
NETWORK = re.compile(r"\^\s*\(\s*\w+\s*-\s*1\s*\)|\w+\s*\+\s*half\b")
ANSWER_FILES = ("TUNING.md",)


def code_lines(text: str) -> str:
    """C++ source without its // and /* */ comments and its string literals."""
    text = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(line.split("//", 1)[0] for line in text.splitlines())


def leaks(target: Path) -> list[str]:
    """Answers the student copy would give away."""
    found = []
    for path in sorted(target.rglob("*")):
        rel = path.relative_to(target).as_posix()
        if not path.is_file() or rel.startswith(("build/", "dist/")):
            continue
        if RESULTS_FOLDERS.match(rel) or rel in ANSWER_FILES:
            found.append(f"{rel}: measured results or tuning notes, which answer the studies")
            continue
        if path.suffix in (".cu", ".cuh", ".cpp", ".hpp"):
            code = code_lines(path.read_text(errors="replace"))
            if MIDPOINT.search(code) and DIAGONAL_PROBE.search(code):
                found.append(f"{rel}: a diagonal search (a midpoint and a probe B[k - 1 - i]), Q1's answer")
            if NETWORK.search(code):
                found.append(f"{rel}: the bitonic network's partners (i ^ (size - 1), i + half), X3's answer")
    return found


def check_release(target: Path, arch: str) -> list[str]:
    """What is wrong with the release; empty when it is right."""
    problems = [f"instructor file in the release: {p.relative_to(target)}" for p in target.rglob("reference*")]
    problems += leaks(target)
    problems += [f"instructor-only text left in {p.name}" for p in target.rglob("*.md")
                 if "instructor-only" in p.read_text()]
    build = subprocess.run(["make", "-j4", f"ARCH={arch}", "tests", *(p for p, _ in h.PARTS)], cwd=target,
                           capture_output=True, text=True)
    if build.returncode != 0:
        return problems + ["the release does not build:\n" + h.compile_errors(build.stdout + build.stderr)]
    harness_tests = subprocess.run([sys.executable, "tests/grading/test_harness.py"], cwd=target,
                                   capture_output=True, text=True)
    if harness_tests.returncode != 0:
        problems.append("the grading harness's tests fail in the release:\n" + harness_tests.stderr[-1500:])
    if not (target / "build" / "student" / "test_part1").exists():
        problems.append("the release did not build IMPL=student by default")
        return problems
    for part, _ in h.PARTS:
        questions = h.read_points(target, part)
        weights = {name: w for q in questions.values() for name, w in q.weights.items()}
        with tempfile.TemporaryDirectory() as tmp:
            report = Path(tmp) / "report.jsonl"
            subprocess.run([str(target / "build" / "student" / f"test_{part}")], cwd=target, capture_output=True,
                           env={**{k: v for k, v in os.environ.items() if not k.startswith("LAB_")},
                                "LAB_REPORT": str(report), "LAB_QUICK": "1"}, timeout=1800)
            ends = [e for e in map(json.loads, report.read_text().splitlines()) if e["event"] == "end"]
        for e in ends:
            name, status, w = e["test"], e["status"], weights.get(e["test"], 1.0)
            if status == "skipped":
                continue
            if w > 0 and status == "passed":
                problems.append(f"the untouched skeleton passes {name!r}, which carries points")
            if w == 0 and status != "passed":
                problems.append(f"the untouched skeleton fails {name!r} (weight 0): {e.get('failure', '')[:200]}")
        ran = {e["test"] for e in ends if e["status"] != "skipped"}
        skipped = len(ends) - len(ran)
        print(f"release check, {part}: {len(ran)} tests ran on the skeleton as expected"
              + (f", {skipped} GPU tests skipped (no GPU here)" if skipped else ""))
    return problems


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dist", default=str(h.LAB / "dist"))
    p.add_argument("--arch", default="native")
    args = p.parse_args()
    dist = Path(args.dist).resolve()
    dist.mkdir(parents=True, exist_ok=True)
    target = write_release(h.LAB, dist)
    print(f"wrote {target} and {dist / 'lab.tar.gz'}; checking it ...")
    problems = check_release(target, args.arch)
    for problem in problems:
        print("release: " + problem, file=sys.stderr)
    if problems:
        return 1
    print("release: OK (no reference files; builds as IMPL=student; the skeleton fails exactly the questions' tests)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
