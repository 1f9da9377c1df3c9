"""grade-all on a Slurm cluster.

The submitting host builds the base once (a file system the nodes share) and
submits one array job, a task per submission still to grade, each with one
GPU. A task grades its submission exactly as make grade does (grade-task
below) and then, its student's processes gone, writes the harness's record
into GRADES/.harness/tasks/, which no sandbox shows a submission. Once the
job has ended, the submitting host takes those records into records.jsonl
and writes the gradebook from them. Run the same command again to grade
those without a record (a task that failed, a refusal for want of a GPU)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..building import verify_base
from ..course_table import LAB, GradingError
from ..gpus import LabError, lease, probe_held, visible_gpus
from ..gradebook import roster_of, still_to_grade, write_gradebook
from ..options import flag
from ..outputs import refuse, say, take_report, write_atomically
from ..pipeline import grade_one

if TYPE_CHECKING:  # for the annotations only
    from ..gradebook import Records
    from ..options import Options


SLURM_DIR = Path(".harness") / "slurm"


TASKS_DIR = Path(".harness") / "tasks"


def task_argv(argv: list[str]) -> list[str]:
    """grade-all's own options, less those only the submitting host reads."""
    own = {"--submissions", "--regrade", "--scheduler", "--slurm-partition", "--slurm-account", "--slurm-time",
           "--slurm-gres", "--slurm-cpus", "--slurm-opts", "--slurm-wait", "--base", "--seed", "--out", "--roster"}
    kept, i = [], 0
    while i < len(argv):
        a = argv[i]
        name = a.split("=", 1)[0]
        if name in own:
            i += 1 if "=" in a else 2
            continue
        if a != "grade-all":
            kept.append(a)
        i += 1
    return kept


def gather_tasks(grades: Path, records: Records) -> dict[str, dict]:
    """Task records into the harness's records; returns the refusals (kept out
    of records.jsonl, so that the next run grades them again)."""
    refused = {}
    folder = grades / TASKS_DIR
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            record = json.loads(path.read_text())
            student = record["student"]
        except (json.JSONDecodeError, KeyError, TypeError, OSError):
            continue
        if record.get("refused"):
            refused[student] = record
        else:
            records.add(record)
        path.unlink()
    return refused


def job_running(grades: Path) -> str:
    """The id of this class's array job when Slurm still lists it, else ""."""
    job_file = grades / SLURM_DIR / "job"
    if not job_file.exists():
        return ""
    job = job_file.read_text().strip()
    r = subprocess.run(["squeue", "-h", "-j", job, "-o", "%i"], capture_output=True, text=True)
    return job if r.returncode == 0 and r.stdout.strip() else ""


def grade_all_slurm(args, opts: Options, grades: Path, base: Path, students, records: Records) -> int:
    for tool in ("sbatch", "squeue"):
        if shutil.which(tool) is None:
            raise GradingError(f"SCHEDULER=slurm needs {tool} on the PATH (a Slurm login node)")
    (grades / SLURM_DIR).mkdir(parents=True, exist_ok=True)
    (grades / TASKS_DIR).mkdir(parents=True, exist_ok=True)
    refused = gather_tasks(grades, records)
    running = job_running(grades)
    if running:
        say(f"Slurm job {running} of this class is still queued or running: run this again once it has ended "
            "(squeue -j " + running + ")")
        write_gradebook(grades, students, records.records, refused, roster_of(args))
        return 0
    todo = still_to_grade(args, students, records)
    say(f"{len(students)} submissions, {len(students) - len(todo)} already graded; "
        f"{len(todo)} to grade on Slurm; {opts.sandbox.describe()}")
    if todo:
        script = job_script(args, opts, grades, base, todo)
        wait = args.slurm_wait in (None, "") or flag("SLURM_WAIT", args.slurm_wait)
        job, rc, seconds = submit(sbatch_command(args, grades, len(todo), wait), script, grades, len(todo))
        if not wait:
            say("submitted; run the same command again once the job has ended to gather the gradebook")
            write_gradebook(grades, students, records.records, refused, roster_of(args))
            return 0
        say(f"Slurm job {job} ended after {seconds:.0f} s (sbatch exit {rc})")
        refused.update(gather_tasks(grades, records))
    missing = [s for s, _ in students if s not in records.records and s not in refused]
    for s in missing:
        say(f"{s}: no record from its task (see {grades / SLURM_DIR}); run this again to grade it")
    for s, record in refused.items():
        say(f"{s}: not graded: {record['refused']}")
    write_gradebook(grades, students, records.records, refused, roster_of(args))
    say(f"gradebook: {grades / 'gradebook.csv'} ({len(records.records)} graded, {len(refused)} refused, "
        f"{len(missing)} without a record)")
    return 0


def job_script(args, opts: Options, grades: Path, base: Path, todo) -> Path:
    """The array job's script: task i grades line i of a tasks file (grade-task)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    tasks = grades / SLURM_DIR / f"tasks-{stamp}.tsv"
    tasks.write_text("".join(f"{s}\t{p}\n" for s, p in todo))
    command = [sys.executable, "-m", "tests.grading.grade", "grade-task", "--tasks", str(tasks),
               "--out", str(grades), "--base", str(base), "--seed", str(opts.seed), *task_argv(args.argv)]
    script = grades / SLURM_DIR / f"job-{stamp}.sh"
    script.write_text("#!/bin/sh\n# one task per line of " + tasks.name + "\ncd " + shlex.quote(str(LAB)) + " || exit 1\nexec " +
                      " ".join(shlex.quote(c) for c in command) + ' --index "$SLURM_ARRAY_TASK_ID"\n')
    script.chmod(0o755)
    return script


def sbatch_command(args, grades: Path, tasks: int, wait: bool) -> list[str]:
    """sbatch for an array of `tasks` tasks, with the SLURM_* options; `wait`: until the job has ended."""
    sbatch = ["sbatch", "--parsable", "--job-name", "lab-grade", "--array", f"0-{tasks - 1}",
              "--output", str(grades / SLURM_DIR / "%A_%a.out"), "--time", args.slurm_time or "01:00:00",
              "--cpus-per-task", args.slurm_cpus or "8"]
    if args.slurm_gres != "":  # given empty: no GPU request
        sbatch += ["--gres", args.slurm_gres or "gpu:1"]
    if args.slurm_partition:
        sbatch += ["--partition", args.slurm_partition]
    if args.slurm_account:
        sbatch += ["--account", args.slurm_account]
    sbatch += shlex.split(args.slurm_opts or "")
    if wait:
        sbatch.append("--wait")
    return sbatch


def submit(sbatch: list[str], script: Path, grades: Path, tasks: int) -> tuple[str, int, float]:
    """Submits the job, its id kept in SLURM_DIR/job: (its id, sbatch's exit
    status, seconds sbatch took: the job's time with --wait)."""
    say("submitting: " + " ".join(shlex.quote(c) for c in sbatch + [str(script)]))
    started = time.monotonic()
    r = subprocess.Popen(sbatch + [str(script)], stdout=subprocess.PIPE, text=True)
    job = (r.stdout.readline() if r.stdout else "").strip().split(";")[0]
    if job:
        (grades / SLURM_DIR / "job").write_text(job + "\n")
        say(f"Slurm array job {job}: {tasks} task(s); logs in {grades / SLURM_DIR}")
    rc = r.wait()
    if not job:
        raise GradingError(f"sbatch refused the job (exit {rc}); see its message above")
    return job, rc, time.monotonic() - started


def cmd_grade_task(args, opts: Options) -> int:
    """One task of grade-all's Slurm array job: the submission on line --index
    of --tasks, graded as make grade grades it, on this node's GPU."""
    lines = Path(args.tasks).read_text().splitlines()
    index = int(args.index)
    if not 0 <= index < len(lines):
        raise GradingError(f"task {index}: {args.tasks} has {len(lines)} lines")
    student, path = lines[index].split("\t", 1)
    grades = Path(args.out).resolve()
    base = Path(args.base).resolve()
    if not (base / ".ready").exists():  # built by the submitting host; never by many tasks at once
        raise GradingError(f"task {index}: no base build in {base}")
    verify_base(base)
    host = os.uname().nodename
    try:
        with lease(visible_gpus(), opts.lease_wait, say) as gpu_env:
            ok, gpu, _ = probe_held(base, gpu_env, opts)
            why = f"{gpu} (Slurm node {host})" if not ok else opts.unsandboxed()
            if why:
                data = refuse(grades / student, student, why, opts.seed, take_report(Path(path), grades / student))
                data["refused"] = why
                say(f"{student}: {why}; score 0 on {host}")
            else:
                say(f"{student}: grading on {host}, {gpu[5:]}")
                t0 = time.monotonic()
                data = grade_one(Path(path), grades / student, base, opts, student, say, gpu_env)
                say(f"{student}: {data['score']:g} in {time.monotonic() - t0:.0f} s")
    except LabError as err:  # no record: the gathering says the task left none, and a rerun grades it
        say(f"{student}: NOT GRADED on {host}, a lab error: {err}")
        return 3
    write_atomically(grades / TASKS_DIR / f"{student}.json", json.dumps(data))
    return 0
