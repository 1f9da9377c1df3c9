#!/usr/bin/env python3
"""make plots: PNG figures from the CSVs under results/<gpu>/ (no GPU needed).

Needs matplotlib (Debian/Ubuntu: apt-get install python3-matplotlib; or
pip install matplotlib). One figure per study, in the CSVs' folder:
  q2.png        Part 1: mergeSmallMany, keys/s against d, with std::merge
  q3_q4.png     Part 2: batch merge and batch sort, keys/s against d, with peers
  q5_q6.png     Part 3: large merge and merge sort, keys/s against n, with peers
  q7.png        Part 3: merge sort keys/s against n for every launch shape
  extras.png    extras: bitonic and odd-even against merge sort and CUB
The copy floor (a device-to-device copy's keys/s: every key read and written
once; Part 1's study "copy" of 2^24 ints) is drawn as a dashed line where the
CSVs have it. Q5's tables also time a copy at each n (the peer "device copy").
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

LAB = Path(__file__).resolve().parent.parent


def read_rows(folder: Path) -> list[dict]:
    rows = []
    for path in sorted(folder.glob("*.csv")):
        with path.open() as f:
            rows += list(csv.DictReader(f))
    return rows


def series(rows: list[dict], study: str, x: str, shape: bool = False) -> dict[str, list[tuple[float, float]]]:
    """name -> [(x, keys/s)]: the lab's kernel once per x, and every peer.
    `study` may name several, comma-separated ("Q4,Q4 tuned": one line per
    implementation, the peers once)."""
    out: dict[str, dict[float, float]] = defaultdict(dict)
    studies = study.split(",")
    for r in rows:
        if r["study"] not in studies:
            continue
        n, xv = float(r["n"]), float(r[x])
        ours = f"{r['implementation']} {r['shape']}" if shape and r["shape"] else r["implementation"]
        out[ours][xv] = float(r["keys_per_s"])
        if r["peer"] and r["peer_ms"] and not r["peer"].startswith("Q"):  # a Q-named peer is ours, drawn already
            out[r["peer"]][xv] = n / (float(r["peer_ms"]) * 1e-3)
    return {k: sorted(v.items()) for k, v in out.items()}


def floor(rows: list[dict]) -> float | None:
    copies = [float(r["keys_per_s"]) for r in rows if r["study"] == "copy"]
    return max(copies) if copies else None


def draw(plt, title: str, panels: list[tuple[str, dict]], xlabel: str, out: Path, copy: float | None,
         logx: bool = True) -> bool:
    panels = [(t, s) for t, s in panels if s]
    if not panels:
        return False
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4.5), squeeze=False)
    for ax, (subtitle, data) in zip(axes[0], panels):
        for name, points in data.items():
            xs, ys = zip(*points)
            ax.plot(xs, ys, marker="o", markersize=3, label=name)
        if copy:
            ax.axhline(copy, linestyle="--", color="grey", label="copy floor (2^24 ints)")
        ax.set_xscale("log", base=2) if logx else None
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("keys per second")
        ax.set_title(subtitle, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(textwrap.fill(title, width=70 * len(panels)))  # about 70 characters fit a panel's width
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return True


def plot_folder(plt, folder: Path) -> list[Path]:
    rows = read_rows(folder)
    gpu = rows[0]["gpu"] if rows else folder.name
    copy = floor(rows)
    made = []
    figures = [
        ("q2.png", "Q2: many merges, one block each", [("mergeSmallMany", series(rows, "Q2", "d"))], "d = |A| + |B|"),
        ("q3_q4.png", "Part 2: batches of N arrays of d keys",
         [("Q3 batch merge", series(rows, "Q3,Q3 tuned", "d")), ("Q4 batch sort", series(rows, "Q4,Q4 tuned", "d"))],
         "d"),
        ("q5_q6.png", "Part 3: one large merge, one large sort",
         [("Q5 mergeLarge", series(rows, "Q5", "n")), ("Q6 mergeSort", series(rows, "Q6,Q6 tuned", "n"))], "n (keys)"),
        ("q7.png", "Q7: merge sort for every launch shape (threads x items)",
         [("mergeSortShaped", series(rows, "Q7", "n", shape=True))], "n (keys)"),
        ("extras.png", "Extras: sorting networks against merge sort",
         [("many blocks", series(rows, "X2-X4", "n"))], "n (keys)"),
    ]
    for name, title, panels, xlabel in figures:
        if draw(plt, f"{title} - {gpu}", panels, xlabel, folder / name, copy):
            made.append(folder / name)
    return made


def missing_matplotlib() -> str:
    """What to do without matplotlib in this Python: the PYTHON= of another
    one here that has it, or how to install it."""
    me = Path(sys.executable).resolve()
    candidates = [shutil.which("python3", path=d) for d in os.environ.get("PATH", "").split(os.pathsep) if d]
    candidates += ["/usr/bin/python3", "/usr/local/bin/python3"]
    seen = {me}
    for c in filter(None, candidates):
        if not Path(c).exists() or Path(c).resolve() in seen:
            continue
        seen.add(Path(c).resolve())
        try:
            if subprocess.run([c, "-c", "import matplotlib"], capture_output=True, timeout=30).returncode == 0:
                return (f"plots: {sys.executable} has no matplotlib, {c} has it: make plots PYTHON={c}")
        except (OSError, subprocess.TimeoutExpired):
            continue
    return (f"plots: {sys.executable} has no matplotlib (nor does another python3 here). Install it, then run "
            f"make plots again: apt-get install python3-matplotlib, then make plots PYTHON=/usr/bin/python3; "
            f"or {sys.executable} -m pip install matplotlib")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("folders", nargs="*", help="results/<gpu> folders (default: every one with CSVs)")
    args = p.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(missing_matplotlib(), file=sys.stderr)
        return 1
    folders = [Path(f) for f in args.folders] or sorted({p.parent for pattern in ("*/*.csv", "mine/*/*.csv")
                                                         for p in (LAB / "results").glob(pattern)})
    if not folders:
        print("plots: no CSVs under results/<gpu>/: run `make bench` on a machine with a GPU first", file=sys.stderr)
        return 1
    for folder in folders:
        made = plot_folder(plt, folder)
        print(f"plots: {folder}: " + (", ".join(p.name for p in made) if made else "nothing to draw"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
