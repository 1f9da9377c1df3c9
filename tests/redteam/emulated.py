#!/usr/bin/env python3
"""The CPU emulator (make EMULATE=1) held to what the GPU shows, on a machine
without one:

  python3 -m tests.redteam.emulated skeleton   the untouched skeleton fails exactly
                                               the tests that carry points (as on a GPU)
  python3 -m tests.redteam.emulated faults     each planted fault of faults.py,
                                               emulated: which ones the emulator
                                               catches as the GPU does [--only a,b]
  python3 -m tests.redteam.emulated device     make test EMULATE=1 fails, with
                                               nvcc's words, on a kernel that
                                               calls a host function (where
                                               nvcc is here)

Each test case runs in a process of its own, as the grading harness runs it.
Instructor-only (faults.py is): `make release` leaves it out.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.redteam import faults as F
from tests.grading.harness.building import compile_errors, copy_lab, place_files
from tests.grading.harness.course_table import LAB, PARTS, TestCase, all_questions, read_points, read_test_cases
from tests.grading.harness.judging import QuestionResult
from tests.grading.harness.reports import Outcome

JOBS = str(os.cpu_count() or 2)
CASE_TIMEOUT = 90  # the longest case (X4 at its graded sizes) takes about 10 s emulated alone, over 30 s on two busy cores


def make(folder: Path, *targets: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", f"-j{JOBS}", "EMULATE=1", "IMPL=student", *targets], cwd=folder,
                          capture_output=True, text=True)


def run_case(folder: Path, part: str, case: TestCase) -> tuple[str, str]:
    """(passed | failed | skipped, why) of one test case, in its own process."""
    binary = folder / "build" / "emu" / "student" / f"test_{part}"
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.jsonl"
        env = {**{k: v for k, v in os.environ.items() if not k.startswith(("LAB_", "EMU_"))},
               "LAB_REPORT": str(report), "LAB_SEED": "20121125", "EMU_SEED": "1"}
        try:
            r = subprocess.run([str(binary), case.name], cwd=folder, env=env, capture_output=True, text=True,
                               timeout=CASE_TIMEOUT)
            output = r.stdout + r.stderr
        except subprocess.TimeoutExpired:
            return "failed", f"did not finish in {CASE_TIMEOUT} s"
        ends = [e for e in map(json.loads, report.read_text().splitlines()) if e.get("event") == "end"] \
            if report.exists() else []
    if not ends:
        last = output.strip().splitlines()[-1:] or ["no output"]
        return "failed", f"ended without a verdict (exit {r.returncode}): {last[0][:200]}"
    e = ends[-1]
    return e["status"], e.get("failure", "")


def part_results(folder: Path, part: str) -> dict[str, tuple[str, str]]:
    return {c.name: run_case(folder, part, c) for c in read_test_cases(LAB, part, emulated=True) if not c.large}


def prepare(root: Path, files: dict[str, str]) -> Path:
    """A copy of the lab (no instructor files) with these student files."""
    folder = root / "lab"
    copy_lab(LAB, folder, exclude=(LAB / "build", LAB / "dist", LAB / "grade-results",
                                       LAB / "grades", LAB / "grade-selftest"))
    # The lab's own emulated objects, where built (make test EMULATE=1), with
    # their times: only the student files then compile.
    built = LAB / "build" / "emu"
    if (built / "obj").is_dir():
        shutil.copytree(built, folder / "build" / "emu", symlinks=True, copy_function=shutil.copy2,
                        ignore=lambda d, names: {"reference", "student"} & set(names) if Path(d) == built else set())
    place_files(folder, {rel: text.encode() for rel, text in files.items()})
    return folder


def check_skeleton() -> int:
    """Every test that carries points fails, every other passes: the rule
    the release check holds the skeleton to on a GPU."""
    problems = []
    with tempfile.TemporaryDirectory(prefix="lab-emulated-") as tmp:
        folder = prepare(Path(tmp), {})
        b = make(folder, "tests")
        if b.returncode != 0:
            print("the skeleton does not build emulated:\n" + compile_errors(b.stdout + b.stderr))
            return 1
        for part, _ in PARTS:
            weights = {n: w for q in read_points(LAB, part, emulated=True).values() for n, w in q.weights.items()}
            results = part_results(folder, part)
            for name, (status, why) in results.items():
                if weights.get(name, 1.0) > 0 and status != "failed":
                    problems.append(f"{part}: the skeleton's {name!r} {status} emulated; on a GPU it fails")
                if weights.get(name, 1.0) == 0 and status != "passed":
                    problems.append(f"{part}: the skeleton's {name!r} {status} emulated; on a GPU it passes ({why[:150]})")
            print(f"{part}: {sum(s == 'failed' for s, _ in results.values())} of {len(results)} tests fail emulated")
    for p in problems:
        print(p)
    print("skeleton, emulated: " + ("as on a GPU" if not problems else f"{len(problems)} difference(s)"))
    return 1 if problems else 0


def check_faults(only: set[str] | None, gpu_only: set[str] | None) -> int:
    """Each fault emulated, judged as selftest.py judges it on a GPU."""
    reference = F.reference_submission(LAB)
    questions = all_questions(LAB, emulated=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="lab-emulated-") as tmp:
        base = prepare(Path(tmp), reference)
        b = make(base, "tests")
        if b.returncode != 0:
            print("the reference as student files does not build emulated:\n" + compile_errors(b.stdout + b.stderr))
            return 1
        def grade(fault):
            t0 = time.monotonic()
            work = Path(tmp) / fault.name
            shutil.copytree(base, work, symlinks=True, copy_function=shutil.copy2)
            edited = F.apply(fault, reference)
            place_files(work, {rel: text.encode() for rel, text in edited.items() if text != reference.get(rel)})
            verdicts, caught = [], True
            meant_to_fail_build = all(v == "zero" for v in fault.expect.values())
            for part in fault.parts:
                built = make(work, f"build/emu/student/test_{part}").returncode == 0
                caught = caught and (built or meant_to_fail_build)  # inline PTX, Thrust: no emulated build
                results = part_results(work, part) if built else {}
                for qid, q in questions.items():
                    if q.part != part:
                        continue
                    # the [large] tier is not emulated: out of the split, as where it does not fit
                    outcomes = {c.name: Outcome(results.get(c.name, ("failed", ""))[0] if not c.large
                                                  else "not-graded") for c in q.tests}
                    score = QuestionResult(q, outcomes).score
                    want = fault.expect.get(qid, "full")
                    good = F.judge(want, score, q.points)
                    caught = caught and good
                    verdicts.append(f"{qid} {score:g}/{q.points:g} {want}{'' if good else ' (GPU differs)'}"
                                    + ("" if built else " [does not compile emulated]"))
            shutil.rmtree(work, ignore_errors=True)
            return (f"{fault.name:<16} {time.monotonic() - t0:5.0f} s  "
                    f"{'caught as on a GPU' if caught else 'GPU only'}:  {', '.join(verdicts)}"), caught

        chosen = [f for f in F.FAULTS if not only or f.name in only]
        # two at a time: one builds while the other runs its tests
        with ThreadPoolExecutor(max_workers=2) as pool:
            for fault, (line, caught) in zip(chosen, pool.map(grade, chosen)):
                rows.append((fault.name, caught))
                print(line, flush=True)
    missed = {n for n, c in rows if not c}
    print(f"\nemulated faults: {len(rows) - len(missed)} of {len(rows)} graded as on a GPU; "
          f"GPU only: {', '.join(sorted(missed)) or 'none'}")
    if gpu_only is not None and missed != (gpu_only & {n for n, _ in rows}):
        print(f"expected GPU only: {', '.join(sorted(gpu_only)) or 'none'}: the emulator changed")
        return 1
    return 0


# A kernel calling a host-only function: g++ takes it, so every emulated test
# can pass, but nvcc refuses it and the part scores 0 when graded.
HOST_CALL = ("extras_oddeven_bitonic/student.cu",
             [("    (void)data;\n    (void)n;\n    // [X3 ends]",
               "    (void)data;\n    (void)nextPow2(n);  // host-only\n    // [X3 ends]"),
              ("    // TODO(X3): launch bitonicBlock_k on one block (nothing when n <= 1).\n",
               "    if (n > 1) bitonicBlock_k<<<1, kMaxBlockSort / 2>>>(dData, n);\n")])


def check_device() -> int:
    """make test EMULATE=1's device check: silent on the skeleton, a failure
    naming the file and quoting nvcc on a kernel that calls a host function."""
    if not shutil.which("nvcc"):
        print("device check: no nvcc here, not checked")
        return 0
    path, edits = HOST_CALL
    text = (LAB / path).read_text()
    for find, replace in edits:
        if text.count(find) != 1:
            print(f"device check: the skeleton's {path} changed; update HOST_CALL")
            return 1
        text = text.replace(find, replace)
    problems = []
    with tempfile.TemporaryDirectory(prefix="lab-emulated-") as tmp:
        folder = prepare(Path(tmp), {})
        run = make(folder, "run-tests", "PART=extras")  # its tests fail, its file compiles
        if "nvcc compiles the kernel files of: extras" not in run.stdout:
            problems.append("the untouched skeleton: " + (run.stdout + run.stderr)[-600:])
        place_files(folder, {path: text.encode()})
        run = make(folder, "run-tests", "PART=extras")
        said = run.stdout + run.stderr
        if run.returncode == 0 or f"FAILED: nvcc does not compile {path}" not in said or "__host__" not in said:
            problems.append("a host function called from a kernel: " + said[-600:])
    for p in problems:
        print(p)
    print("device check: " + ("as it should" if not problems else f"{len(problems)} problem(s)"))
    return 1 if problems else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=["skeleton", "faults", "device"])
    p.add_argument("--only", help="comma-separated fault names")
    p.add_argument("--expect-gpu-only", help="faults: the comma-separated faults only a GPU grades right "
                                              "(exit 1 when the emulator's list differs)")
    args = p.parse_args()
    if args.what == "skeleton":
        return check_skeleton()
    if args.what == "device":
        return check_device()
    return check_faults(set(args.only.split(",")) if args.only else None,
                        set(args.expect_gpu_only.split(",")) if args.expect_gpu_only is not None else None)


if __name__ == "__main__":
    sys.exit(main())
