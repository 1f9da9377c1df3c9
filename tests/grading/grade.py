#!/usr/bin/env python3
"""Grades submissions of the lab. The Makefile's entry points call it:

  make grade [SUBMISSION=path] [GRADE_OUT=dir] [TIMEOUT=s] [SANITIZE=0] [SEED=n] [BUDGET=s]
  make grade-all SUBMISSIONS=dir [GRADES=dir] [REGRADE=alice,bob] [SCHEDULER=slurm]
  make gradescope
  make check-submission [SUBMISSION=path]   (any machine: the emulated feedback Gradescope shows)

Gradescope's setup.sh and run_autograder call `autograder-setup` and
`autograder`; `scores` remakes grade-all's scores.csv (e.g. with a roster).
`python3 -m tests.grading.grade --help` lists every option. How grading works is
in INSTRUCTORS.md and the handout (How your work is graded).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from tests.grading.harness.course_table import GradingError
from tests.grading.harness.gradebook import cmd_scores
from tests.grading.harness.options import Options
from tests.grading.harness.processes import become_subreaper
from tests.grading.harness.schedulers.gradescope import (cmd_autograder, cmd_autograder_setup, cmd_check_submission,
                                          cmd_gradescope)
from tests.grading.harness.schedulers.local import cmd_grade, cmd_grade_all
from tests.grading.harness.schedulers.slurm import cmd_grade_task


def parser() -> argparse.ArgumentParser:
    """The command line: a command and its options (--help)."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", choices=["grade", "grade-all", "grade-task", "gradescope", "autograder",
                                        "autograder-setup", "scores", "check-submission"])
    p.add_argument("--submission", help="folder or archive to grade (default: this tree's student files)")
    p.add_argument("--submissions", help="grade-all: folder with one subfolder or archive per student")
    p.add_argument("--out", default="grade-results", help="where results go")
    p.add_argument("--student", help="the name in the gradebook")
    p.add_argument("--base", help="where the pristine built copy of the lab is kept")
    p.add_argument("--timeout", help="seconds per test case (default: each question's, from the points tables)")
    p.add_argument("--timeout-scale", help="multiplies the default timeouts")
    p.add_argument("--build-timeout", help="seconds for building one part")
    p.add_argument("--sanitize", help="0: leave out memcheck, racecheck and synccheck (default: run them on every ordinary test case)")
    p.add_argument("--sanitize-jobs", help="sanitized runs (one per question and tool) at a time (default: three quarters of the cores, at most 12, one per 2 GiB of free GPU memory)")
    p.add_argument("--no-large", help="1: leave out the [large] tier (arrays past 2^31)")
    p.add_argument("--gpu-jobs", help="processes on one GPU at once, of every grading on this machine (default 8)")
    p.add_argument("--case-jobs", help="ordinary test cases at once (default 4; fewer on a GPU with little free memory)")
    p.add_argument("--seed", help="LAB_SEED for every test (default: a new one, written in the results)")
    p.add_argument("--arch", help="nvcc -arch (default native)")
    p.add_argument("--judge", help="0: the graded process runs the graders and hands over its results, as before the "
                   "judge (default 1: the judge owns the arrays and checks them, tests/judge/)")
    p.add_argument("--pcie", help="0: run CASE_JOBS test cases at once, their host traffic unmetered (default 1: where "
                   "NVML reads the GPU, one at a time, each call's PCIe bytes judged)")
    p.add_argument("--timing", help="1: also time each part's demo against the reference (a note, no points)")
    p.add_argument("--parts", help="comma-separated parts to grade (default all)")
    p.add_argument("--budget", help="seconds of test runs one submission may take in all (default 2400)")
    p.add_argument("--sandbox", help="0: no sandbox (default 1); without one nothing is graded, as where none "
                                     "can start")
    p.add_argument("--lease-wait", help="seconds a grading waits for a GPU that other gradings hold (default 3600)")
    p.add_argument("--work-root", help="where submissions' copies are made (default: the system's temporary folder)")
    p.add_argument("--regrade", help="grade-all: comma-separated students to grade again")
    p.add_argument("--scheduler", help="grade-all: local (default: one submission per GPU of this machine) or "
                                       "slurm (one array job, a task per submission)")
    p.add_argument("--slurm-partition", help="slurm: the partition (default: the cluster's default)")
    p.add_argument("--slurm-account", help="slurm: the account to charge (default: yours)")
    p.add_argument("--slurm-time", help="slurm: each task's time limit (default 01:00:00)")
    p.add_argument("--slurm-gres", help="slurm: each task's GPU request (default gpu:1; empty: none)")
    p.add_argument("--slurm-cpus", help="slurm: cores per task (default 8)")
    p.add_argument("--slurm-opts", help="slurm: more sbatch options, as one string")
    p.add_argument("--slurm-wait", help="slurm: 0: submit and return; run again after the job to gather (default 1)")
    p.add_argument("--roster", help="grade-all, scores: the class list (CSV: Email and/or SID, Name, optionally "
                                     "Submission) for scores.csv (default: roster.csv in the submissions folder)")
    p.add_argument("--gradebook", help="scores: the gradebook.csv of a grade-all")
    p.add_argument("--csv", help="scores: where scores.csv goes (default: beside the gradebook)")
    p.add_argument("--root", help="autograder, autograder-setup: Gradescope's folder (default $AUTOGRADER_ROOT, "
                                  "else /autograder)")
    p.add_argument("--feedback-only", help="autograder: 1 gives the emulated feedback even where a GPU is (a course "
                                           "that grades after the deadline only)")
    p.add_argument("--gpu-base", help="autograder-setup: 1 builds the GPU grading's base too, 0 not (default: "
                                      "where nvcc is here)")
    p.add_argument("--tasks", help=argparse.SUPPRESS)  # grade-task
    p.add_argument("--index", help=argparse.SUPPRESS)  # grade-task
    return p


def main(argv=None) -> int:
    os.environ.pop("EMULATE", None)  # its builds are for the GPU: emulated runs are never graded
    args = parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    become_subreaper()
    try:
        if args.command == "gradescope":
            return cmd_gradescope(args, None)
        if args.command == "scores":
            return cmd_scores(args, None)
        if args.command.startswith("autograder"):
            root = Path(args.root or os.environ.get("AUTOGRADER_ROOT") or "/autograder").resolve()
            args.root, args.out = str(root), str(root / "results" / "lab")
            args.base = args.base or str(root / "lab-base")
        opts = Options(args)
        return {"grade": cmd_grade, "grade-all": cmd_grade_all, "grade-task": cmd_grade_task,
                "autograder": cmd_autograder, "autograder-setup": cmd_autograder_setup,
                "check-submission": cmd_check_submission}[args.command](args, opts)
    except GradingError as err:
        print(f"grade: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
