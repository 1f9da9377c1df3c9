"""Tables of measured results that the documents restate, generated from the CSVs
that `make bench` committed (results/<gpu>/*.csv). tests/grading/docs.py calls
run(): `make docs` rewrites the tables, `make test` fails when one differs.

A block sits between `<!-- results:NAME -->` and `<!-- /results:NAME -->` in a
Markdown file; BLOCKS says which file holds which block. A document that is not
there (the student copy has no TUNING.md) is skipped.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

BLOCK = re.compile(r"<!-- results:(\S+) -->(.*?)<!-- /results:\1 -->", re.S)


def rows_of(lab: Path, gpu: str, demo: str) -> list[dict]:
    with (lab / "results" / gpu / f"{demo}.csv").open() as f:
        return list(csv.DictReader(f))


def exponent(n: int) -> str:
    return f"2^{n.bit_length() - 1}" if n & (n - 1) == 0 else str(n)


def tuned_sort(lab: Path) -> str:
    """The tuned merge sort against the Q6 reference and CUB's sorts, H200."""
    rows = rows_of(lab, "nvidia-h200", "part3")

    def median(study: str, n: int, peer: str | None = None) -> float | None:
        for r in rows:
            if r["study"] == study and int(r["n"]) == n and (peer is None or r["peer"] == peer):
                return float(r["peer_ms"] if peer else r["median_ms"])
        return None

    lines = ["| n | int: tuned ms | / reference | / CUB merge sort | CUB radix sort ms "
             "| tagged: tuned ms | / reference | / CUB merge sort |",
             "|---|---|---|---|---|---|---|---|"]
    for n in (1 << 20, 1 << 24, 1 << 26, 1 << 27, 1 << 28):
        cells = [exponent(n)]
        for study, radix in (("Q6 tuned", True), ("Q6 tuned tagged", False)):
            ours = median(study, n)
            if ours is None:
                cells += ["-"] * (4 if radix else 3)
                continue
            cells.append(f"{ours:.3f}")
            for peer in ("Q6 reference", "cub::DeviceMergeSort"):
                theirs = median(study, n, peer)
                cells.append(f"{ours / theirs:.2f}" if theirs else "-")
            if radix:
                theirs = median(study, n, "cub::DeviceRadixSort")
                cells.append(f"{theirs:.3f}" if theirs else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n\n" + "\n".join(lines) + "\n\n"


BLOCKS = {"TUNING.md": {"tuned-sort": tuned_sort}}


def run(lab: Path, check: bool) -> list[str]:
    problems = []
    for rel, makers in BLOCKS.items():
        path = lab / rel
        if not path.exists():
            continue
        old = path.read_text()
        seen: set[str] = set()

        def block(m: re.Match) -> str:
            name = m.group(1)
            if name not in makers:
                problems.append(f"{rel}: no table named '{name}' (results/tables.py, BLOCKS)")
                return m.group(0)
            seen.add(name)
            return f"<!-- results:{name} -->{makers[name](lab)}<!-- /results:{name} -->"

        new = BLOCK.sub(block, old)
        problems += [f"{rel}: no block '{name}' (its markers are gone)" for name in sorted(set(makers) - seen)]
        if new != old:
            if check:
                problems.append(f"{rel}: a table differs from the CSV it restates (run make docs)")
            else:
                path.write_text(new)
    return problems
