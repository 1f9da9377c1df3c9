#!/usr/bin/env python3
"""`make release`: the student copy of the lab in dist/lab and dist/lab.tar.gz.

Left out: every file whose name starts with `reference` (the instructor
solution), the planted faulty submissions and their self-test, this file, and the
instructors' CI (.ci/; the student's GitHub workflows in .github/ ship). Text
between `<!-- instructor-only -->` and `<!-- /instructor-only -->` in Markdown is
cut, and so are the course table's planted faults. Then the copy is checked: it has no reference file, no known answer and
no code shaped like a question region of the instructor files (leaks), it
builds (IMPL=student is its default), and its graders fail exactly the
questions' tests: every test that carries points fails, every test of weight 0
passes (GPU tests only where a GPU is present; without one they are skipped,
saying so).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tokenize
from pathlib import Path
from typing import NamedTuple

from tests.grading.harness.building import SKIP_NAMES, compile_errors
from tests.grading.harness.course_table import LAB, PARTS, read_points

# release.py itself: its searches below spell out the answers they look for.
INSTRUCTOR_FILES = {"tests/course/release.py", "TUNING.md", "INSTRUCTORS.md", "ARCHITECTURE.md"}
INSTRUCTOR_DIRS = (".ci/", "tests/redteam/")
# The measured results of the studies (results/<gpu>/: CSVs and figures) answer
# them; the scripts that make a student's own (results/*.py) stay.
RESULTS_FOLDERS = re.compile(r"^results/[^/]+/")
INSTRUCTOR_TEXT = re.compile(r"<!-- instructor-only -->.*?<!-- /instructor-only -->\n?", re.S)
# The course table's planted faults, between `# [instructor-only]` and `# [/instructor-only]`.
INSTRUCTOR_ROWS = re.compile(r"^# \[instructor-only\].*?^# \[/instructor-only\]\n?", re.S | re.M)


# Hidden files the student copy keeps: its .gitignore, and .github/ (the
# workflows that run the graders on the student's own repository).
SHIPPED_HIDDEN = {".gitignore", ".github"}


def lab_files(lab: Path) -> list[str]:
    """The files of the lab: everything but builds, outputs and hidden folders
    (SHIPPED_HIDDEN aside), less what git ignores where git can tell. In a
    repository, only what git tracks: a scratch file beside the lab (notes, a
    solution tried out) is not the course's, and is named as left out."""
    files = sorted(p.relative_to(lab).as_posix() for p in lab.rglob("*") if p.is_file()
                   and not any(part in SKIP_NAMES or (part.startswith(".") and part not in SHIPPED_HIDDEN)
                               for part in p.relative_to(lab).parts))
    try:
        ignored = set(subprocess.run(["git", "check-ignore", "--stdin"], cwd=lab, input="\n".join(files),
                                     capture_output=True, text=True).stdout.split("\n"))
        listed = subprocess.run(["git", "ls-files", "--cached"], cwd=lab, capture_output=True, text=True)
    except OSError:
        ignored, listed = set(), None
    files = [f for f in files if f not in ignored]
    tracked = set(listed.stdout.split("\n")) - {""} if listed is not None and listed.returncode == 0 else set()
    if tracked:  # a repository that holds the lab
        left = [f for f in files if f not in tracked]
        if left:
            print(f"release: left out {len(left)} file(s) git does not track: " + ", ".join(left[:5]) +
                  (", ..." if len(left) > 5 else ""))
        files = [f for f in files if f in tracked]
    return files


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
        if rel.endswith(".md") or rel == "tests/course.ini":
            dst.write_text(INSTRUCTOR_ROWS.sub("", INSTRUCTOR_TEXT.sub("", src.read_text())))
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


def leaks(target: Path, lab: Path | None = None) -> list[str]:
    """Answers the student copy would give away; with `lab` (a tree with the
    instructor files), also code shaped like its question regions (shape_leaks)."""
    found = shape_leaks(target, lab) if lab is not None else []
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


# ---------------------------------------------------------------- answers by shape
# The searches above know a few answers by their formulas. This one knows them
# all by their shape: every question region of the instructor files (the code
# between `// [Qn begins]` and `// [Qn ends]`, regions.py) is cut into
# statements, each normalized (comments, preprocessor lines and line breaks
# gone; names, type names included, one placeholder `$`; numbers `0`; strings
# `""`; `const` dropped; `a = 1, b = 2;` two statements), and a shipped text
# file holding SHAPE_RUN such statements in a row, as in one region, leaks that
# region's answer, however renamed or reformatted.
# Tuned on this lab. Statements of fewer than SHAPE_TOKENS tokens, `;` not
# counted (a brace, `else`, `return x;`, `__syncthreads();`, `(void)t;`,
# `x = y + 1;`), are too common to tell anything and are skipped, while a
# loop's header such as `while (lo < hi)` still counts; any value from 4 to 8
# gives the same verdicts here, 6 is the middle. SHAPE_RUN is 3: with 2, honest
# shipped code matches (Part 1's drawing bounds the diagonal as Q1's search
# does; lab_test.hpp instantiates templates as Q6's launcher does), while the
# naive merge sort that once shipped in part3_merge_sort/bench_peers.cu
# repeats three statements of Q6 in a row (a pass's run arithmetic) and is
# caught (test_harness.py).
SHAPE_RUN = 3
SHAPE_TOKENS = 6
SHAPE_TEXT = (".cu", ".cuh", ".cpp", ".hpp", ".h", ".inc", ".py", ".md")
REGION_FILES = (".cu", ".cuh", ".cpp", ".hpp", ".inc")
# Words that keep their name: C++'s (type names aside) and CUDA's built-ins.
KEPT_WORDS = frozenset("""
    alignas alignof asm break case catch class const_cast continue decltype default delete do dynamic_cast else enum
    explicit extern false for friend goto if inline mutable namespace new noexcept nullptr operator private protected
    public reinterpret_cast return sizeof static static_assert static_cast struct switch template this throw true try
    typedef typeid typename union using virtual while
    __global__ __device__ __host__ __shared__ __constant__ __restrict__ __launch_bounds__ __forceinline__
    threadIdx blockIdx blockDim gridDim warpSize __syncthreads __syncwarp __ballot_sync __any_sync __all_sync
    __shfl_sync __shfl_up_sync __shfl_down_sync __shfl_xor_sync __ffs __ffsll __popc __popcll __clz __clzll
    atomicAdd atomicSub atomicMin atomicMax atomicExch atomicCAS min max
""".split())
DROPPED_WORDS = frozenset({"const", "constexpr", "volatile", "register"})
C_TOKENS = re.compile(r"""
      (?P<skip>//[^\n]*|/\*.*?\*/|^[ \t]*\#(?:\\\n|[^\n])*)
    | (?P<text>"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')
    | (?P<number>\.?[0-9](?:[eEpP][+-]|[\w.])*)
    | (?P<word>[A-Za-z_]\w*)
    | (?P<op>::|->|\+\+|--|<<=|>>=|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^]=|\S)
""", re.X | re.S | re.M)
CONTROL = frozenset({"if", "for", "while", "switch"})  # their header (...) is a statement of its own
ALONE = frozenset({"else", "do", "try"})
CLOSES = {"(": ")", "[": "]", "{": "}"}
BLOCK_WORDS = frozenset({"struct", "class", "union", "enum", "namespace"})


class Statement(NamedTuple):
    text: str  # normalized tokens, space-separated
    line: int  # where it starts


class Region(NamedTuple):
    file: str
    label: str  # Q1, Q1-Q2, X3, ...
    statements: list[Statement]  # the body's, non-trivial, lines counted in the file


def python_segments(text: str) -> list[tuple[str, int]]:
    """Python source as C-like texts, each with its first line: the code
    (comments gone, `;` ending each logical line) and, apart, the contents of
    each run of adjacent string literals (a C++ snippet in a string is code).
    The whole text as one when Python cannot read it."""
    segments: list[list] = []  # [is a string, first line, pieces, line now]
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            name = tokenize.tok_name[tok.type]
            if name in ("COMMENT", "NL", "FSTRING_START", "FSTRING_END", "ENDMARKER"):
                continue
            string = name in ("STRING", "FSTRING_MIDDLE")
            piece = ";" if name == "NEWLINE" else tok.string
            if name == "STRING":
                s = tok.string.lstrip("rRbBuUfF")
                quote = s[:3] if s[:3] in ("'''", '"""') else s[:1]
                piece = s[len(quote):-len(quote)]
            if string:
                piece = re.sub(r"\\[ntr]", " ", piece)  # the escapes \n \t \r: spaces
            if not segments or segments[-1][0] != string:
                segments.append([string, tok.start[0], [], tok.start[0]])
            segment = segments[-1]
            segment[2].append("\n" * (tok.start[0] - segment[3]) + " " + piece)
            segment[3] = tok.end[0]
    except (tokenize.TokenError, SyntaxError):
        return [(text, 1)]
    return [("".join(pieces), first) for _, first, pieces, _ in segments]


def shape_tokens(text: str, suffix: str) -> list[tuple[str, int]]:
    """The normalized tokens of a text (not Python: python_segments), each with its line."""
    if suffix == ".md":  # prose: quotes are apostrophes, not strings; code ends at a backtick
        text = re.sub(r"<!--.*?-->", lambda m: "\n" * m.group().count("\n"), text, flags=re.S)
        text = text.replace("'", " ").replace('"', " ").replace("`", " ; ")
    tokens: list[tuple[str, int]] = []
    line, seen = 1, 0
    for m in C_TOKENS.finditer(text):
        line += text.count("\n", seen, m.start())
        seen = m.start()
        kind, tok = m.lastgroup, m.group()
        if kind == "skip" or tok in DROPPED_WORDS:
            continue
        tok = {"text": '""', "number": "0"}.get(kind, tok)
        if kind == "word":
            tok = tok if tok in KEPT_WORDS else "$"
            if len(tokens) >= 2 and tokens[-1][0] == "::" and tokens[-2][0] == "$":  # std::min, lab::x
                del tokens[-2:]
            if tok == "$" and tokens and tokens[-1][0] == "$":  # `long long x`, `Size x`: one name
                continue
        tokens.append((tok, line))
    return tokens


def _declarators(tokens: list[tuple[str, int]]) -> list[list[tuple[str, int]]]:
    """`a = 1, b = 2;` (names' types gone) as `a = 1;` and `b = 2;`."""
    words = [t for t, _ in tokens]
    cuts, level = [], 0
    for k, w in enumerate(words):
        level += w in CLOSES
        level -= w in CLOSES.values()
        if w == "," and level == 0 and words[k + 1:k + 3] == ["$", "="]:
            cuts.append(k)
    parts, start = [], 0
    for cut in cuts:
        parts.append(tokens[start:cut] + [(";", tokens[cut][1])])
        start = cut + 1
    return parts + [tokens[start:]]


def statements(tokens: list[tuple[str, int]]) -> list[Statement]:
    """Tokens cut into statements: up to a `;`, a block's `{` or `}`, a
    control header `if (...)`, `else`, `do`. An initializer's or a lambda
    argument's braces stay inside their statement."""
    out: list[Statement] = []
    cur: list[tuple[str, int]] = []
    depth = 0

    def flush() -> None:
        nonlocal cur
        if cur:
            out.extend(Statement(" ".join(t for t, _ in part), part[0][1]) for part in _declarators(cur) if part)
        cur = []

    i = 0
    while i < len(tokens):
        tok, line = tokens[i]
        if depth == 0 and tok in CONTROL and i + 1 < len(tokens) and tokens[i + 1][0] == "(":
            flush()
            level, j = 0, i + 1
            while j < len(tokens):
                level += tokens[j][0] == "("
                level -= tokens[j][0] == ")"
                if level == 0:
                    break
                j += 1
            cur = tokens[i:j + 1]
            flush()
            i = j + 1
            continue
        words = [t for t, _ in cur]
        block = tok == "{" and not (words and words[-1] in ("=", "return", "$", ",")
                                    and not BLOCK_WORDS.intersection(words))
        if depth == 0 and (tok in ALONE or block or tok == "}"):
            flush()
            out.append(Statement(tok, line))
        elif depth == 0 and tok == ";":
            cur.append((tok, line))
            flush()
        else:
            depth += tok in CLOSES
            depth = max(0, depth - (tok in CLOSES.values()))
            cur.append((tok, line))
        i += 1
    flush()
    return out


def shape_statements(text: str, suffix: str) -> list[Statement]:
    """A file's statements of SHAPE_TOKENS tokens or more (`;` not counted)."""
    segments = python_segments(text) if suffix == ".py" else [(text, 1)]
    return [s._replace(line=s.line + first - 1) for segment, first in segments
            for s in statements(shape_tokens(segment, suffix))
            if sum(t != ";" for t in s.text.split()) >= SHAPE_TOKENS]


def question_regions(lab: Path) -> list[Region]:
    """Every question region of the instructor files (files named reference*)."""
    from tests.course import regions

    found = []
    for path in sorted(lab.rglob("reference*")):
        rel = path.relative_to(lab).as_posix()
        if (not path.is_file() or path.suffix not in REGION_FILES
                or any(part in SKIP_NAMES or part.startswith(".") for part in rel.split("/"))):
            continue
        for label, first, body in regions.region_bodies(path.read_text(errors="replace")):
            found.append(Region(rel, label, [s._replace(line=s.line + first)
                                             for s in shape_statements("\n".join(body), path.suffix)]))
    return found


def shape_leaks(target: Path, lab: Path) -> list[str]:
    """Shipped text files of `target` holding SHAPE_RUN statements in a row
    shaped as in one question region of `lab`'s instructor files: one line per
    file and region, naming both and the run's lines in each."""
    regions_found = question_regions(lab)
    runs: dict[tuple[str, ...], tuple[int, int]] = {}  # SHAPE_RUN statements -> (region, where in it)
    for r, region in enumerate(regions_found):
        texts = [s.text for s in region.statements]
        for k in range(len(texts) - SHAPE_RUN + 1):
            runs.setdefault(tuple(texts[k:k + SHAPE_RUN]), (r, k))
    found = []
    for path in sorted(target.rglob("*")):
        rel = path.relative_to(target).as_posix()
        if not path.is_file() or path.suffix not in SHAPE_TEXT or rel.startswith(("build/", "dist/")):
            continue
        shipped = shape_statements(path.read_text(errors="replace"), path.suffix)
        texts = [s.text for s in shipped]
        reported = set()
        for k in range(len(texts) - SHAPE_RUN + 1):
            hit = runs.get(tuple(texts[k:k + SHAPE_RUN]))
            if hit is None or hit[0] in reported:
                continue
            region = regions_found[hit[0]]
            length = SHAPE_RUN
            while (k + length < len(texts) and hit[1] + length < len(region.statements)
                   and texts[k + length] == region.statements[hit[1] + length].text):
                length += 1
            reported.add(hit[0])
            found.append(f"{rel}:{shipped[k].line}-{shipped[k + length - 1].line}: {length} statements in a row "
                         f"shaped as in question region {region.label} of {region.file} (its lines "
                         f"{region.statements[hit[1]].line}-{region.statements[hit[1] + length - 1].line}): "
                         f"that region's answer, whatever its names and layout")
    return found


STARTED = time.monotonic()


def progress(step: str) -> None:
    """A line per step of make release, with the minutes since it began."""
    print(f"release: {step} ... ({(time.monotonic() - STARTED) / 60:.1f} min so far)", flush=True)


def check_release(target: Path, arch: str, lab: Path = LAB) -> list[str]:
    """What is wrong with the release of `lab`; empty when it is right."""
    progress("looking for instructor files and leaked answers")
    problems = [f"instructor file in the release: {p.relative_to(target)}" for p in target.rglob("reference*")]
    problems += leaks(target, lab)
    problems += [f"instructor-only text left in {p.name}" for p in [*target.rglob("*.md"), target / "tests/course.ini"]
                 if p.exists() and "instructor-only" in p.read_text()]
    problems += [f"{rel} is not in the release" for rel in (".github/workflows",)
                 if (lab / rel).is_dir() and not (target / rel).is_dir()]
    progress("building the copy (its test programs and demos, as IMPL=student)")
    build = subprocess.run(["make", "-j4", f"ARCH={arch}", "tests", *(p for p, _ in PARTS)], cwd=target,
                           capture_output=True, text=True)
    if build.returncode != 0:
        return problems + ["the release does not build:\n" + compile_errors(build.stdout + build.stderr)]
    progress("the grading harness's own tests, in the copy")
    harness_tests = subprocess.run([sys.executable, "-m", "tests.grading.test_harness"], cwd=target,
                                   capture_output=True, text=True)
    if harness_tests.returncode != 0:
        problems.append("the grading harness's tests fail in the release:\n" + harness_tests.stderr[-1500:])
    if not (target / "build" / "student" / "test_part1").exists():
        problems.append("the release did not build IMPL=student by default")
        return problems
    for part, _ in PARTS:
        questions = read_points(target, part)
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
              + (f", {skipped} GPU tests skipped (no GPU here)" if skipped else ""), flush=True)
    return problems


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dist", default=str(LAB / "dist"))
    p.add_argument("--arch", default="native")
    args = p.parse_args()
    dist = Path(args.dist).resolve()
    dist.mkdir(parents=True, exist_ok=True)
    progress("writing the copy")
    target = write_release(LAB, dist)
    print(f"wrote {target} and {dist / 'lab.tar.gz'}; checking it ...", flush=True)
    problems = check_release(target, args.arch)
    for problem in problems:
        print("release: " + problem, file=sys.stderr)
    if problems:
        return 1
    print("release: OK (no reference files; no answer found, by formula or by the shape of a question region; "
          "builds as IMPL=student; the skeleton fails exactly the questions' tests), "
          f"in {(time.monotonic() - STARTED) / 60:.1f} minutes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
