#!/usr/bin/env python3
"""make bench: every timing study of the lab in one run, into results/<gpu>/.

Builds nothing (the Makefile builds the demos first), runs each demo with
--no-draw --csv, shows progress, and files the CSVs (the lab's one schema,
README.md) under a folder named after the GPU, e.g. results/nvidia-h200/.
Standard library only. Needs a GPU.
"""

from __future__ import annotations

import argparse
import csv
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LAB = Path(__file__).resolve().parent.parent
from tests.course import table as course

# What each part's demo measures; the parts themselves, in order, come from
# the course table (tests/course.ini).
MEASURES = {
    "part1": "Q2: many merges against |A| + |B|",
    "part2": "Q3, Q4: batch merge and batch sort against d",
    "part3": "Q5, Q6 against CCCL; Q7 launch shapes against n",
    "extras": "X1-X4 against merge sort and CUB",
}
STUDIES = [(p.name, MEASURES.get(p.name, "its timing tables")) for p in course.load(LAB).parts]


def gpu_folder(csv_path: Path) -> str:
    with csv_path.open() as f:
        rows = list(csv.DictReader(f))
    name = rows[0]["gpu"] if rows else "unknown-gpu"
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "unknown-gpu"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", default="", help="timed runs per measurement (default: each demo's)")
    p.add_argument("--only", default="", help="comma-separated demos (part1,part2,part3,extras)")
    p.add_argument("--out", default=str(LAB / "results"), help="where the <gpu>/ folder goes")
    args = p.parse_args()
    studies = [s for s in STUDIES if not args.only or s[0] in args.only.split(",")]
    written: list[Path] = []
    left_out: list[str] = []  # rows a demo left out for want of device memory
    with tempfile.TemporaryDirectory() as tmp:
        for number, (demo, what) in enumerate(studies, 1):
            print(f"[{number}/{len(studies)}] ./{demo}: {what} ...", flush=True)
            target = Path(tmp) / f"{demo}.csv"
            cmd = [str(LAB / demo), "--no-draw", "--csv", str(target)]
            if args.runs:
                cmd += ["--runs", args.runs]
            t0 = time.monotonic()
            r = subprocess.run(cmd, cwd=LAB, text=True, capture_output=True)
            print(r.stdout, end="")
            if r.returncode != 0 or not target.exists():
                print(r.stderr, end="", file=sys.stderr)
                print(f"bench: ./{demo} failed (exit {r.returncode}); no results filed", file=sys.stderr)
                return 1
            left_out += [f"./{demo}: {line}" for line in dict.fromkeys(
                ln for ln in r.stdout.splitlines() if ln.startswith("left out: "))]
            print(f"[{number}/{len(studies)}] ./{demo} done in {time.monotonic() - t0:.0f} s\n", flush=True)
            written.append(target)
        folder = Path(args.out) / gpu_folder(written[0])
        folder.mkdir(parents=True, exist_ok=True)
        for path in written:
            shutil.copy(path, folder / path.name)
        note = folder / "left_out.txt"
        if left_out:
            note.write_text("Rows left out: this GPU had too little free device memory for them.\n" +
                            "\n".join(left_out) + "\n")
        elif note.exists():
            note.unlink()
    print(f"bench: wrote {', '.join(p.name for p in written)} to {folder}; `make plots` draws them")
    if left_out:
        print(f"bench: {len(left_out)} row(s) left out for want of device memory, listed in {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
