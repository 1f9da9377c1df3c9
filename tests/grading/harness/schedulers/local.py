"""make grade (one submission) and make grade-all on this machine: one
submission per GPU at once, after the trusted runs of every GPU."""

from __future__ import annotations

import os
import queue
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..building import prepare_base
from ..course_table import GradingError, LAB
from ..gpus import probe_gpu
from ..gradebook import Records, roster_of, still_to_grade, write_gradebook
from ..outputs import refuse, say, take_report
from ..pipeline import grade_one
from ..submission import submissions_in
from ..trusted import TrustedRuns
from .slurm import grade_all_slurm

if TYPE_CHECKING:  # for the annotations only
    from ..options import Options


def cmd_grade(args, opts: Options) -> int:
    submission = Path(args.submission or LAB).resolve()
    if not submission.exists():
        raise GradingError(f"SUBMISSION={args.submission}: no such file or folder")
    out = Path(args.out).resolve()
    student = args.student or (submission.name if args.submission else "this-tree")
    base = prepare_base(Path(args.base).resolve() if args.base else out / "base", opts, say)
    ok, gpu, _ = probe_gpu(base, {}, opts)
    if not ok:
        refuse(out, student, f"{gpu}. Grading needs a GPU: run make grade on a machine with one.", opts.seed,
               take_report(submission, out))
        say(f"make grade: {gpu}; wrote {out / 'results.json'} with score 0")
        return 1
    return grade_probed(submission, out, base, opts, student, gpu)


def grade_probed(submission: Path, out: Path, base: Path, opts: Options, student: str, gpu: str) -> int:
    """make grade once the probe found a GPU (`gpu`, its line): the grading,
    or a refusal where no sandbox can start. Gradescope's autograder grades
    through here too. 0 graded, 2 refused."""
    if why := opts.unsandboxed():
        refuse(out, student, why, opts.seed, take_report(submission, out))
        say(f"make grade refuses: {why}")
        return 2
    say(f"grading {submission} on {gpu[5:]} (LAB_SEED={opts.seed}); {opts.sandbox.describe()}")
    started = time.monotonic()
    grade_one(submission, out, base, opts, student, say, {})
    say("\n" + (out / "report.txt").read_text())
    say(f"graded in {time.monotonic() - started:.0f} s. results: {out / 'results.json'}, {out / 'report.txt'}, "
        f"{out / 'gradebook.csv'}, logs in {out / 'logs'}")
    return 0


def cmd_grade_all(args, opts: Options) -> int:
    if not args.submissions:
        raise GradingError("make grade-all needs SUBMISSIONS=<folder with one subfolder or archive per student>")
    folder = Path(args.submissions).resolve()
    if not folder.is_dir():
        raise GradingError(f"SUBMISSIONS={args.submissions}: not a folder")
    grades = Path(args.out).resolve()
    grades.mkdir(parents=True, exist_ok=True)
    seed_file = grades / "seed"  # one seed for the class, kept so a resumed run grades alike
    if args.seed in (None, "") and seed_file.exists():
        opts.seed = int(seed_file.read_text())
    seed_file.write_text(str(opts.seed))
    base = prepare_base(Path(args.base).resolve() if args.base else grades / ".base", opts, say)
    students = submissions_in(folder)
    records = Records(grades)
    if args.scheduler == "slurm":
        return grade_all_slurm(args, opts, grades, base, students, records)
    if args.scheduler not in (None, "", "local"):
        raise GradingError(f"SCHEDULER={args.scheduler}: the schedulers are local (the default) and slurm")
    ok, gpu, count = probe_gpu(base, {}, opts)
    if not ok:
        for student, path in students:
            refuse(grades / student, student, gpu, opts.seed, take_report(path, grades / student))
        write_gradebook(grades, students, {}, roster=roster_of(args))
        say(f"make grade-all: {gpu}; nothing graded")
        return 1
    if why := opts.unsandboxed():
        say(f"make grade-all refuses: {why}")
        return 2
    todo = still_to_grade(args, students, records)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = (visible.split(",") if visible else [str(i) for i in range(count)])[:count]
    say(f"{len(students)} submissions, {len(students) - len(todo)} already graded; {len(ids)} GPU(s): {gpu[5:]}; "
        f"{opts.sandbox.describe()}")
    grade_on_gpus(opts, grades, base, ids, students, todo, records)
    write_gradebook(grades, students, records.records, roster=roster_of(args))
    say(f"gradebook: {grades / 'gradebook.csv'}, scores for an upload: {grades / 'scores.csv'}")
    return 0


def grade_on_gpus(opts: Options, grades: Path, base: Path, ids: list[str], students, todo, records: Records) -> None:
    """The submissions `todo`, one per GPU of `ids` at once, each GPU's
    trusted runs first; each graded student's record into `records`."""
    gpus: queue.Queue = queue.Queue()
    for i in ids:
        gpus.put(i)
    work: queue.Queue = queue.Queue()
    for item in todo:
        work.put(item)
    lock = threading.Lock()
    done = [len(students) - len(todo)]
    started = time.monotonic()
    trusted = TrustedRuns(base, opts, grades / ".harness" / "trusted-logs")
    # The trusted runs of every GPU before any grading starts: each alone on its GPU.
    if todo:
        say("trusted runs: " + ", ".join(opts.parts))
        firsts = [threading.Thread(target=trusted.run_all, args=(opts.parts, {"CUDA_VISIBLE_DEVICES": i}))
                  for i in ids]
        for t in firsts:
            t.start()
        for t in firsts:
            t.join()

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
                                 {"CUDA_VISIBLE_DEVICES": device}, trusted=trusted)
                records.add(data)
                line = f"{student}: {data['score']:g} ({time.monotonic() - t0:.0f} s on GPU {device})"
            except Exception as err:  # one broken submission never stops the class
                line = f"{student}: harness error: {err}"
            finally:
                gpus.put(device)
            with lock:
                done[0] += 1
                say(f"[{done[0]}/{len(students)}] {line}, {time.monotonic() - started:.0f} s so far")

    threads = [threading.Thread(target=worker) for _ in ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    trusted.close()
