"""The grading harness: turns a submission into points, trusting nothing it runs.

A submission's student files (the manifest) are put into a pristine copy of the
lab outside the lab's own tree, so nothing else of it can change the graders.
Each part builds on its own, in a sandbox (sandbox.py), and may include nothing
outside that copy but the system's headers; student objects are checked before
they are linked (symbols.py). Each test case is a pair of processes under a
timeout: the judge (tests/judge/, the graders built without student code, run
outside the sandbox) owns every array in device memory, fills, poisons and
guards it, and sends each launcher call to the graded process (the student's
object served by tests/judge/serve.cpp, sandboxed and confined to itself), which
maps the arrays, calls the launcher under the launch trace and replies. The
judge reads the outputs back itself and hands its results to the harness
(LAB_RESULTS_FD); a test passes only when they equal, byte for byte, those of a
trusted run of the same graders with host twins of every launcher
(tests/oracle/) on the same seed (results.py). Points come from the course
table (course.py). JUDGE=0 runs the former path, where the graded process runs
the graders itself (built with LAB_GRADED: no expected answer) and hands over
the results stream, for comparison.

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
