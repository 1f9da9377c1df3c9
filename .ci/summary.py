#!/usr/bin/env python3
"""What .ci/run prints: one line per step, and one closing count of tests.

CI keeps the closing lines of a run and reads the last one as the count of
tests it executed, so nothing else CI prints may look like a count:

  step NAME RC SECONDS LOG WHAT...   one line for a step; when it failed (RC not
                                     0), the tail of its log, each line behind
                                     "  | ", a count in it as "N passed / N failed"
  total LOG...                       the last line: `tests: N passed, N failed,
                                     N skipped`, the sum of the closing counts
                                     the test programs printed into these logs;
                                     exits 1, saying so in words, where no log
                                     holds one

A test program's closing count is a line of its own, `N passed, N failed` or
`N passed, N failed, N skipped` (tests/main.cpp, tests/grading/test_harness.py,
emulator/test_emulator.cu). The harness's own tests (test_harness.py, class
CiSummary) run a made-up log through both commands.
"""
import re
import sys
from pathlib import Path

COUNT = re.compile(r"^([0-9]+) passed, ([0-9]+) failed(?:, ([0-9]+) skipped)?$")
# What a reader of CI's record would take for a count of tests, anywhere in a line.
A_COUNT = re.compile(r"([0-9]+ passed), ([0-9]+ failed)")
TAIL_LINES = 40
WIDTH = 160


def step_line(name: str, rc: int, seconds: int, what: str) -> str:
    verdict = "ok" if rc == 0 else f"FAILED (exit {rc})"
    return f"CI {seconds // 60:3d}m{seconds % 60:02d}s  {name}: {what}: {verdict}"


def tail(log: Path, lines: int = TAIL_LINES) -> list[str]:
    try:
        text = log.read_text(errors="replace").splitlines()
    except OSError as e:
        return [f"  | (no log: {e.strerror})"]
    # A count in the tail is shown as "N passed / N failed": only the last line may read as a count.
    return ["  | " + A_COUNT.sub(r"\1 / \2", line)[:WIDTH] for line in text[-lines:]]


def step(name: str, rc: int, seconds: int, log: Path, what: str) -> list[str]:
    out = [step_line(name, rc, seconds, what)]
    if rc != 0:
        out.append(f"  the last {TAIL_LINES} lines of {log}:")
        out += tail(log)
    return out


def counts(logs: list[Path]) -> tuple[int, int, int, int]:
    """(passed, failed, skipped, how many closing counts) over the logs."""
    passed = failed = skipped = found = 0
    for log in logs:
        try:
            lines = log.read_text(errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            m = COUNT.match(line.strip())
            if m:
                passed += int(m[1])
                failed += int(m[2])
                skipped += int(m[3] or 0)
                found += 1
    return passed, failed, skipped, found


def total(logs: list[Path]) -> tuple[list[str], int]:
    passed, failed, skipped, found = counts(logs)
    if found == 0:
        return [f"CI: no test program's closing count in {', '.join(map(str, logs))}: no test ran"], 1
    return [f"tests: {passed} passed, {failed} failed, {skipped} skipped"], 0


def main(argv: list[str]) -> int:
    if len(argv) >= 6 and argv[0] == "step":
        lines, status = step(argv[1], int(argv[2]), int(argv[3]), Path(argv[4]), " ".join(argv[5:])), 0
    elif len(argv) >= 2 and argv[0] == "total":
        lines, status = total([Path(a) for a in argv[1:]])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    print("\n".join(lines), flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
