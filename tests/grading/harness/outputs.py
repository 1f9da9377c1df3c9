"""What a grading writes: results.json (Gradescope's), report.txt with its
table, summary.json (the harness's record), the student's written report
copied for a person, the gradebook line, the provisional feedback of a
grading without a GPU, and what the harness prints."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from .course_table import LAB, all_questions, read_documents, read_manifest, report_points
from .judging import QuestionResult
from .reports import Outcome
from .submission import collect_submission

if TYPE_CHECKING:  # for the annotations only
    from .course_table import Question, TestCase
    from .running import Grading


def say(message: str) -> None:
    print(message, flush=True)


def write_atomically(path: Path, content: str | bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    if isinstance(content, bytes):
        tmp.write_bytes(content)
    else:
        tmp.write_text(content)
    os.replace(tmp, path)


def fresh_logs(out: Path) -> Path:
    """out/logs/, emptied: what a grading logs."""
    out.mkdir(parents=True, exist_ok=True)
    logs = out / "logs"
    if logs.exists():
        shutil.rmtree(logs)
    logs.mkdir()
    return logs


def incomplete_json(reason: str) -> dict:
    """What results.json says while grading runs, and after one that was cut off."""
    return {"score": 0, "output": "INCOMPLETE: " + reason, "tests": [], "stdout_visibility": "visible"}


def gradescope_test(name: str, score: float, max_score: float, output: str, status: str = "") -> dict:
    """One row of results.json's tests, as Gradescope reads it; `status`
    ("passed" or "failed") colours the row, "" leaves it to Gradescope (a
    test not graded, which is neither)."""
    row = {"name": name, "score": score, "max_score": max_score, "output": output, "visibility": "visible"}
    if status:
        row["status"] = status
    return row


def report_note(questions: list[Question], report: str) -> str:
    """The line every output gives the written report."""
    shares = ", ".join(f"{q.qid} {q.report_points:g}" for q in questions if q.report_points)
    points = f"{report_points(questions):g} points ({shares})"
    if not report:
        return f"report: none handed in (report.pdf or report.md); its {points} are for a person to decide"
    return f"report: {report}, copied to report/ -- its {points} are to be graded by a person"


def report_test(questions: list[Question], report: str) -> list[dict]:
    """The written report's row: points for a person (none here), passed when
    a report was taken and failed when none was handed in."""
    if not report_points(questions):
        return []
    asked = ", ".join(q.qid for q in questions if q.report_points)
    return [gradescope_test(f"Report ({asked}): graded by a person, not here", 0, 0, report_note(questions, report),
                            "passed" if report else "failed")]


def results_json(results: list[QuestionResult], notes: list[str], seed: int | None, extra: str = "",
                 report: str = "", seconds: float = 0) -> dict:
    """Gradescope's results.json of a grading: a row per test case that
    carries points, its share of its question's points as max_score (the
    shares of a question add up to exactly its points: split_cents; a bonus
    question's are 0, its points add to the score), the sanitizers' penalties
    and the report's row. `seconds`: how long the grading took."""
    tests = []
    for r in results:
        q = r.question
        cents = r.test_cents()
        for case in q.tests:
            if q.weights[case.name] == 0:
                continue
            score, share = cents[case.name]
            o = r.outcomes.get(case.name, Outcome("failed", "not run"))
            text = {"passed": "passed", "not-graded": o.message}.get(o.status, o.message)
            status = {"passed": "passed", "failed": "failed"}.get(o.status, "")
            if r.build_error:
                graded = not r.build_error.startswith("not graded")
                text = "does not compile:\n" + r.build_error if graded else r.first_failure
                status = "failed" if graded else ""
            tests.append(gradescope_test(f"{q.qid} {case.name}", score / 100, 0 if q.bonus else share / 100, text,
                                         status))
        if r.sanitizer:
            tests.append(gradescope_test(f"{q.qid} compute-sanitizer", 0, 0,
                                         f"{r.sanitizer}: {q.qid} loses {q.sanitizer_penalty:.0%} of its points",
                                         "failed"))
    tests += report_test([r.question for r in results], report)
    total = round(sum(r.score for r in results), 4)
    output = "\n".join(notes + ([extra] if extra else []) + [f"LAB_SEED={seed} repeats these inputs."])
    return {"score": total, "execution_time": round(seconds), "output": output, "visibility": "visible",
            "stdout_visibility": "visible", "tests": tests}


PROVISIONAL = "PROVISIONAL FEEDBACK, NOT A GRADE"


def feedback_json(results: list[QuestionResult], notes: list[str], seed: int, why: str, report: str = "",
                  seconds: float = 0, device: dict[str, tuple[bool | None, str]] | None = None) -> dict:
    """Gradescope's results.json of feedback without a GPU: the graders run on
    the CPU emulator (`results`: each question's outcomes, its tests past 2^31
    elements left out; a build_error where its part did not build), given as
    feedback and never as a grade. Score 0 everywhere; a row per question
    saying which emulated tests passed and failed, passed only when all did,
    with the question's points as its max_score (bonus 0), so the rows add up
    to the assignment's points; the report's row. `why`: why no GPU grading
    here. `device`: per part, whether nvcc compiles its kernel file (None: not
    checked) and what it said."""
    device = device or {}
    tests, ran, passed_all = [], set(), set()  # test cases (one may count for two questions)
    for r in results:
        q = r.question
        if r.build_error.startswith("not graded"):  # a part left out of this run (PARTS)
            tests.append(gradescope_test(f"{q.qid} {q.title}: not checked", 0, q.max_points,
                                         f"{PROVISIONAL}: {r.build_error}"))
            continue
        emulated, passed = emulated_tests(r)
        ran.update((q.part, c.name) for c in emulated)
        passed_all.update((q.part, c.name) for c in passed)
        tests.append(feedback_test(r, device.get(q.part, (None, ""))))
    questions = [r.question for r in results]
    tests += report_test(questions, report)
    checked = list(dict.fromkeys(said for compiles, said in device.values() if compiles is not False and said))
    output = [f"{PROVISIONAL}.",
              f"There is no GPU grading here ({why}), so your files were built with g++ and the lab's graders ran "
              "on its CPU emulator, each test in a process of its own. That checks correctness only: a GPU may "
              "still disagree (warp timing, memory ordering), and speed is not measured. The score shown here is "
              "0 on purpose and is not your grade: your grade comes from a grading of your final submission on "
              "a GPU after the deadline.",
              "",
              f"On the emulator: {len(passed_all)} of {len(ran)} tests pass (per question below). Tests past 2^31 "
              "elements are not emulated.",
              *checked,
              report_note(questions, report),
              f"To repeat these checks in your copy of the lab: LAB_SEED={seed} EMU_SEED={seed} make test "
              "EMULATE=1 IMPL=student (emulator/README.md).",
              *notes]
    return {"score": 0, "execution_time": round(seconds), "output": "\n".join(output), "visibility": "visible",
            "stdout_visibility": "visible", "tests": tests}


def feedback_test(r: QuestionResult, device: tuple[bool | None, str]) -> dict:
    """feedback_json's row of a question checked on the emulator: which of its
    tests passed and failed, what was not emulated, and `device` (whether
    nvcc compiles its part's kernel file, and what it said)."""
    q = r.question
    emulated, passed = emulated_tests(r)
    large = len(q.tests) - len(emulated)
    lines = []
    if r.build_error:
        lines.append("Does not compile for the emulator (g++):\n" + r.build_error)
    else:
        for c in emulated:
            o = r.outcomes.get(c.name, Outcome("failed", "not run"))
            detail = f": {o.message.splitlines()[0][:300]}" if o.status != "passed" and o.message else ""
            lines.append(f"  {'passed' if c in passed else 'FAILED'}  {c.name}{detail}")
    compiles, said = device
    if compiles is False:
        lines.append(said)
    if large:
        lines.append(f"Not emulated: {large} test{'s' if large > 1 else ''} past 2^31 elements ([large]); "
                     f"only the GPU grading runs {'them' if large > 1 else 'it'}.")
    head = f"{PROVISIONAL}: {len(passed)} of {len(emulated)} tests pass on the CPU emulator."
    if r.first_failure:
        head += "\nFirst failure: " + r.first_failure.splitlines()[0][:400]
    ok = not r.build_error and len(passed) == len(emulated) and compiles is not False
    return gradescope_test(f"{q.qid} {q.title}: {len(passed)}/{len(emulated)} pass emulated (provisional)",
                           0, q.max_points, head + "\n" + "\n".join(lines), "passed" if ok else "failed")


def emulated_tests(r: QuestionResult) -> tuple[list[TestCase], list[TestCase]]:
    """A question's tests the emulator runs (all but the [large] tier), and those of them that passed."""
    emulated = [c for c in r.question.tests if not c.large]
    passed = [] if r.build_error else \
        [c for c in emulated if r.outcomes.get(c.name, Outcome("failed")).status == "passed"]
    return emulated, passed


def feedback_table(results: list[QuestionResult]) -> str:
    """feedback_json as a table, for the autograder's log."""
    rows = [f"{'question (emulated: provisional, not graded)':<46} {'tests':>7}  first failure"]
    for r in results:
        emulated, passed = emulated_tests(r)
        title = f"{r.question.qid} {r.question.title}"[:46]
        failure = r.first_failure.splitlines()[0][:160] if r.first_failure else ""
        rows.append(f"{title:<46} {f'{len(passed)}/{len(emulated)}':>7}  {failure}")
    return "\n".join(rows)


def table(results: list[QuestionResult]) -> str:
    rows = [f"{'question':<46} {'points':>11}  {'tests':>5}  first failure"]
    for r in results:
        passed, graded = r.counts()
        title = f"{r.question.qid} {r.question.title}"[:46]  # bonus titles say "(bonus)"
        points = f"{r.score:g}/{r.question.points:g}"
        failure = r.first_failure
        rows.append(f"{title:<46} {points:>11}  {passed:>2}/{graded:<2}  {failure[:160]}")
    total = sum(r.score for r in results)
    maximum = sum(r.question.max_points for r in results)
    rows.append(f"{'total':<46} {f'{total:g}/{maximum:g}':>11}")
    return "\n".join(rows)


def gradebook_header(questions: list[Question]) -> str:
    report = report_points(questions)
    return ",".join(["student", "score", "max"] + [q.qid for q in questions] +
                    [f"report (by a person; {report:g} points)", "seed", "notes"])


def gradebook_line(student: str, results: list[QuestionResult], seed, notes: list[str], report: str = "") -> str:
    """`report`: what the harness took of the written report ("report.md, 2
    figures") or "" when none; its points are left for a person."""
    def quoted(s: str) -> str:
        return '"' + s.replace('"', '""') + '"'

    total = sum(r.score for r in results)
    maximum = sum(r.question.max_points for r in results)
    cells = [quoted(student), f"{total:g}", f"{maximum:g}"] + [f"{r.score:g}" for r in results]
    to_grade = f"to be graded by a person: {report}" if report else "no report handed in"
    return ",".join(cells + [quoted(to_grade), str(seed if seed is not None else ""), quoted("; ".join(notes))])


def write_outputs(out: Path, student: str, results: list[QuestionResult], notes: list[str], seed,
                  extra: str = "", report: str = "", seconds: float = 0) -> dict:
    """Every output file, each replaced whole (results.json last). `report`:
    what was taken of the written report (write_documents), "" for none;
    `seconds`: how long the grading took."""
    data = results_json(results, notes, seed, extra, report, seconds)
    questions = [r.question for r in results]
    summary = {"student": student, "seed": seed, "score": data["score"],
               "questions": {r.question.qid: {"score": r.score, "max": r.question.points} for r in results},
               "report": report,
               "gradebook": gradebook_line(student, results, seed, notes + ([extra] if extra else []), report)}
    write_atomically(out / "summary.json", json.dumps(summary, indent=2))
    text = table(results)
    if report_points(questions):
        text += "\n" + report_note(questions, report)
    if notes or extra:
        text += "\n\nnotes:\n" + "\n".join("  " + n for n in notes + ([extra] if extra else []))
    text += f"\n\nLAB_SEED={seed} repeats these inputs (make grade SEED={seed}).\n"
    write_atomically(out / "report.txt", text)
    write_atomically(out / "gradebook.csv", gradebook_header(questions) + "\n" + summary["gradebook"] + "\n")
    write_atomically(out / "results.json", json.dumps(data, indent=2))
    return summary


def write_documents(out: Path, documents: dict[str, bytes]) -> str:
    """The written report and its figures into out/report/ (by the harness,
    never by a submission's process); returns what was taken, "" for none."""
    folder = out / "report"
    if folder.exists():
        shutil.rmtree(folder)
    if not documents:
        return ""
    for rel, content in documents.items():
        target = folder / rel
        if folder.resolve() not in target.resolve().parents:
            continue  # collect_documents keeps paths inside; never write outside
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(target, content)
    main, figures = next(iter(documents)), len(documents) - 1
    return main + (f" and {figures} figure{'s' if figures > 1 else ''}" if figures else "")


def take_report(submission: Path, out: Path) -> str:
    """The submission's written report into out/report/, also where it cannot
    be graded: what was taken (write_documents), "" for none."""
    sub = collect_submission(submission, read_manifest(LAB), read_documents(LAB))
    return write_documents(out, sub.documents)


def refuse(out: Path, student: str, reason: str, seed, report: str = "") -> dict:
    """No grading possible (no GPU): a results file with score 0 and why.
    `report`: what was taken of the written report (take_report)."""
    out.mkdir(parents=True, exist_ok=True)
    results = [QuestionResult(q, {}) for q in all_questions(LAB).values()]
    for r in results:
        r.build_error = "not graded: " + reason
    return write_outputs(out, student, results, [], seed, extra="NOT GRADED: " + reason, report=report)


def write_test_times(g: Grading, path: Path) -> None:
    """Each test case's graded run: seconds and host memory at its peak, for a
    person tuning the time limits (INSTRUCTORS.md: the cost of grading)."""
    rows = [f"{name}\t{sec:.2f}\t{g.peaks.get(name, 0) / (1 << 20):.0f}" for name, sec in sorted(g.seconds.items())]
    write_atomically(path, "test\tseconds\tpeak host MiB\n" + "".join(r + "\n" for r in rows))
