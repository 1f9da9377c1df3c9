"""make grade (one submission) and make grade-all on this machine: one
submission per GPU at once, after the trusted runs of every GPU."""

from __future__ import annotations

import queue
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..building import prepare_base
from ..course_table import GradingError, LAB
from ..gpus import LabError, gpu_listed, lease, probe_held, visible_gpus
from ..gradebook import Records, roster_of, still_to_grade, write_gradebook
from ..outputs import refuse, say, take_report
from ..pipeline import grade_one
from ..submission import submissions_in
from ..trusted import TrustedRuns
from .slurm import grade_all_slurm


# Seconds a grade-all's worker leaves its GPU free between two gradings, for a
# grading that waits for it (lease polls at least once a second).
LEASE_TURN = 1.5

if TYPE_CHECKING:  # for the annotations only
    from ..options import Options


def cmd_grade(args, opts: Options) -> int:
    submission = Path(args.submission or LAB).resolve()
    if not submission.exists():
        raise GradingError(f"SUBMISSION={args.submission}: no such file or folder")
    out = Path(args.out).resolve()
    student = args.student or (submission.name if args.submission else "this-tree")
    if why := opts.unsandboxed():
        refuse(out, student, why, opts.seed, take_report(submission, out))
        say(f"make grade refuses: {why}")
        return 2
    listed, line = gpu_listed()  # before anything is built: a machine without a GPU is told at once
    if not listed:
        refuse(out, student, f"no GPU: {line}. Grading needs a GPU: run make grade on a machine with one.",
               opts.seed, take_report(submission, out))
        say(f"make grade: no GPU ({line}); nothing was built. Wrote {out / 'results.json'} with score 0. "
            "Here, make check-submission checks a hand-in on the CPU emulator (feedback, not a grade).")
        return 1
    base = prepare_base(Path(args.base).resolve() if args.base else out / "base", opts, say)
    try:
        with lease(visible_gpus(), opts.lease_wait, say) as gpu_env:
            ok, gpu, _ = probe_held(base, gpu_env, opts)
            if not ok:
                refuse(out, student, f"{gpu}. Grading needs a GPU: run make grade on a machine with one.",
                       opts.seed, take_report(submission, out))
                say(f"make grade: {gpu}; wrote {out / 'results.json'} with score 0")
                return 1
            return grade_probed(submission, out, base, opts, student, gpu, gpu_env)
    except LabError as err:
        return lab_error(submission, out, opts, student, str(err))


def lab_error(submission: Path, out: Path, opts: Options, student: str, why: str) -> int:
    """No grading, for a reason that is not the submission's (LabError):
    results.json says so and to grade again; exit status 3."""
    refuse(out, student, f"a lab error, not the submission's: {why}; grade it again", opts.seed,
           take_report(submission, out))
    say(f"make grade: NOT GRADED, a lab error: {why}; wrote {out / 'results.json'} saying so")
    return 3


def grade_probed(submission: Path, out: Path, base: Path, opts: Options, student: str, gpu: str,
                 gpu_env: dict) -> int:
    """make grade once the probe found a GPU (`gpu`, its line) that this
    grading holds (`gpu_env`, lease): the grading, or a refusal where no
    sandbox can start. Gradescope's autograder grades through here too. 0
    graded, 2 refused."""
    if why := opts.unsandboxed():
        refuse(out, student, why, opts.seed, take_report(submission, out))
        say(f"make grade refuses: {why}")
        return 2
    say(f"grading {submission} on {gpu[5:]} (LAB_SEED={opts.seed}); {opts.sandbox.describe()}")
    started = time.monotonic()
    grade_one(submission, out, base, opts, student, say, gpu_env)
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
    if args.scheduler not in (None, "", "local", "slurm"):
        raise GradingError(f"SCHEDULER={args.scheduler}: the schedulers are local (the default) and slurm")
    if args.scheduler != "slurm":  # (Slurm's login node needs no GPU: its nodes have them)
        listed, line = gpu_listed()  # before anything is built, and no student's record written
        if not listed:
            say(f"make grade-all: no GPU ({line}); nothing was built or graded. Grading needs a GPU here, "
                "or SCHEDULER=slurm on a cluster.")
            return 1
    base = prepare_base(Path(args.base).resolve() if args.base else grades / ".base", opts, say)
    students = submissions_in(folder)
    records = Records(grades)
    if args.scheduler == "slurm":
        return grade_all_slurm(args, opts, grades, base, students, records)
    if why := opts.unsandboxed():
        say(f"make grade-all refuses: {why}")
        return 2
    gpus = visible_gpus()
    try:
        with lease(gpus, opts.lease_wait, say) as gpu_env:
            ok, gpu, _ = probe_held(base, gpu_env, opts)
    except LabError as err:
        say(f"make grade-all: nothing graded, a lab error: {err}; run it again")
        return 3
    if not ok:
        for student, path in students:
            refuse(grades / student, student, gpu, opts.seed, take_report(path, grades / student))
        write_gradebook(grades, students, {}, roster=roster_of(args))
        say(f"make grade-all: {gpu}; nothing graded")
        return 1
    todo = still_to_grade(args, students, records)
    say(f"{len(students)} submissions, {len(students) - len(todo)} already graded; {len(gpus)} GPU(s): {gpu[5:]}; "
        f"{opts.sandbox.describe()}")
    grade_on_gpus(opts, grades, base, gpus, students, todo, records)
    write_gradebook(grades, students, records.records, roster=roster_of(args))
    say(f"gradebook: {grades / 'gradebook.csv'}, scores for an upload: {grades / 'scores.csv'}")
    return 0


def grade_on_gpus(opts: Options, grades: Path, base: Path, gpus: list[tuple[str, str]], students, todo,
                  records: Records) -> None:
    """The submissions `todo`, one per GPU of `gpus` (visible_gpus) at once,
    each GPU's trusted runs first; each graded student's record into
    `records`. Each grading holds its GPU (lease) from its trusted runs to
    its last process; another grading on this machine (make grade, another
    grade-all) takes turns with it. A grading that meets a lab error is not
    recorded: the next grade-all grades it again."""
    work: queue.Queue = queue.Queue()
    for item in todo:
        work.put(item)
    lock = threading.Lock()
    done = [len(students) - len(todo)]
    started = time.monotonic()
    trusted = TrustedRuns(base, opts, grades / ".harness" / "trusted-logs")
    if todo:
        say("trusted runs: " + ", ".join(opts.parts))

    def worker(gpu: tuple[str, str]):
        while True:
            try:
                student, path = work.get_nowait()
            except queue.Empty:
                return
            try:
                t0 = time.monotonic()
                with lease([gpu], opts.lease_wait, say) as gpu_env:
                    # The trusted runs of its GPU first (once): alone on it.
                    trusted.run_all(gpu_env)
                    data = grade_one(path, grades / student, base, opts, student, lambda m: None, gpu_env,
                                     trusted=trusted)
                records.add(data)
                line = f"{student}: {data['score']:g} ({time.monotonic() - t0:.0f} s on GPU {gpu[1] or 0})"
            except LabError as err:
                line = f"{student}: NOT GRADED, a lab error: {err} (not recorded: grade-all grades it again)"
            except Exception as err:  # one broken submission never stops the class
                line = f"{student}: harness error: {err}"
            with lock:
                done[0] += 1
                say(f"[{done[0]}/{len(students)}] {line}, {time.monotonic() - started:.0f} s so far")
            time.sleep(LEASE_TURN)  # another grading waiting for this GPU takes its turn

    threads = [threading.Thread(target=worker, args=(gpu,)) for gpu in gpus]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    trusted.close()
