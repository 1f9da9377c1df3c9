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

Each test case runs through the harness's emulated runner (run_emulated), as
make check-submission and Gradescope's feedback run it: sandboxed, in a
process of its own, its report on a pipe.
Instructor-only (faults.py is): `make release` leaves it out.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.redteam import faults as F
from tests.grading import grade
from tests.grading.harness.building import build_emulated, compile_errors, copy_lab, place_files
from tests.grading.harness.course_table import LAB, PARTS, all_questions, read_points, read_test_cases
from tests.grading.harness.judging import QuestionResult
from tests.grading.harness.options import Options
from tests.grading.harness.reports import Outcome
from tests.grading.harness.running import Grading, run_emulated, run_emulated_cases
from tests.grading.harness.schedulers.gradescope import emulated_copy

JOBS = str(os.cpu_count() or 2)
SEEDS = {"LAB_SEED": "20121125", "EMU_SEED": "1"}  # the inputs and the emulator's schedule the expectations hold for


def make(folder: Path, *targets: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", f"-j{JOBS}", "EMULATE=1", "IMPL=student", *targets], cwd=folder,
                          capture_output=True, text=True)


def grading(work: Path, name: str) -> Grading:
    """A grading of the copy `work` as make check-submission grades one (the
    harness's emulated runner, run_emulated: each test case sandboxed in a
    process of its own, its report on a pipe), its logs in work/logs."""
    opts = Options(grade.parser().parse_args(["check-submission", "--budget", "36000", "--case-jobs", "1",
                                              "--out", str(work / "logs")]))
    opts.sandbox.own(work)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LAB_", "EMU_"))}
    (work / "logs").mkdir(exist_ok=True)
    return Grading(work, work / "logs", opts, {**env, **SEEDS, "NO_COLOR": "1"}, lambda *_: None, name)


def prepare(root: Path, files: dict[str, str], build: bool = True) -> Path:
    """A copy of the lab (no instructor files) with these student files, its
    emulated test programs built (with `build`)."""
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
    b = make(folder, "tests") if build else None
    if b is not None and b.returncode != 0:
        raise RuntimeError(compile_errors(b.stdout + b.stderr))
    return folder


def check_skeleton() -> int:
    """Every test that carries points fails, every other passes: the rule
    the release check holds the skeleton to on a GPU."""
    problems = []
    with tempfile.TemporaryDirectory(prefix="lab-emulated-") as tmp:
        try:
            folder = prepare(Path(tmp), {})
        except RuntimeError as err:
            print(f"the skeleton does not build emulated:\n{err}")
            return 1
        g = grading(folder, "skeleton")
        for part, _ in PARTS:
            weights = {n: w for q in read_points(LAB, part, emulated=True).values() for n, w in q.weights.items()}
            cases = [c for c in read_test_cases(LAB, part, emulated=True) if not c.large]
            results = {c.name: run_emulated(g, part, c, g.logs / f"{part}-{i + 1}.log") for i, c in enumerate(cases)}
            for name, o in results.items():
                if weights.get(name, 1.0) > 0 and o.status != "failed":
                    problems.append(f"{part}: the skeleton's {name!r} {o.status} emulated; on a GPU it fails")
                if weights.get(name, 1.0) == 0 and o.status != "passed":
                    problems.append(f"{part}: the skeleton's {name!r} {o.status} emulated; on a GPU it passes "
                                    f"({o.message[:150]})")
            print(f"{part}: {sum(o.status == 'failed' for o in results.values())} of {len(results)} tests fail emulated")
        shutil.rmtree(g.private, ignore_errors=True)
    for p in problems:
        print(p)
    print("skeleton, emulated: " + ("as on a GPU" if not problems else f"{len(problems)} difference(s)"))
    return 1 if problems else 0


def check_faults(only: set[str] | None, gpu_only: set[str] | None) -> int:
    """Each fault emulated, judged as selftest.py judges it on a GPU: built
    and run by the harness's emulated runner (build_emulated without the
    device check, run_emulated_cases), scored by its QuestionResult."""
    reference = F.reference_submission(LAB)
    questions = all_questions(LAB, emulated=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="lab-emulated-") as tmp:
        try:
            base = prepare(Path(tmp), reference)
        except RuntimeError as err:
            print(f"the reference as student files does not build emulated:\n{err}")
            return 1

        def grade_fault(fault):
            t0 = time.monotonic()
            work = Path(tmp) / fault.name
            emulated_copy(base, work, {rel: text.encode() for rel, text in F.apply(fault, reference).items()})
            g = grading(work, fault.name)
            verdicts, caught = [], True
            meant_to_fail_build = all(v == "zero" for v in fault.expect.values())
            try:
                for part in fault.parts:
                    error, _ = build_emulated(g, part, int(JOBS), device=False)
                    built = not error
                    caught = caught and (built or meant_to_fail_build)  # inline PTX, Thrust: no emulated build
                    results = {qid: QuestionResult(q, {}) for qid, q in questions.items() if q.part == part}
                    if built:
                        run_emulated_cases(g, results, [part])
                    for qid, r in results.items():
                        # the [large] tier is not emulated: out of the split, as where it does not fit
                        r.outcomes.update({c.name: Outcome("not-graded") for c in r.question.tests if c.large})
                        want = fault.expect.get(qid, "full")
                        good = F.judge(want, r.score, r.question.points)
                        caught = caught and good
                        verdicts.append(f"{qid} {r.score:g}/{r.question.points:g} {want}"
                                        f"{'' if good else ' (GPU differs)'}"
                                        + ("" if built else " [does not compile emulated]"))
            finally:
                shutil.rmtree(g.private, ignore_errors=True)
                shutil.rmtree(work, ignore_errors=True)
            return (f"{fault.name:<16} {time.monotonic() - t0:5.0f} s  "
                    f"{'caught as on a GPU' if caught else 'GPU only'}:  {', '.join(verdicts)}"), caught

        chosen = [f for f in F.FAULTS if not only or f.name in only]
        # two at a time: one builds while the other runs its tests
        with ThreadPoolExecutor(max_workers=2) as pool:
            for fault, (line, caught) in zip(chosen, pool.map(grade_fault, chosen)):
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
        folder = prepare(Path(tmp), {}, build=False)
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
