#!/usr/bin/env python3
"""The idioms' table (emulator/idioms.tsv) against what the tools say of each
kernel of emulator/idioms.cu.

    python3 emulator/idioms.py emulated BINARY   the emulator's column (make test EMULATE=1)
    python3 emulator/idioms.py gpu BINARY        racecheck's, synccheck's and memcheck's (make sanitize)

Each idiom is one check, passed when every column it checks agrees; the last
line counts them ("N passed, N failed"). A disagreement prints the idiom,
the column, what the table says and what the tool said.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

TABLE = Path(__file__).resolve().parent / "idioms.tsv"
GPU_TOOLS = ("racecheck", "synccheck", "memcheck")
# The emulator's kinds of fault (emu::faultKind) as the table writes them.
KINDS = {"a shared-memory race": "race", "a barrier error": "barrier", "an out-of-bounds access": "out of bounds",
         "an access outside device memory": "outside device memory", "a warp-operation error": "warp operation"}
LIMIT = 120  # seconds per run; every idiom is one small launch


@dataclass
class Idiom:
    name: str
    what: str
    verdicts: dict[str, str]  # column (a tool, or "emulator") -> clean, error, warning, or a kind


def read_table(path: Path = TABLE) -> list[Idiom]:
    rows = [line.split("\t") for line in path.read_text().splitlines() if line and not line.startswith("#")]
    columns = (*GPU_TOOLS, "emulator")
    for row in rows:
        if len(row) != 2 + len(columns):
            raise SystemExit(f"{path}: a row of {len(row)} fields, not {2 + len(columns)}: {row[0]}")
    return [Idiom(row[0], row[1], dict(zip(columns, row[2:]))) for row in rows]


def run(command: list[str]) -> tuple[int | None, str]:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=LIMIT)
    except subprocess.TimeoutExpired:
        return None, f"no end within {LIMIT} s"
    return done.returncode, done.stdout + done.stderr


def emulated_verdict(binary: str, idiom: Idiom) -> str:
    status, output = run([binary, idiom.name])
    said = next((line[len(idiom.name) + 2:] for line in output.splitlines() if line.startswith(idiom.name + ": ")), None)
    if status == 0 and said == "clean":
        return "clean"
    return KINDS.get(said or "", f"? (exit {status}: {said or output.strip()[-200:]})")


def gpu_verdict(binary: str, idiom: Idiom, tool: str) -> str:
    """clean, error or warning, from the tool's closing summary."""
    status, output = run(["compute-sanitizer", "--tool", tool, binary, idiom.name])
    hazards = re.search(r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?, (\d+) warnings?\)", output)
    errors = re.search(r"ERROR SUMMARY: (\d+) errors?", output)
    if hazards:
        return "error" if int(hazards[1]) else "warning" if int(hazards[2]) else "clean"
    if errors:
        return "error" if int(errors[1]) else "clean"
    return f"? (exit {status}: {output.strip()[-200:]})"


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("emulated", "gpu"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    mode, binary = argv
    passed = failed = 0
    for idiom in read_table():
        said = ({"emulator": emulated_verdict(binary, idiom)} if mode == "emulated"
                else {tool: gpu_verdict(binary, idiom, tool) for tool in GPU_TOOLS})
        wrong = [f"{column}: the table says {idiom.verdicts[column]}, the tool said {verdict}"
                 for column, verdict in said.items() if verdict != idiom.verdicts[column]]
        print(f"{idiom.name}: " + ("; ".join(wrong) if wrong else ", ".join(f"{c} {v}" for c, v in said.items())))
        passed, failed = passed + (not wrong), failed + bool(wrong)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
