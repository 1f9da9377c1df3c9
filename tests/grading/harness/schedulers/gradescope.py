"""Gradescope: the autograder zip and the autograder itself.

Gradescope builds an image once (setup.sh, whose last step is
autograder-setup below) and then runs run_autograder (autograder below) for
each submission, in /autograder: source/ (the zip: setup.sh, run_autograder,
lab/), submission/ (what the student uploaded), results/results.json (what
Gradescope shows). Its runners have no GPU: a submission there gets feedback
from the lab's CPU emulator, marked provisional and scored 0, and is graded
on a GPU after the deadline (make grade-all, scores.csv). Where a GPU is
there after all, it is graded exactly as make grade grades it (grade_probed)."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

from ..building import (BUILD_JOB_BYTES, build_emulated, copy_lab, place_files, prepare_base,
                        prepare_emulated_base, verify_base)
from ..course_table import GRADING, GradingError, LAB, PARTS, all_questions, read_documents, read_manifest
from ..gpus import gpu_listed, lease, probe_held, visible_gpus
from ..judging import QuestionResult
from ..options import flag
from ..outputs import (feedback_json, feedback_table, fresh_logs, report_note, report_test, say, take_report,
                       write_atomically, write_documents)
from ..processes import kept_env
from ..running import Grading, jobs_for_memory, run_emulated_cases
from ..submission import collect_submission
from .local import grade_probed

if TYPE_CHECKING:  # for the annotations only
    from ..options import Options


def cmd_gradescope(args, _opts) -> int:
    """The Gradescope autograder zip: the pristine lab, setup.sh, run_autograder."""
    out = Path(args.out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    here = GRADING / "gradescope"
    with tempfile.TemporaryDirectory() as tmp:
        lab = Path(tmp) / "lab"
        copy_lab(LAB, lab, exclude=(out.parent,))
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
            for name in ("setup.sh", "run_autograder"):
                info = zipfile.ZipInfo(name)
                info.external_attr = 0o755 << 16
                z.writestr(info, (here / name).read_text())
            for path in sorted(lab.rglob("*")):
                if path.is_file():
                    info = zipfile.ZipInfo("lab/" + path.relative_to(lab).as_posix())
                    info.external_attr = (path.stat().st_mode & 0o777) << 16
                    z.writestr(info, path.read_bytes())
    say(f"wrote {out}: upload it as the autograder of a Gradescope assignment (see INSTRUCTORS.md, Gradescope)")
    return 0


# A submission's emulated test runs in all (BUDGET overrides): with the builds,
# within a 10-minute autograder timeout.
EMU_BUDGET = 360


def feedback(submission: Path, out: Path, base: Path, opts: Options, student: str, why: str,
             started: float) -> dict:
    """Feedback without a GPU: the submission's files in a copy of the
    emulated base, each part built by g++ (and its kernel file by nvcc, where
    here), every test but the [large] tier run on the CPU emulator in a
    sandboxed process of its own; results.json (outputs.feedback_json),
    report.txt and the written report into `out`. Never a grade: `why` says
    why there is no GPU grading here."""
    logs = fresh_logs(out)
    sub = collect_submission(submission, read_manifest(LAB), read_documents(LAB))
    report = write_documents(out, sub.documents)
    verify_base(base)
    results = {qid: QuestionResult(q, {}) for qid, q in all_questions(LAB, emulated=True).items()}
    # (the report's line says what a missing report means)
    notes = [n for n in sub.notes if not n.startswith("no report found")] + [opts.sandbox.describe()]
    device: dict[str, tuple[bool | None, str]] = {}
    work = Path(tempfile.mkdtemp(prefix="lab-feedback-", dir=opts.work_root))
    g = None
    try:
        emulated_copy(base, work, sub.files)
        env = {**kept_env(), "LAB_SEED": str(opts.seed), "EMU_SEED": str(opts.seed), "NO_COLOR": "1"}
        g = Grading(work, logs, opts, env, say, student)
        opts.sandbox.own(work)
        built = build_emulated_parts(g, results, notes, device)
        run_emulated_cases(g, results, built)
    finally:
        if g is not None:
            shutil.rmtree(g.private, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    data = feedback_json(list(results.values()), notes, opts.seed, why, report, time.monotonic() - started, device)
    text = feedback_table(list(results.values()))
    write_atomically(out / "report.txt", text + "\n\n" + data["output"] + "\n")
    write_atomically(out / "results.json", json.dumps(data, indent=2))
    say("\n" + text)
    return data


def emulated_copy(base: Path, work: Path, files: dict[str, bytes]) -> None:
    """A copy of the emulated base with the submission's files that differ
    from the skeleton's in it."""
    shutil.copytree(base, work, dirs_exist_ok=True, copy_function=shutil.copy2)
    (work / ".ready").unlink(missing_ok=True)
    changed = {rel: content for rel, content in files.items() if (work / rel).read_bytes() != content}
    if changed:  # the skeleton's programs go: none may stand in for a file that does not compile
        shutil.rmtree(work / "build" / "emu" / "student", ignore_errors=True)
        for _, part_dir in PARTS:
            for left in (work / "build" / "emu" / "device" / part_dir).glob("student.*"):
                left.unlink()
        place_files(work, changed)


def build_emulated_parts(g: Grading, results: dict[str, QuestionResult], notes: list[str],
                         device: dict[str, tuple[bool | None, str]]) -> list[str]:
    """Each part of this run built for the emulator (build_emulated), in
    turn: returns those built; the questions of the others get why as their
    build_error. `device`: per part, what the device check said."""
    jobs, built = jobs_for_memory(BUILD_JOB_BYTES), []
    for part, _ in PARTS:
        mine = [r for r in results.values() if r.question.part == part]
        if part not in g.opts.parts:
            for r in mine:
                r.build_error = "not graded: not checked in this run (PARTS)"
            continue
        say(f"  {g.student}: building {part} for the emulator")
        error, device[part] = build_emulated(g, part, jobs)
        if error:
            notes.append(f"{part} does not compile for the emulator (logs/build-{part}.log)")
            for r in mine:
                r.build_error = error
        else:
            built.append(part)
    return built


def autograder_failed(final: Path, submission: Path, out: Path, error: str, seconds: float) -> None:
    """results.json when the autograder itself could not check a submission:
    said to be the autograder's problem, the report acknowledged."""
    try:
        report = take_report(submission, out)
    except Exception:  # noqa: BLE001 -- the report's note must still be written
        report = ""
    questions = list(all_questions(LAB).values())
    text = (f"The autograder could not check this submission ({error}). This is a problem of the autograder, not "
            "of your files: your instructor sees it, and your grade comes from a grading on a GPU after the "
            "deadline.\n" + report_note(questions, report))
    write_atomically(final, json.dumps({"score": 0, "execution_time": round(seconds), "output": text,
                                          "visibility": "visible", "stdout_visibility": "visible",
                                          "tests": report_test(questions, report)}, indent=2))


def emulated_base_of(args) -> Path:
    return Path(str(Path(args.base).resolve()) + "-emulated")


def cmd_autograder(args, opts: Options) -> int:
    """Gradescope's run_autograder: with a GPU (nvidia-smi lists one, nvcc is
    here, the lab's probe agrees, a sandbox starts), the grading of make
    grade; otherwise provisional feedback from the emulator. Either way
    results/results.json, and the written report acknowledged."""
    started = time.monotonic()
    root = Path(args.root).resolve()
    submission, out, final = root / "submission", Path(args.out).resolve(), root / "results" / "results.json"
    final.parent.mkdir(parents=True, exist_ok=True)
    try:
        listed, why = (False, "this autograder gives feedback only (--feedback-only 1)") \
            if flag("--feedback-only", args.feedback_only) else gpu_listed()
        if listed and shutil.which("nvcc") is None:
            why = f"{why}, but no CUDA toolkit (nvcc) to build for it"
        elif listed:
            try:
                base = prepare_base(Path(args.base).resolve(), opts, say)
                with lease(visible_gpus(), opts.lease_wait, say) as gpu_env:
                    ok, gpu, _ = probe_held(base, gpu_env, opts)
                    if ok and not opts.unsandboxed():
                        status = grade_probed(submission, out, base, opts, "gradescope", gpu, gpu_env)
                        shutil.copyfile(out / "results.json", final)
                        return status
            except GradingError as err:
                ok, gpu = False, f"{why}, but the lab does not build for it: {str(err).splitlines()[0]}"
            why = gpu if not ok else f"a GPU is here, but grading needs a sandbox: {opts.unsandboxed()}"
        say(f"no GPU grading here ({why}): provisional feedback from the CPU emulator (LAB_SEED={opts.seed})")
        if not args.budget:
            opts.budget = EMU_BUDGET
        base = prepare_emulated_base(emulated_base_of(args), opts.parts, opts.outputs + [emulated_base_of(args)], say)
        feedback(submission, out, base, opts, "gradescope", why, started)
        shutil.copyfile(out / "results.json", final)
        return 0
    except Exception as err:  # noqa: BLE001 -- whatever it was, the student gets a results.json that says so
        say(f"the autograder failed: {err!r}")
        autograder_failed(final, submission, out, str(err).splitlines()[0] if str(err) else repr(err),
                          time.monotonic() - started)
        return 3


def cmd_check_submission(args, opts: Options) -> int:
    """make check-submission, on any machine (no GPU needed): a hand-in (a
    folder or an archive, as uploaded) checked as Gradescope's feedback checks
    it: which of the manifest's files were found, missing or extra, each part
    built (nvcc's device check where nvcc is), the emulated graders per
    question, and the provisional table. Never a grade."""
    started = time.monotonic()
    submission = Path(args.submission or LAB).resolve()
    if not submission.exists():
        raise GradingError(f"SUBMISSION={args.submission}: no such file or folder")
    out = Path(args.out).resolve()
    base = Path(args.base).resolve() if args.base else out.parent / f".{out.name}-base"
    opts.outputs.append(base)
    say(f"checking {submission} as Gradescope's feedback would (the CPU emulator, LAB_SEED={opts.seed}) ...")
    base = prepare_emulated_base(base, opts.parts, opts.outputs, say)
    data = feedback(submission, out, base, opts, args.student or submission.name,
                    "this is make check-submission, a hand-in check", started)
    files = [ln for ln in data.get("output", "").splitlines() if ln.startswith(("missing:", "ignored"))]
    say("\n".join(files) if files else "every file of the manifest was found, and nothing else")
    say(f"the whole report: {out / 'report.txt'}")
    return 0


def cmd_autograder_setup(args, opts: Options) -> int:
    """setup.sh's last step, once per image: the emulated base (always: g++
    is all it needs) and, where nvcc is here (or --gpu-base 1), the GPU
    grading's base, built now so that no submission waits for them."""
    prepare_emulated_base(emulated_base_of(args), opts.parts, opts.outputs + [emulated_base_of(args)], say)
    say(f"emulated base ready: {emulated_base_of(args)}")
    if flag("--gpu-base", args.gpu_base) if args.gpu_base not in (None, "") else shutil.which("nvcc"):
        try:
            prepare_base(Path(args.base).resolve(), opts, say)
            say(f"GPU base ready: {args.base}")
        except GradingError as err:  # feedback still works; a GPU grading would build it again
            say(f"warning: the GPU base did not build ({err}); submissions get emulated feedback, which needs none")
    return 0
