"""Tables of measured results that the documents restate, made from the CSVs that
`make bench` committed (results/<gpu>/*.csv). A table sits between
`<!-- results:NAME -->` and `<!-- /results:NAME -->`; BLOCKS says which file
holds which. tests/course/docs.py writes them with the course table's blocks
(`make docs`) and checks them (`make test`); a document that is not there (the
student copy has no TUNING.md) is skipped.
"""

from __future__ import annotations

import csv
from pathlib import Path


def rows_of(lab: Path, gpu: str, demo: str) -> list[dict]:
    with (lab / "results" / gpu / f"{demo}.csv").open() as f:
        return list(csv.DictReader(f))


def exponent(n: int) -> str:  # n a power of two
    return f"2^{n.bit_length() - 1}"


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
