"""One submission graded: its copy, the trusted runs, the builds, the test
runs, the sanitizers, the verdicts and the outputs, in that order."""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from . import pcie
from .building import BINARY_CAP, build_part, prepare_work, suspicious_symbols
from .course_table import LAB, PARTS, all_questions, read_documents, read_manifest
from .gpus import gpu_place, gpu_view
from .judging import QuestionResult, judge_cases
from .outputs import fresh_logs, incomplete_json, write_atomically, write_documents, write_outputs, write_test_times
from .processes import test_env
from .running import Grading, binary_of, run_cases
from .sanitizers import sanitize
from .submission import collect_submission
from .timing import time_submission
from .trusted import TrustedRuns

if TYPE_CHECKING:  # for the annotations only
    from .options import Options


def grade_one(submission: Path, out: Path, base: Path, opts: Options, student: str, log, gpu_env: dict,
              work: Path | None = None, trusted: TrustedRuns | None = None) -> dict:
    """Grades one submission into `out` (report.txt, results.json, gradebook.csv,
    logs/). Returns summary.json's content, which the caller keeps as the
    record. `work`: a copy already prepared (prepare_work), kept afterwards; by
    default a temporary one outside the lab. results.json says INCOMPLETE until
    every process of the submission is gone and the verdict is written."""
    stamps = [("preparing", time.monotonic())]
    out.mkdir(parents=True, exist_ok=True)
    write_atomically(out / "results.json", json.dumps(incomplete_json("grading did not finish"), indent=2))
    logs = fresh_logs(out)
    own_trusted = trusted is None
    trusted = trusted or TrustedRuns(base, opts, logs)
    results = {qid: QuestionResult(q, {}) for qid, q in all_questions(LAB).items()}
    keep = work is not None
    if work is None:
        work = Path(tempfile.mkdtemp(prefix="lab-grade-", dir=opts.work_root))
        sub = prepare_work(submission, base, work)
    else:
        sub = collect_submission(submission, read_manifest(LAB), read_documents(LAB))
    report = write_documents(out, sub.documents)
    g = grading_on(work, logs, opts, base, gpu_env, log, student)
    notes = [opts.sandbox.describe()] + list(sub.notes)
    if opts.sanitizer_note():
        notes.append(opts.sanitizer_note())
    try:
        notes += run_grading(g, base, results, trusted, gpu_env, stamps)
    finally:
        shutil.rmtree(g.private, ignore_errors=True)
        if own_trusted:
            trusted.close()
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    return write_outputs(out, student, list(results.values()), notes, opts.seed, report=report,
                         seconds=time.monotonic() - stamps[0][1])


def grading_on(work: Path, logs: Path, opts: Options, base: Path, gpu_env: dict, log, student: str) -> Grading:
    """The submission's grading on the GPU `gpu_env`: its sandboxes see that
    GPU alone (gpu_view) and its processes take that GPU's places."""
    sandbox_gpu_env, nodes = gpu_view(base, gpu_env)
    g = Grading(work, logs, opts, test_env(opts, sandbox_gpu_env), log, student)
    g.base, g.judge_env = base, test_env(opts, gpu_env)  # the judge runs outside the sandbox, on the same GPU
    g.gpu = nodes
    g.gpu_place = gpu_place(base, gpu_env)
    g.metered = opts.pcie and opts.judge and bool(g.gpu_uuid) and pcie.readable(g.gpu_uuid)
    return g


def run_grading(g: Grading, base: Path, results: dict[str, QuestionResult], trusted: TrustedRuns, gpu_env: dict,
                stamps: list[tuple[str, float]]) -> list[str]:
    """The grading's steps, each stamped in `stamps` (said in the log): the
    trusted runs and the builds, the test cases, the sanitizers, the
    verdicts, the demos' timing (TIMING=1). Returns the notes they make."""
    opts = g.opts
    # The trusted runs first, alone on the GPU: no process of the
    # submission's starts before they end (grade-all runs them before any
    # grading). The builds go meanwhile; a build sees no GPU.
    oracle = threading.Thread(target=trusted.run_all, args=(gpu_env,), daemon=True)
    oracle.start()
    stamps.append(("builds", time.monotonic()))
    notes: list[str] = []
    built = build_parts(g, base, results, notes)
    by_part = {part: [r for r in results.values() if r.question.part == part] for part in built}
    stamps.append(("trusted runs", time.monotonic()))
    oracle.join()
    stamps.append(("tests", time.monotonic()))
    with pcie.Meter(g.gpu_uuid) as meter:
        claims = run_cases(g, {part: [r.question for r in rs] for part, rs in by_part.items()}, trusted.seconds,
                           lambda part, large: trusted.part(part, large, gpu_env)[1])
    log_host_traffic(g.logs / "pcie.tsv", meter.bytes, trusted.pcie.get(gpu_env.get("CUDA_VISIBLE_DEVICES", "")))
    if g.traffic:
        (g.logs / "pcie-cases.tsv").write_text("case\tcalls\tarray bytes\tmoved\tpast allowances\n" + "".join(
            f"{name}\t{t.calls}\t{t.arrays}\t{t.moved}\t{t.excess}\n" for name, t in sorted(g.traffic.items())))
    elif not g.metered:
        notes.append("host traffic not metered: " + ("PCIE=0" if not opts.pcie else "NVML cannot read this GPU's counters"
                                                     if opts.judge else "JUDGE=0"))
    stamps.append(("sanitizers", time.monotonic()))
    # After the graded runs, never beside them: the GPU time-slices between
    # processes, and sanitized kernels beside a graded test pushed the
    # reference's own tests past their limits.
    if opts.sanitize:
        sanitize(g, [(binary_of(g.work, part, opts.judge), by_part[part]) for part in built])
    stamps.append(("judging", time.monotonic()))
    for part in built:
        for large in (False, True):
            judge_cases(g, by_part[part], large, claims[(part, large)], trusted.part(part, large, gpu_env))
    stamps.append(("", time.monotonic()))
    g.log(f"  {g.student}: trusted runs: {trusted.summary()}")
    phases = [(name, b - a) for (name, a), (_, b) in zip(stamps, stamps[1:])]
    g.log(f"  {g.student}: " + ", ".join(f"{name} {sec:.0f} s" for name, sec in phases))
    (g.logs / "phases.tsv").write_text("".join(f"{name}\t{sec:.1f}\n" for name, sec in phases))
    notes += g.notes
    if opts.large_off:
        notes.append(f"the [large] tier is {opts.large_off}")
    write_test_times(g, g.logs / "test-times.tsv")
    if opts.timing:
        g.log(f"  {g.student}: timing the demos")
        notes.append(time_submission(g, built))
    return notes


def log_host_traffic(path: Path, tests: int | None, trusted: int | None) -> None:
    """The PCIe bytes of the grading's test phase and of the trusted runs
    (pcie.py) into `path`, for a person; no note and no verdict: on the
    reference the judged tests moved 1.12 times what the trusted runs (which
    compute every answer on the host) moved, since the judge's own uploads
    and read-backs dominate both (INSTRUCTORS.md: what the trust rests on)."""
    if tests is not None:
        path.write_text(f"tests\t{tests}\n" + (f"trusted runs\t{trusted}\n" if trusted else ""))


def build_parts(g: Grading, base: Path, results: dict[str, QuestionResult], notes: list[str]) -> list[str]:
    """Builds the graded parts at once (each is mostly one nvcc run on its
    student.cu; everything they share is already in the base) and returns
    those built. The questions of a part not graded, not built or refused
    get why as their build_error, and the notes say it."""
    graded = [part for part, _ in PARTS if part in g.opts.parts]
    g.log(f"  {g.student}: building {', '.join(graded)}")
    with ThreadPoolExecutor(max_workers=max(1, len(graded))) as pool:
        builds = dict(zip(graded, pool.map(lambda part: build_part(g, base, part), graded)))
    built = []
    for part, part_dir in PARTS:
        part_questions = [r for r in results.values() if r.question.part == part]
        if part not in g.opts.parts:
            for r in part_questions:
                r.build_error = "not graded (PARTS)"
            continue
        err, note = builds[part]
        if err:
            notes.append(note)
            for r in part_questions:
                r.build_error = err
            continue
        binary = binary_of(g.work, part, g.opts.judge)
        if binary.stat().st_size > BINARY_CAP:
            notes.append(f"{part} gets 0: its test program is {binary.stat().st_size >> 20} MiB (at most "
                         f"{BINARY_CAP >> 20} MiB)")
            for r in part_questions:
                r.build_error = f"its test program is larger than {BINARY_CAP >> 20} MiB"
            continue
        g.remember(binary)
        notes += suspicious_symbols(part, g.work / "build" / "student" / part_dir / "student.o")
        built.append(part)
    return built
