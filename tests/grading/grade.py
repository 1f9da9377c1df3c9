#!/usr/bin/env python3
"""Grades submissions of the lab. The Makefile's entry points call it:

  make grade [SUBMISSION=path] [GRADE_OUT=dir] [TIMEOUT=s] [SANITIZE=1] [SEED=n]
  make grade-all SUBMISSIONS=dir [GRADES=dir]
  make gradescope

`python3 tests/grading/grade.py --help` lists every option. How grading works is
in the README (For instructors) and the handout (How your work is graded).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import queue
import secrets
import shutil
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness as h  # noqa: E402

PROBE_TIMEOUT = 60
DEMO_TIMEOUT = 600  # one demo's timing tables (TIMING=1)
# Fewer runs and a smaller Q7 study than make bench: a ratio, not a figure to publish.
DEMO_ARGS = ["--no-draw", "--runs", "3"]
DEMO_EXTRA = {"part3": ["--max-log2", "22"]}


# ---------------------------------------------------------------- options


class Options:
    def __init__(self, args):
        self.timeout = _positive("TIMEOUT", args.timeout) if args.timeout not in (None, "") else None
        self.timeout_scale = _positive("TIMEOUT_SCALE", args.timeout_scale or "1")
        self.build_timeout = _positive("BUILD_TIMEOUT", args.build_timeout or "900")
        self.sanitize = _flag("SANITIZE", args.sanitize)
        self.large = not _flag("NO_LARGE", args.no_large)
        self.arch = args.arch or "native"
        self.timing = _flag("TIMING", args.timing)
        self.outputs = [Path(p).resolve() for p in (args.out, args.base) if p]  # never copied into a lab copy
        self.jobs = str(os.cpu_count() or 2)
        self.parts = [p for p, _ in h.PARTS] if not args.parts else args.parts.split(",")
        for p in self.parts:
            if p not in dict(h.PARTS):
                raise h.GradingError(f"PARTS: unknown part {p!r} (parts: {', '.join(p for p, _ in h.PARTS)})")
        if args.seed not in (None, ""):
            if not args.seed.isdigit():
                raise h.GradingError(f"SEED must be a non-negative whole number, got {args.seed!r}")
            self.seed = int(args.seed)
        else:
            self.seed = secrets.randbelow(2**31)  # new inputs each grading: no answer can be prepared
        if self.sanitize and shutil.which("compute-sanitizer") is None:
            raise h.GradingError("SANITIZE=1 needs compute-sanitizer (CUDA toolkit) on the PATH")

    def timeout_for(self, q: h.Question) -> float:
        return self.timeout if self.timeout is not None else q.timeout * self.timeout_scale


def _positive(name, text) -> float:
    try:
        value = float(text)
    except ValueError:
        raise h.GradingError(f"{name} must be a number of seconds > 0, got {text!r}") from None
    if not value > 0:
        raise h.GradingError(f"{name} must be > 0, got {text!r}")
    return value


def _flag(name, text) -> bool:
    if text in (None, "", "0"):
        return False
    if text == "1":
        return True
    raise h.GradingError(f"{name} must be 0 or 1, got {text!r}")


# ---------------------------------------------------------------- the base build


def lab_fingerprint(lab: Path, exclude: list[Path]) -> str:
    """Changes whenever a file the pristine copy holds changes."""
    digest = hashlib.sha256()
    for root, dirs, names in os.walk(lab):
        dirs[:] = sorted(d for d in dirs if d not in h.SKIP_NAMES and not d.startswith((".", "reference"))
                         and (Path(root) / d).resolve() not in exclude)
        for name in sorted(names):
            if not name.startswith((".", "reference")):
                path = Path(root) / name
                digest.update(str(path.relative_to(lab)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def prepare_base(base: Path, opts: Options, log) -> Path:
    """A pristine copy of the lab with everything but the student files built:
    each submission's copy starts from it and compiles only its own files."""
    stamp = base / ".ready"
    fingerprint = lab_fingerprint(h.LAB, opts.outputs) + "-" + opts.arch
    if stamp.exists() and stamp.read_text() == fingerprint:
        return base
    if base.exists():
        shutil.rmtree(base)
    h.copy_lab(h.LAB, base, exclude=tuple(opts.outputs))
    log(f"building the lab's own objects once (ARCH={opts.arch}) ...")
    r = h.run(["make", f"-j{opts.jobs}", "IMPL=student", f"ARCH={opts.arch}", "grade-objects"], base,
              opts.build_timeout, log=base / "build-base.log")
    if r.returncode != 0:
        raise h.GradingError("the lab itself does not build here (see " + str(base / "build-base.log") + "):\n" +
                             h.compile_errors(r.output))
    stamp.write_text(fingerprint)
    return base


def probe_gpu(base: Path, env: dict) -> tuple[bool, str, int]:
    """Asks the lab's own test binary (no student code in it) about the GPU."""
    r = h.run([str(base / "build" / "test_common")], base, PROBE_TIMEOUT, env={**env, "LAB_PROBE_GPU": "1"})
    lines = [ln for ln in r.output.splitlines() if ln.startswith(("GPU:", "no GPU:", "devices:"))]
    if r.returncode == 0:
        count = next((int(ln.split()[1]) for ln in lines if ln.startswith("devices:")), 1)
        return True, next((ln for ln in lines if ln.startswith("GPU:")), "GPU"), count
    reason = next((ln for ln in lines if ln.startswith("no GPU:")), "no GPU: " + h.describe_exit(r, PROBE_TIMEOUT))
    return False, reason, 0


# ---------------------------------------------------------------- one submission


def prepare_work(submission: Path, base: Path, work: Path) -> h.Submission:
    """A copy of the built base with the submission's student files in it."""
    sub = h.collect_submission(submission, h.read_manifest(h.LAB))
    shutil.copytree(base, work, dirs_exist_ok=True, copy_function=shutil.copy2)
    h.place_files(work, sub.files)
    return sub


def grade_one(submission: Path, out: Path, base: Path, opts: Options, student: str, log, gpu_env: dict,
              work: Path | None = None) -> dict:
    """Grades one submission into `out` (report.txt, results.json, gradebook.csv,
    logs/). Returns summary.json's content. `work`: a copy already prepared
    (prepare_work), kept afterwards; by default a temporary one."""
    out.mkdir(parents=True, exist_ok=True)
    logs = out / "logs"
    if logs.exists():
        shutil.rmtree(logs)
    logs.mkdir()
    questions = h.all_questions(h.LAB)
    results = {qid: h.QuestionResult(q, {}) for qid, q in questions.items()}
    keep = work is not None
    if work is None:
        work = Path(tempfile.mkdtemp(prefix="grade-", dir=out))
        sub = prepare_work(submission, base, work)
    else:
        sub = h.collect_submission(submission, h.read_manifest(h.LAB))
    notes = list(sub.notes)
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LAB_")}
        env.update(gpu_env)
        env.update({"LAB_SEED": str(opts.seed), "LAB_TRACE": "require", "NO_COLOR": "1"})
        if opts.large:
            env["LAB_LARGE"] = "1"
        built = []
        for part, _ in h.PARTS:
            part_questions = [r for r in results.values() if r.question.part == part]
            if part not in opts.parts:
                for r in part_questions:
                    r.build_error = "not graded (PARTS)"
                continue
            log(f"  {student}: building {part}")
            binary = work / "build" / "student" / f"test_{part}"
            b = h.run(["make", f"-j{opts.jobs}", "IMPL=student", f"ARCH={opts.arch}", f"build/student/test_{part}"],
                      work, opts.build_timeout, log=logs / f"build-{part}.log")
            if b.returncode != 0 or not binary.exists():
                err = h.compile_errors(b.output) if not b.timed_out else f"the build {h.describe_exit(b, opts.build_timeout)}"
                for r in part_questions:
                    r.build_error = err
                notes.append(f"{part} does not compile; its questions get 0 (first errors in logs/build-{part}.log)")
                continue
            run_part(binary, part_questions, work, logs, opts, env, log, student)
            built.append(part)
        if opts.timing:
            log(f"  {student}: timing the demos")
            notes.append(time_submission(work, logs, opts, env, base, built))
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    return write_outputs(out, student, list(results.values()), notes, opts.seed)


# ---------------------------------------------------------------- speed (TIMING=1)


_reference_timing: dict[str, tuple[dict, str, str]] = {}  # per part (rows, why not, GPU), once per grading run
_reference_lock = threading.Lock()  # grade-all's workers share it


def run_demo(lab: Path, impl: str, part: str, csv_path: Path, opts: Options, env: dict, log_path: Path) -> str:
    """Builds and runs one demo's timing tables into csv_path; "" or why not."""
    b = h.run(["make", f"-j{opts.jobs}", f"IMPL={impl}", f"ARCH={opts.arch}", f"build/{impl}/{part}"], lab,
              opts.build_timeout, log=log_path.with_suffix(".build.log"))
    if b.returncode != 0:
        return f"{part} demo does not build"
    csv_path.unlink(missing_ok=True)
    r = h.run([str(lab / "build" / impl / part), *DEMO_ARGS, *DEMO_EXTRA.get(part, []), "--csv", str(csv_path)], lab,
              DEMO_TIMEOUT, env={**env, "LAB_TRACE": "0"}, log=log_path)
    if r.returncode != 0 or not csv_path.exists():
        return f"./{part} {h.describe_exit(r, DEMO_TIMEOUT)}"
    return ""


def reference_timing(base: Path, part: str, opts: Options, env: dict) -> tuple[dict, str, str]:
    """The reference's timing tables on this GPU, measured once per grading run
    in a copy of the lab that keeps the instructor files."""
    with _reference_lock:
        if part not in _reference_timing:
            lab = base.with_name(base.name + "-reference")
            h.copy_lab(h.LAB, lab, exclude=tuple(opts.outputs), with_reference=True)
            csv_path = lab / f"timing-{part}.csv"
            why = run_demo(lab, "reference", part, csv_path, opts, env, lab / f"timing-{part}.log")
            _reference_timing[part] = (h.read_timing_csv(csv_path) if not why else {}, why,
                                       _gpu_name(csv_path) if not why else "")
        return _reference_timing[part]


def time_submission(work: Path, logs: Path, opts: Options, env: dict, base: Path, built: list[str]) -> str:
    """Each built part's demo tables, as ratios to the reference's (a note)."""
    if not (h.LAB / "part1_merge_path" / "reference.cu").exists():
        return "speed: not timed (this copy of the lab has no reference files to compare with)"
    ratios, missing, gpu = {}, [], ""
    for part in built:
        reference, why, gpu_name = reference_timing(base, part, opts, env)
        if why:
            missing.append(f"the reference's {why}")
            continue
        gpu = gpu or gpu_name  # the reference's CSV names the GPU; a submission's could lie
        csv_path = logs / f"timing-{part}.csv"
        why = run_demo(work, "student", part, csv_path, opts, env, logs / f"timing-{part}.log")
        if why:
            missing.append(why)
            continue
        ratios.update(h.speed_ratios(h.read_timing_csv(csv_path), reference))
    return h.speed_note(ratios, gpu or "this GPU", missing)


def _gpu_name(csv_path: Path) -> str:
    try:
        with csv_path.open(newline="") as f:
            return next((r.get("gpu") or "" for r in csv.DictReader(f)), "")
    except (OSError, UnicodeDecodeError, csv.Error):
        return ""


def run_part(binary: Path, results: list[h.QuestionResult], work: Path, logs: Path, opts: Options, env: dict,
             log, student: str) -> None:
    seen: dict[str, h.Outcome] = {}  # a test tagged with two questions runs once
    for r in results:
        q = r.question
        timeout = opts.timeout_for(q)
        for i, case in enumerate(q.tests):
            if case.name not in seen:
                if case.large and not opts.large:
                    seen[case.name] = h.Outcome("not-graded", "not graded: the [large] tier is off (NO_LARGE=1)")
                else:
                    seen[case.name] = run_case(binary, case, work, logs / f"{q.qid}-{i + 1}.log", timeout, env)
                o = seen[case.name]
                log(f"  {student}: {q.qid} {case.name}: {o.status}{': ' + o.message[:200] if o.message else ''}")
            r.outcomes[case.name] = seen[case.name]
        if opts.sanitize:
            r.sanitizer = sanitize_question(binary, q, work, logs, opts, env)


def run_case(binary: Path, case: h.TestCase, work: Path, log_path: Path, timeout: float, env: dict) -> h.Outcome:
    with tempfile.TemporaryDirectory(prefix="report-") as private:
        report = Path(private) / "report.jsonl"
        r = h.run([str(binary), case.name], work, timeout, env={**env, "LAB_REPORT": str(report)}, log=log_path)
        outcome = h.read_report(report, case.name, r, timeout)
    if outcome.status == "failed" and "during the test" in outcome.message and r.output.strip():
        outcome.message += " -- last output: " + r.output.strip().splitlines()[-1][:300]
    return outcome


def sanitize_question(binary: Path, q: h.Question, work: Path, logs: Path, opts: Options, env: dict) -> str:
    """memcheck and racecheck over the question's tests at quick sizes, in
    exact-size allocations; returns what they found ("" when clean)."""
    found = []
    for tool in ("memcheck", "racecheck"):
        log_file = logs / f"{q.qid}-{tool}.log"
        cmd = ["compute-sanitizer", "--tool", tool, "--log-file", str(log_file), "--print-limit", "20", "--padding", "256",
               str(binary), f"[{q.qid}]~[large]"]
        senv = {**env, "LAB_QUICK": "1", "LAB_EXACT_ALLOCS": "1", "LAB_TRACE": "0"}
        senv.pop("LAB_LARGE", None)
        h.run(cmd, work, opts.timeout_for(q) * 10, env=senv, log=logs / f"{q.qid}-{tool}.out")
        errors = h.sanitizer_errors(log_file)
        if errors:
            found.append(f"{tool} reported {errors} error{'s' if errors > 1 else ''} (logs/{log_file.name})")
    return "; ".join(found)


def write_outputs(out: Path, student: str, results: list[h.QuestionResult], notes: list[str], seed,
                  extra: str = "") -> dict:
    data = h.results_json(results, notes, seed, extra)
    (out / "results.json").write_text(json.dumps(data, indent=2))
    summary = {"student": student, "seed": seed, "score": data["score"],
               "questions": {r.question.qid: {"score": r.score, "max": r.question.points} for r in results}}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    text = h.table(results)
    if notes or extra:
        text += "\n\nnotes:\n" + "\n".join("  " + n for n in notes + ([extra] if extra else []))
    text += f"\n\nLAB_SEED={seed} repeats these inputs (make grade SEED={seed}).\n"
    (out / "report.txt").write_text(text)
    questions = [r.question for r in results]
    (out / "gradebook.csv").write_text(h.gradebook_header(questions) + "\n" +
                                       h.gradebook_line(student, results, seed, notes + ([extra] if extra else [])) + "\n")
    return summary


def refuse(out: Path, student: str, reason: str, seed) -> None:
    """No grading possible (no GPU): a results file with score 0 and why."""
    out.mkdir(parents=True, exist_ok=True)
    results = [h.QuestionResult(q, {}) for q in h.all_questions(h.LAB).values()]
    for r in results:
        r.build_error = "not graded: " + reason
    write_outputs(out, student, results, [], seed, extra="NOT GRADED: " + reason)


# ---------------------------------------------------------------- commands


def cmd_grade(args, opts: Options) -> int:
    submission = Path(args.submission or h.LAB).resolve()
    if not submission.exists():
        raise h.GradingError(f"SUBMISSION={args.submission}: no such file or folder")
    out = Path(args.out).resolve()
    student = args.student or (submission.name if args.submission else "this-tree")
    base = prepare_base(Path(args.base).resolve() if args.base else out / "base", opts, say)
    ok, gpu, _ = probe_gpu(base, {})
    if not ok:
        refuse(out, student, f"{gpu}. Grading needs a GPU: run make grade on a machine with one.", opts.seed)
        say(f"make grade: {gpu}; wrote {out / 'results.json'} with score 0")
        return 1
    say(f"grading {submission} on {gpu[5:]} (LAB_SEED={opts.seed})")
    grade_one(submission, out, base, opts, student, say, {})
    say("\n" + (out / "report.txt").read_text())
    say(f"results: {out / 'results.json'}, {out / 'report.txt'}, {out / 'gradebook.csv'}, logs in {out / 'logs'}")
    return 0


def submissions_in(folder: Path) -> list[tuple[str, Path]]:
    found = []
    for entry in sorted(folder.iterdir()):
        name = entry.name
        if name.startswith("."):
            continue
        if entry.is_dir():
            found.append((name, entry))
        elif name.lower().endswith((".zip", ".tar.gz", ".tgz", ".tar")):
            stem = name[: -len(".tar.gz")] if name.lower().endswith(".tar.gz") else entry.stem
            found.append((stem, entry))
    return found


def cmd_grade_all(args, opts: Options) -> int:
    if not args.submissions:
        raise h.GradingError("make grade-all needs SUBMISSIONS=<folder with one subfolder or archive per student>")
    folder = Path(args.submissions).resolve()
    if not folder.is_dir():
        raise h.GradingError(f"SUBMISSIONS={args.submissions}: not a folder")
    grades = Path(args.out).resolve()
    grades.mkdir(parents=True, exist_ok=True)
    seed_file = grades / "seed"  # one seed for the class, kept so a resumed run grades alike
    if args.seed in (None, "") and seed_file.exists():
        opts.seed = int(seed_file.read_text())
    seed_file.write_text(str(opts.seed))
    base = prepare_base(grades / ".base", opts, say)
    ok, gpu, count = probe_gpu(base, {})
    students = submissions_in(folder)
    if not ok:
        for student, _ in students:
            refuse(grades / student, student, gpu, opts.seed)
        write_gradebook(grades, students)
        say(f"make grade-all: {gpu}; nothing graded")
        return 1
    todo = [(s, p) for s, p in students if not (grades / s / "done").exists()]
    say(f"{len(students)} submissions, {len(students) - len(todo)} already graded; {count} GPU(s): {gpu[5:]}")
    gpus: queue.Queue = queue.Queue()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = visible.split(",") if visible else [str(i) for i in range(count)]
    for i in ids[:count]:
        gpus.put(i)
    work: queue.Queue = queue.Queue()
    for item in todo:
        work.put(item)
    lock = threading.Lock()
    done = [len(students) - len(todo)]
    started = time.monotonic()

    def worker():
        while True:
            try:
                student, path = work.get_nowait()
            except queue.Empty:
                return
            device = gpus.get()
            try:
                t0 = time.monotonic()
                data = grade_one(path, grades / student, base, opts, student, lambda m: None,
                                 {"CUDA_VISIBLE_DEVICES": device})
                (grades / student / "done").write_text("")
                line = f"{student}: {data['score']:g} ({time.monotonic() - t0:.0f} s)"
            except Exception as err:  # one broken submission never stops the class
                line = f"{student}: harness error: {err}"
            finally:
                gpus.put(device)
            with lock:
                done[0] += 1
                say(f"[{done[0]}/{len(students)}] {line}, {time.monotonic() - started:.0f} s so far")

    threads = [threading.Thread(target=worker) for _ in ids[:count]]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    write_gradebook(grades, students)
    say(f"gradebook: {grades / 'gradebook.csv'}")
    return 0


def write_gradebook(grades: Path, students) -> None:
    questions = list(h.all_questions(h.LAB).values())
    lines = [h.gradebook_header(questions)]
    for student, _ in students:
        csv = grades / student / "gradebook.csv"
        if csv.exists():
            lines.append(csv.read_text().splitlines()[1])
    (grades / "gradebook.csv").write_text("\n".join(lines) + "\n")


def cmd_gradescope(args, _opts) -> int:
    """The Gradescope autograder zip: the pristine lab, setup.sh, run_autograder."""
    out = Path(args.out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    here = Path(__file__).resolve().parent / "gradescope"
    with tempfile.TemporaryDirectory() as tmp:
        lab = Path(tmp) / "lab"
        h.copy_lab(h.LAB, lab, exclude=(out.parent,))
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
            for name in ("setup.sh", "run_autograder"):
                info = zipfile.ZipInfo(name)
                info.external_attr = 0o755 << 16
                z.writestr(info, (here / name).read_text())
            for path in sorted(lab.rglob("*")):
                if path.is_file():
                    info = zipfile.ZipInfo("lab/" + path.relative_to(lab).as_posix())
                    info.external_attr = (path.stat().st_mode & 0o777) << 16
                    z.writestr(info, path.read_bytes())
    say(f"wrote {out}: upload it as the autograder of a Gradescope assignment (see README, For instructors)")
    return 0


def say(message: str) -> None:
    print(message, flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", choices=["grade", "grade-all", "gradescope"])
    p.add_argument("--submission", help="folder or archive to grade (default: this tree's student files)")
    p.add_argument("--submissions", help="grade-all: folder with one subfolder or archive per student")
    p.add_argument("--out", default="grade-results", help="where results go")
    p.add_argument("--student", help="the name in the gradebook")
    p.add_argument("--base", help="where the pristine built copy of the lab is kept")
    p.add_argument("--timeout", help="seconds per test case (default: each question's, from the points tables)")
    p.add_argument("--timeout-scale", help="multiplies the default timeouts")
    p.add_argument("--build-timeout", help="seconds for building one part")
    p.add_argument("--sanitize", help="1: also run memcheck and racecheck per question")
    p.add_argument("--no-large", help="1: leave out the [large] tier (arrays past 2^31)")
    p.add_argument("--seed", help="LAB_SEED for every test (default: a new one, written in the results)")
    p.add_argument("--arch", help="nvcc -arch (default native)")
    p.add_argument("--timing", help="1: also time each part's demo against the reference (a note, no points)")
    p.add_argument("--parts", help="comma-separated parts to grade (default all)")
    args = p.parse_args(argv)
    try:
        if args.command == "gradescope":
            return cmd_gradescope(args, None)
        opts = Options(args)
        return {"grade": cmd_grade, "grade-all": cmd_grade_all}[args.command](args, opts)
    except h.GradingError as err:
        print(f"grade: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
