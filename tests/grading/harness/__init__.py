"""The grading harness: turns a submission into points, trusting nothing it runs.

A submission's student files (the manifest) are put into a pristine copy of the
lab outside the lab's own tree, so nothing else of it can change the graders.
Each part builds on its own, in a sandbox (sandbox.py), and may include nothing
outside that copy but the system's headers. Each test case runs in its own
sandboxed process under a timeout, confined to itself (no child processes),
with graders built to hold no expected answer (LAB_GRADED). It reports how the
test ended on one pipe (LAB_REPORT_FD) and hands every result it read back to
the harness on another (LAB_RESULTS_FD). Both come from a process that ran
student code, so they prove nothing by themselves: a test passes only when its
report says so *and* the harness finds its results equal, byte for byte, to
those a trusted build of the same graders (tests/oracle/, no student code)
handed over for the same seed (results.py). Student objects are checked before
they are linked (symbols.py). Points come from the course table (course.py).

tests/grading/grade.py is the command line; this package is the logic, a
module per stage, in the order a grading goes through them:

  course_table   the questions, test cases, weights and limits (course.py)
  submission     taking a submission's files, archives and documents
  options        the grading's settings (the command line's options)
  processes      running a process: limits in time, its output, its
                 environment, the files it leaves
  gpus           the GPU: the lab's probe, places shared by every grading
  running        one submission's sandboxed runs (sandbox.py) and its tests
  building       the pristine copy, the base build, a part's build and its
                 checks (includes; symbols.py)
  reports        what a test process says of how its test ended
  trusted        the trusted runs every graded run is compared with
  judging        verdicts (results.py), points split over test cases
  sanitizers     compute-sanitizer over the graded tests
  timing         speed against the reference, for information (TIMING=1)
  outputs        results.json, report.txt, the feedback, summary.json
  gradebook      grade-all's records, gradebook.csv and scores.csv
  pipeline       one submission graded, step by step
  schedulers/    make grade and grade-all on this machine's GPUs (local),
                 on a Slurm cluster (slurm), Gradescope's autograder
"""
