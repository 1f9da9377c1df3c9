#!/usr/bin/env python3
"""Grades the planted faulty submissions (faults.py), the reference handed in as
a student's files, and the untouched skeleton, on this machine's GPU, and checks
that every question gets the points it must. A fault is graded on the parts it
edits; the other parts are the reference's, graded once with it.

  python3 -m tests.redteam.selftest [--only hang,crash] [--no-large] [--no-class] [--arch sm_90] [--out dir]
                                    [--beside-hog] [--class-size 16 [--resume]]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.course import table as course
from tests.redteam import attacks as A
from tests.redteam import faults as F
from tests.grading import grade as G
from tests.grading.harness.building import prepare_base, prepare_work, tree_hash, verify_base
from tests.grading.harness.course_table import GradingError, LAB, PARTS, all_questions
from tests.grading.harness.gpus import lease, probe_gpu, visible_gpus
from tests.grading.harness.options import Options
from tests.grading.harness.pcie import Meter
from tests.grading.harness.pipeline import grade_one
from tests.grading.harness.running import Grading
from tests.grading.harness.sanitizers import SLOW_RUN_NOTE
from tests.grading.harness.trusted import TrustedRuns


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", help="comma-separated names (reference, skeleton, or faults)")
    p.add_argument("--arch", default="native")
    p.add_argument("--out", default="grade-selftest")
    p.add_argument("--timeout-scale", default="1")
    p.add_argument("--timing", action="store_true", help="also grade the reference with TIMING=1 and print its note")
    p.add_argument("--no-class", action="store_true", help="leave out the class of four graded with grade-all")
    p.add_argument("--no-large", action="store_true", help="leave out the [large] tier (faster; the index32 faults "
                                                         "then grade full)")
    p.add_argument("--beside-hog", action="store_true", help="also grade the reference (make grade) while another "
                   "make grade's tests hold the GPU's memory: full marks, on this machine's GPUs")
    p.add_argument("--class-size", type=int, default=0, help="also grade a class of this many (references, faults, "
                   "the skeleton, attacks) with make grade-all, sanitizers on: students per GPU-hour")
    p.add_argument("--resume", action="store_true", help="keep what --out holds: the base build, and the class's "
                   "grade-all records, so that an interrupted --class-size run grades only the students left")
    args = p.parse_args()
    out = Path(args.out).resolve()
    if out.exists() and not args.resume:
        shutil.rmtree(out)
    (out / "work").mkdir(parents=True, exist_ok=True)  # the copies and the trusted runs' folders, whatever --only picks

    reference = F.reference_submission(LAB)
    skeleton = F.skeleton_submission(LAB)
    cases = [("reference", reference, {q: "full" for q in all_questions(LAB)}, None, False, None),
             ("skeleton", {}, {q: "zero" for q in all_questions(LAB)}, None, False, None),
             ("reference-sanitized", reference, {q: "full" for q in all_questions(LAB)}, None, True, None)]
    for f in F.FAULTS:
        cases.append((f.name, F.apply(f, reference), f.expect, f.parts, f.sanitize, None))
    for a in A.ATTACKS:
        files = {rel: text.replace("{LAB}", str(LAB)).replace("{OUT}", str(out)).replace("{SELF}", a.name)
                 for rel, text in a.make(LAB, skeleton, reference).items()}
        cases.append((a.name, files, a.expect, a.parts, a.sanitize, a.noted))
    if args.only:
        wanted = set(args.only.split(","))
        cases = [c for c in cases if c[0] in wanted]

    def options(parts, sanitize, timing=False):
        ns = argparse.Namespace(timeout=None, timeout_scale=args.timeout_scale, build_timeout=None,
                                sanitize="1" if sanitize else "0", no_large="1" if args.no_large else None, arch=args.arch,
                                parts=",".join(parts) if parts else None, seed="20121125",
                                out=str(out), base=None, timing="1" if timing else None,
                                work_root=str(out / "work"), case_jobs=os.environ.get("CASE_JOBS"))
        return Options(ns)

    base = prepare_base(out / "base", options(None, False), print)
    ok, gpu, _ = probe_gpu(base, {})
    if not ok:
        print(f"selftest: {gpu}; it needs a GPU")
        return 1

    # Build every submission at once (CPU, sandboxed as grading builds), then
    # grade them one after another (GPU).
    sandbox_opts = options(None, False)
    lab_before = tree_hash(LAB / "part1_merge_path") + (LAB / "Makefile").read_text()

    def build(case):
        name, files, _, parts, *_ = case
        folder = out / "submissions" / name
        shutil.rmtree(folder, ignore_errors=True)  # (--resume: written again)
        folder.mkdir(parents=True)
        write_files(folder, files)
        work = out / "work" / name
        prepare_work(folder, base, work)
        g = Grading(work, out, sandbox_opts, {}, print, name)
        for part in parts or [p for p, _ in PARTS]:
            part_dir = dict(PARTS)[part]
            g.build(f"build/student/{part_dir}/student.o", out / "work" / f"{name}-{part}.build.log")
        return folder, work

    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=4) as pool:
        built = list(pool.map(build, cases))
    print(f"built {len(cases)} submissions in {time.monotonic() - t0:.0f} s on {gpu[5:]}")

    rows, failures = [], 0
    trusted = TrustedRuns(base, options(None, False), out / "trusted-logs")  # one seed: one trusted run for all
    for (name, _, expect, parts, sanitize, noted), (folder, work) in zip(cases, built):
        t1 = time.monotonic()
        timing = args.timing and name == "reference"
        with lease(visible_gpus()[:1], 3600) as gpu_env, Meter(visible_gpus()[0][1]) as meter:  # as make grade
            data = grade_one(folder, out / "results" / name, base, options(parts, sanitize, timing), name,
                             lambda m: None, gpu_env, work=work, trusted=trusted)
        moved = f"[PCIe {meter.bytes >> 20} MiB]" if meter.bytes is not None else ""
        if timing:
            note = json.loads((out / "results" / name / "results.json").read_text())["output"]
            print("\n".join(line for line in note.splitlines() if line.startswith("speed")))
        questions = all_questions(LAB)
        verdicts = []
        for qid, q in questions.items():
            if parts and q.part not in parts:
                continue
            score = data["questions"][qid]["score"]
            want = expect.get(qid, "full")
            good = F.judge(want, score, q.points)
            failures += not good
            verdicts.append(f"{qid} {score:g}/{q.points:g} {want}{'' if good else ' WRONG'}")
        traffic = out / "results" / name / "logs" / "pcie.tsv"
        if traffic.exists():
            moved += " [" + ", ".join(f"{k} {int(v) >> 20} MiB" for k, v in
                                      (ln.split("\t") for ln in traffic.read_text().splitlines())) + "]"
        report = (out / "results" / name / "results.json").read_text()
        if SLOW_RUN_NOTE in report:
            moved += " (noted: a sanitized run's time)"
        if noted is not None and noted not in report:
            failures += 1
            moved += f" (WRONG: no note saying {noted!r})"
        rows.append(f"{name:<16} {time.monotonic() - t1:6.0f} s {moved} " + ", ".join(verdicts))
        print(rows[-1], flush=True)
    trusted.close()
    failures += check_no_side_effects(out, base, lab_before, cases)
    if not args.no_class:
        failures += grade_a_class(out, base, options(None, False), reference, skeleton)
    if args.beside_hog:
        failures += grade_beside_a_hog(out, base, args.arch, reference)
    if args.class_size:
        failures += grade_a_large_class(out, base, args.arch, args.class_size, reference, skeleton, args.no_large)
    print(f"\n{len(cases)} submissions graded; {failures} question(s) or check(s) other than expected")
    return 1 if failures else 0


def check_no_side_effects(out: Path, base: Path, lab_before: str, cases) -> int:
    """After every grading (and the daemons' delay): the lab, the base build and
    every other result are as the harness left them."""
    time.sleep(6)
    problems = []
    if tree_hash(LAB / "part1_merge_path") + (LAB / "Makefile").read_text() != lab_before:
        problems.append("the lab's files changed")
    try:
        verify_base(base)
    except GradingError as err:
        problems.append(str(err))
    for marker in ("HOSTILE-WAS-HERE", "DAEMON-OUTLIVED-ITS-TEST"):
        if (out / marker).exists():
            problems.append(f"{marker} exists")
    for name, *_ in cases:
        results = out / "results" / name / "results.json"
        summary = json.loads((out / "results" / name / "summary.json").read_text())
        if json.loads(results.read_text())["score"] != summary["score"]:
            problems.append(f"{name}'s results.json was rewritten")
        for log in (out / "results" / name / "logs").glob("*.log"):
            if "HOSTILE-" in log.read_text(errors="replace"):
                problems.append(f"{name}: {log.name} says a hostile write or read succeeded")
    print("side effects of the hostile submissions: " + ("; ".join(problems) if problems else "none"))
    return len(problems)


def grade_a_class(out: Path, base: Path, opts, reference: dict, skeleton: dict) -> int:
    """make grade-all's path on a class of four, three of them hostile to the
    harness (a report replaced by a named pipe, a test that takes what it can
    of the machine, a compile bomb): the class ends, each hostile part fails
    with its reason, and the reference gets what it gets alone."""
    cls = out / "class"
    attacks = {a.name: a.make(LAB, skeleton, reference) for a in A.ATTACKS
               if a.name in ("report-pipe", "resource-hog", "include-bomb")}
    members = {"alice": reference, "pipe": attacks["report-pipe"], "hog": attacks["resource-hog"],
               "bomb": attacks["include-bomb"]}
    for name, files in members.items():
        write_files(cls / name, files)
    grades = out / "class-grades"
    args = ["grade-all", "--submissions", str(cls), "--out", str(grades), "--seed", "20121125", "--sanitize", "0",
            "--arch", opts.arch, "--work-root", str(out / "work"), "--base", str(base), "--no-large", "1"]
    started = time.monotonic()
    status = G.main(args)
    seconds = time.monotonic() - started
    book = {line.split(",")[0].strip('"'): line.split(",")[1] for line in (grades / "gradebook.csv").read_text().splitlines()[1:]}
    # Full marks with the bonus; the hog and the bomb lose Part 1 to their limits.
    table = course.load(LAB)
    full = table.code_points() + table.code_points(bonus=True)
    lost = sum(q.points for q in table.questions_of("part1"))
    want = {"alice": course.points(full), "pipe": course.points(full), "hog": course.points(full - lost),
            "bomb": course.points(full - lost)}
    ok = status == 0 and all(book.get(k, "") == v for k, v in want.items())
    reasons = {}
    for name in ("hog", "bomb"):
        result = json.loads((grades / name / "results.json").read_text())
        q1 = next((t for t in result["tests"] if t["name"].startswith("Q1")), {})
        reasons[name] = q1.get("output", "")[:160].replace("\n", " ")
    print(f"grade-all, a class of four in {seconds:.0f} s: gradebook {book}, expected scores {want}: "
          f"{'ok' if ok else 'WRONG'}")
    for name, reason in reasons.items():
        print(f"  {name}'s Q1: {reason}")
    return 0 if ok else 1

def grade_command(base: Path, arch: str, submission: Path, out: Path, *more: str) -> list[str]:
    """make grade's command line for `submission`, results into `out` (run in the lab's folder)."""
    return [sys.executable, "-m", "tests.grading.grade", "grade", "--base", str(base), "--arch", arch,
            "--seed", "20121125", "--out", str(out), "--work-root", str(out.parent), "--submission", str(submission),
            *more]


def write_files(folder: Path, files: dict) -> Path:
    """A submission's files (relative path -> text) written into `folder`."""
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder


def grade_beside_a_hog(out: Path, base: Path, arch: str, reference: dict) -> int:
    """Two make grades at once: a classmate whose every test process holds all
    of the GPU's free memory for 20 s (Part 1, sanitizers off), and the
    reference (every part, sanitizers on) started 5 s later. The reference
    must get full marks: it waits for the GPU the hog's grading holds, or
    takes another."""
    hog = write_files(out / "beside" / "hog", {**reference, F.P1: F._with_prelude(reference[F.P1], A.GPU_HOG)})
    honest = write_files(out / "beside" / "honest", reference)
    started = time.monotonic()
    first = subprocess.Popen(grade_command(base, arch, hog, out / "beside" / "hog-grade", "--parts", "part1",
                                           "--sanitize", "0"),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=LAB)
    time.sleep(5)
    second = subprocess.run(grade_command(base, arch, honest, out / "beside" / "honest-grade"),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=LAB)
    honest_seconds = time.monotonic() - started
    first_out = first.communicate()[0]
    table = course.load(LAB)
    full = table.code_points() + table.code_points(bonus=True)
    scores = {}
    for name in ("hog", "honest"):
        path = out / "beside" / f"{name}-grade" / "summary.json"
        scores[name] = json.loads(path.read_text())["score"] if path.exists() else None
    waited = "waiting for a GPU" in second.stdout
    # The hog must have been graded too: a hog that never ran proves nothing.
    ok = (second.returncode == 0 and scores["honest"] is not None and abs(scores["honest"] - full) < 1e-6
          and first.returncode == 0 and scores["hog"] is not None)
    print(f"beside a GPU-memory hog ({len(visible_gpus())} GPU(s)): the reference {scores['honest']} of "
          f"{course.points(full)} after {honest_seconds:.0f} s ({'waited for' if waited else 'did not wait for'} "
          f"the hog's grading), the hog {scores['hog']} (exit {first.returncode}): {'ok' if ok else 'WRONG'}")
    if not ok:
        print("  the reference's grading:\n  " + "\n  ".join(second.stdout.splitlines()[-20:]))
        print("  the hog's grading:\n  " + "\n  ".join(first_out.splitlines()[-20:]))
    return 0 if ok else 1


def grade_a_large_class(out: Path, base: Path, arch: str, size: int, reference: dict, skeleton: dict,
                        no_large: bool) -> int:
    """make grade-all of a class of `size` with the default options
    (sanitizers on; the [large] tier too unless `no_large`) on this machine's
    GPUs: two skeletons, two attacks, a planted fault in each part, the rest
    the reference; students per GPU-hour and where the time went. The
    references must get full marks."""
    cls = out / "large-class"
    attacks = {a.name: a for a in A.ATTACKS}
    members: dict[str, dict] = {"skeleton-1": skeleton, "skeleton-2": skeleton}
    members["exit-rewriter"] = attacks["exit-rewriter"].make(LAB, skeleton, reference)
    members["host-pool"] = attacks["host-pool"].make(LAB, skeleton, reference)
    for part, _ in PARTS:  # a fault that a test finds (not the build, a hang, a tool or the [large] tier)
        f = next(f for f in F.FAULTS if f.parts == [part] and not f.sanitize
                 and f.name not in ("compile-error", "hang") and not f.name.startswith("index32"))
        members[f"fault-{f.name}"] = F.apply(f, reference)
    for i in range(size - len(members)):
        members[f"reference-{i + 1}"] = reference
    for name, files in members.items():
        (cls / name).mkdir(parents=True, exist_ok=True)
        write_files(cls / name, files)
    grades = out / "large-class-grades"
    gpus = len(visible_gpus())
    started, wall = time.monotonic(), time.time()
    status = G.main(["grade-all", "--submissions", str(cls), "--out", str(grades), "--seed", "20121125",
                     "--arch", arch, "--work-root", str(out / "work"), "--base", str(base),
                     *(["--no-large", "1"] if no_large else [])])
    seconds = time.monotonic() - started
    table = course.load(LAB)
    full = table.code_points() + table.code_points(bonus=True)
    summaries = {n: json.loads((grades / n / "summary.json").read_text()) for n in members
                 if (grades / n / "summary.json").exists()}
    wrong = [n for n in members if n.startswith("reference-") and
             abs(summaries.get(n, {}).get("score", -1) - full) > 1e-6]
    phases: dict[str, float] = {}
    for n in summaries:
        for line in (grades / n / "logs" / "phases.tsv").read_text().splitlines():
            name, sec = line.split("\t")
            phases[name] = phases.get(name, 0.0) + float(sec)
    graded = len(summaries)
    for n in summaries:
        traffic = grades / n / "logs" / "pcie.tsv"
        print(f"  {n}: {summaries[n]['score']:g}" + (", PCIe " + ", ".join(
            f"{k} {int(v) >> 20} MiB" for k, v in (ln.split("\t") for ln in traffic.read_text().splitlines()))
            if traffic.exists() else ""))
    now = sum((grades / n / "summary.json").stat().st_mtime >= wall for n in summaries)  # not earlier (--resume)
    print(f"grade-all, a class of {size} on {gpus} GPU(s), sanitizers on, [large] tier "
          f"{'off' if no_large else 'on'}: {graded} graded, {now} of them in "
          f"{seconds:.0f} s, {now / (seconds / 3600) / gpus:.0f} students per GPU-hour; summed over the gradings: "
          + ", ".join(f"{k} {v:.0f} s" for k, v in phases.items())
          + (f"; references not full: {wrong}" if wrong else ""))
    return 0 if status == 0 and not wrong and graded == size else 1


if __name__ == "__main__":
    sys.exit(main())
