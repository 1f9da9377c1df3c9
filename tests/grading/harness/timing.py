"""Speed, for information (TIMING=1, no points): each part's demo timed in
the submission's sandbox, as ratios to the reference's on the same GPU."""

from __future__ import annotations

import csv
import io
import math
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from . import sandbox as sb
from .building import BASE_BUILD_TIMEOUT, copy_lab
from .course_table import LAB
from .processes import LEFT_FILE_CAP, LeftFileError, describe_exit, left_text, run

if TYPE_CHECKING:  # for the annotations only
    from .options import Options
    from .processes import Run
    from .running import Grading


DEMO_TIMEOUT = 600  # one demo's timing tables (TIMING=1)


# Fewer runs and a smaller Q7 study than make bench: a ratio, not a figure to publish.
DEMO_ARGS = ["--no-draw", "--runs", "3"]


DEMO_EXTRA = {"part3": ["--max-log2", "22"]}


def read_timing_csv(path: Path) -> dict[tuple[str, str, str, str], float]:
    """A demo's --csv file (the lab's schema): median ms of the lab's kernel per
    (study, n, d, shape); each row repeats it once per peer."""
    rows: dict[tuple[str, str, str, str], float] = {}
    try:
        for r in csv.DictReader(io.StringIO(left_text(path), newline="")):
            try:
                ms = float(r["median_ms"])
            except (KeyError, TypeError, ValueError):
                continue
            if ms > 0 and r.get("study") not in (None, "copy"):
                rows[(r["study"], r.get("n", ""), r.get("d", ""), r.get("shape", ""))] = ms
    except (LeftFileError, csv.Error):
        return {}
    return rows


def speed_ratios(student: dict, reference: dict) -> dict[str, tuple[float, int]]:
    """Per study: the geometric mean over the rows both measured of (student
    time / reference time), and how many rows that is."""
    logs: dict[str, list[float]] = {}
    for key, ms in student.items():
        if key in reference:
            logs.setdefault(key[0], []).append(math.log(ms / reference[key]))
    return {study: (math.exp(sum(v) / len(v)), len(v)) for study, v in sorted(logs.items())}


def speed_note(ratios: dict[str, tuple[float, int]], gpu: str, missing: list[str]) -> str:
    """One line for the report: the ratios per study, and what could not be timed."""
    text = "speed, for information (no points): your time / the reference's on " + gpu + \
           " (geometric mean per study; below 1 is faster): "
    text += ", ".join(f"{study} {ratio:.2f}" for study, (ratio, _) in ratios.items()) or "nothing comparable"
    if missing:
        text += "; not timed: " + "; ".join(missing)
    return text


_reference_timing: dict[str, tuple[dict, str, str]] = {}  # per part (rows, why not, GPU), once per grading run


_reference_lock = threading.Lock()  # grade-all's workers share it


def read_demo(r: Run, part: str, csv_path: Path) -> str:
    if r.returncode != 0 or not csv_path.exists():
        return f"./{part} {describe_exit(r, DEMO_TIMEOUT)}"
    return ""


def reference_timing(part: str, opts: Options, env: dict) -> tuple[dict, str, str]:
    """The reference's timing tables on this GPU, measured once per grading run
    in a copy of the lab that keeps the instructor files, outside the outputs
    and never visible to a submission's sandbox."""
    with _reference_lock:
        if part not in _reference_timing:
            with tempfile.TemporaryDirectory(prefix="lab-reference-", dir=opts.work_root) as tmp:
                lab = Path(tmp)
                copy_lab(LAB, lab, exclude=tuple(opts.outputs), with_reference=True)
                csv_path = lab / f"timing-{part}.csv"
                b = run(["make", f"-j{opts.jobs}", "IMPL=reference", f"ARCH={opts.arch}", f"build/reference/{part}"],
                          lab, BASE_BUILD_TIMEOUT)
                why = f"{part} demo does not build" if b.returncode != 0 else ""
                if not why:
                    r = run([str(lab / "build" / "reference" / part), *DEMO_ARGS, *DEMO_EXTRA.get(part, []),
                               "--csv", str(csv_path)], lab, DEMO_TIMEOUT, env={**env, "LAB_TRACE": "0"})
                    why = read_demo(r, part, csv_path)
                _reference_timing[part] = (read_timing_csv(csv_path) if not why else {}, why,
                                           _gpu_name(csv_path) if not why else "")
        return _reference_timing[part]


def time_submission(g: Grading, built: list[str]) -> str:
    """Each built part's demo tables (sandboxed), as ratios to the reference's (a note)."""
    if not (LAB / "part1_merge_path" / "reference.cu").exists():
        return "speed: not timed (this copy of the lab has no reference files to compare with)"
    ratios, missing, gpu = {}, [], ""
    for part in built:
        reference, why, gpu_name = reference_timing(part, g.opts, g.env)
        if why:
            missing.append(f"the reference's {why}")
            continue
        gpu = gpu or gpu_name  # the reference's CSV names the GPU; a submission's could lie
        b = g.build(f"build/student/{part}", g.logs / f"timing-{part}.build.log")
        if b.returncode != 0:
            missing.append(f"{part} demo does not build")
            continue
        # The CSV goes to a pipe (written "{log}"): the demo writes no file.
        r, _, _, csv_pipe = g.sandboxed_with_pipes(
            [str(g.work / "build" / "student" / part), *DEMO_ARGS, *DEMO_EXTRA.get(part, []), "--csv", "{log}"],
            sb.TEST, DEMO_TIMEOUT, g.logs / f"timing-{part}.log", g.private / f"timing-{part}", 0, 0,
            log_cap=LEFT_FILE_CAP, env={**g.env, "LAB_TRACE": "0"})
        csv_path = csv_pipe.wait()
        why = read_demo(r, part, csv_path)
        rows = read_timing_csv(csv_path) if not why else {}
        if why:
            missing.append(why)
            continue
        ratios.update(speed_ratios(rows, reference))
    return speed_note(ratios, gpu or "this GPU", missing)


def _gpu_name(csv_path: Path) -> str:
    try:
        with csv_path.open(newline="") as f:
            return next((r.get("gpu") or "" for r in csv.DictReader(f)), "")
    except (OSError, UnicodeDecodeError, csv.Error):
        return ""
