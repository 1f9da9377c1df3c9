#!/usr/bin/env python3
"""The harness's own tests (no GPU, no nvcc), by stage: taking a submission
(test_taking.py), running a test case (test_running.py), judging
(test_judging.py), the GPU (test_gpus.py), the outputs and schedulers
(test_outputs.py), a student object's symbols (test_symbols.py); beside them
the course table and what reads it (tests/course/test_course.py) and, in the
instructors' copy, the planted faults and attacks (tests/redteam/test_redteam.py).
The GPU half (every planted fault and attack graded end to end) is
tests/redteam/selftest.py.

  python3 -m tests.grading.test_harness [Class or Class.test ...]

Ends with the plain line `N passed, N failed`."""

from __future__ import annotations

import sys
import unittest

from tests.course.test_course import *  # noqa: F401,F403
from tests.grading.test_gpus import *  # noqa: F401,F403
from tests.grading.test_judging import *  # noqa: F401,F403
from tests.grading.test_outputs import *  # noqa: F401,F403
from tests.grading.test_running import *  # noqa: F401,F403
from tests.grading.test_symbols import ObjectProblems  # noqa: F401 (the link-time checks, symbols.py)
from tests.grading.test_taking import *  # noqa: F401,F403

try:  # instructors' copy only: make release leaves tests/redteam/ out
    from tests.redteam.test_redteam import *  # noqa: F401,F403
except ImportError:
    pass

if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=1).result
    failed = len(result.failures) + len(result.errors)
    skipped = len(result.skipped)
    if result.testsRun == 0:  # said in words: a count of zero reads as a run that passed
        print("no tests here: none of the harness's tests matches " + " ".join(sys.argv[1:]))
        sys.exit(1)
    print(f"{result.testsRun - failed - skipped} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    sys.exit(1 if failed else 0)
