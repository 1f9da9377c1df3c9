"""grade-all's records and gradebook, and scores.csv for an upload.

The harness's record of each graded student (grades/.harness/records.jsonl)
is what the gradebook is made from, never files in a student's folder.

scores.csv: one row per student, for an upload into Gradescope or a
learning management system after a grading on the instructors' GPUs (a
cluster, after the deadline). Such an upload matches a row to a student by
email or student ID (SID) and reads one column of points; the columns
carry the names Gradescope's own roster and score exports use."""

from __future__ import annotations

import csv
import io
import json
import os
import threading
from pathlib import Path

from .course_table import GradingError, LAB, all_questions
from .judging import QuestionResult
from .outputs import gradebook_header, gradebook_line, say, write_atomically


class Records:
    """The harness's own record of each graded student (grades/.harness/records.jsonl):
    the gradebook is made from it, never from files in a student's folder. It
    is written by the harness alone, after that student's processes are gone,
    and no sandbox shows it to a submission."""

    def __init__(self, grades: Path):
        self.path = grades / ".harness" / "records.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(self.path.parent, 0o700)
        self.lock = threading.Lock()
        self.records: dict[str, dict] = {}
        if self.path.exists():
            for line in self.path.read_text().splitlines():
                try:
                    record = json.loads(line)
                    self.records[record["student"]] = record
                except (json.JSONDecodeError, KeyError, TypeError):
                    continue

    def add(self, summary: dict) -> None:
        with self.lock:
            self.records[summary["student"]] = summary
            with self.path.open("a") as f:
                f.write(json.dumps(summary) + "\n")

    def drop(self, student: str) -> None:
        """Grade this student again on the next run."""
        with self.lock:
            self.records.pop(student, None)
            write_atomically(self.path, "".join(json.dumps(r) + "\n" for r in self.records.values()))


def still_to_grade(args, students, records: Records) -> list:
    """The students without a record, after REGRADE's have lost theirs."""
    for student in (args.regrade or "").split(","):
        if student:
            records.drop(student)
    return [(s, p) for s, p in students if s not in records.records]


NOT_GRADED_YET = "not graded (see this student's report.txt)"  # a gradebook note: no record of the student


def write_gradebook(grades: Path, students, records: dict[str, dict], refused: dict[str, dict] | None = None,
                    roster: Path | None = None) -> None:
    """One line per student from the harness's records; a student without one
    (not graded yet, or refused) from the refusal the harness just wrote.
    Beside it, scores.csv for an upload (write_scores), with `roster`'s
    names, emails and SIDs where one is given."""
    questions = list(all_questions(LAB).values())
    lines = [gradebook_header(questions)]
    for student, _ in students:
        if student in records:
            lines.append(records[student]["gradebook"])
        elif refused and student in refused:
            lines.append(refused[student]["gradebook"])
        else:
            lines.append(gradebook_line(student, [QuestionResult(q, {}) for q in questions], None,
                                          [NOT_GRADED_YET]))
    write_atomically(grades / "gradebook.csv", "\n".join(lines) + "\n")
    scores = [(student, records[student]["score"] if student in records else None) for student, _ in students]
    for warning in write_scores(grades / "scores.csv", scores, max_points(questions),
                                read_roster(roster) if roster else None):
        say("scores.csv: " + warning)


SCORES_HEADER = ["Name", "Email", "SID", "Total Score", "Max Points", "Submission"]


def max_points(questions) -> float:
    """The points a submission's code can earn (bonus questions add to a score, not to this)."""
    return sum(q.max_points for q in questions)


def roster_of(args) -> Path | None:
    """grade-all's roster: --roster, else roster.csv in the submissions folder, where there is one."""
    if getattr(args, "roster", None):
        return Path(args.roster)
    found = Path(args.submissions) / "roster.csv" if args.submissions else None
    return found if found and found.is_file() else None


def read_roster(path: Path) -> list[dict[str, str]]:
    """The class list, a CSV whose header row names (in any case) "Email"
    and/or "SID" (or "Student ID"), a name ("Name", or "First Name" and "Last
    Name") and optionally "Submission": the submission's folder or archive
    name in SUBMISSIONS where that is neither the student's email nor SID.
    Several rows naming one submission (a group) each get its score."""
    try:
        with path.open(newline="", encoding="utf-8-sig") as f:
            rows = list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise GradingError(f"roster {path}: {err}") from None
    out = []
    for row in rows:
        cells = {(k or "").strip().lower(): v.strip() for k, v in row.items() if isinstance(v, str)}
        name = cells.get("name") or " ".join(x for x in (cells.get("first name", ""), cells.get("last name", "")) if x)
        out.append({"name": name, "email": cells.get("email", ""),
                    "sid": cells.get("sid") or cells.get("student id", ""), "submission": cells.get("submission", "")})
    if not any(r["email"] or r["sid"] or r["submission"] for r in out):
        raise GradingError(f"roster {path}: no row names an Email, a SID or a Submission (its header row must "
                             "name the columns)")
    return out


def write_scores(path: Path, scores: list[tuple[str, float | None]], maximum: float,
                 roster: list[dict[str, str]] | None) -> list[str]:
    """scores.csv (SCORES_HEADER): a roster row's score is that of the
    submission named by its Submission, Email or SID (compared without case);
    without a roster, one row per submission, its name as Name (and Email,
    where it is one). The score is the code's points, bonus included; empty
    where no grading gave one (not graded, refused, no submission), so that
    an upload leaves it alone. Returns what did not match, to be said."""
    given = {student.lower(): (student, score) for student, score in scores}
    rows, warnings, matched = [], [], set()

    def cell(score):
        return "" if score is None else f"{score:g}"

    if roster is None:
        for student, score in scores:
            rows.append([student, student if "@" in student else "", "", cell(score), f"{maximum:g}", student])
    else:
        for r in roster:
            key = next((k.lower() for k in (r["submission"], r["email"], r["sid"]) if k and k.lower() in given), None)
            student, score = given[key] if key else ("", None)
            if key:
                matched.add(student)
            else:
                warnings.append(f"no submission for {r['name'] or r['email'] or r['sid']} (empty score)")
            rows.append([r["name"], r["email"], r["sid"], cell(score), f"{maximum:g}", student])
        for student, score in scores:
            if student not in matched:
                warnings.append(f"{student}: not in the roster (a row without email or SID)")
                rows.append([student, student if "@" in student else "", "", cell(score), f"{maximum:g}", student])
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(SCORES_HEADER)
    writer.writerows(rows)
    write_atomically(path, buffer.getvalue())
    return warnings


def gradebook_scores(path: Path) -> tuple[list[tuple[str, float | None]], float]:
    """Each student's score from a gradebook.csv (None where it says the
    student was not graded), and the maximum."""
    try:
        with path.open(newline="") as f:
            rows = list(csv.DictReader(f))
    except (OSError, csv.Error) as err:
        raise GradingError(f"gradebook {path}: {err}") from None
    if not rows or not {"student", "score", "max", "notes"} <= set(rows[0]):
        raise GradingError(f"{path}: not a gradebook.csv of make grade-all")
    scores = [(r["student"], None if r["notes"].startswith(("NOT GRADED", NOT_GRADED_YET)) else float(r["score"]))
              for r in rows]
    return scores, float(rows[0]["max"])


def cmd_scores(args, _opts) -> int:
    """scores.csv from a gradebook (and a roster), e.g. with a roster made after the grading."""
    if not args.gradebook:
        raise GradingError("scores needs --gradebook grades/gradebook.csv (and usually --roster roster.csv)")
    gradebook = Path(args.gradebook)
    scores, maximum = gradebook_scores(gradebook)
    out = Path(args.csv) if args.csv else gradebook.with_name("scores.csv")
    for warning in write_scores(out, scores, maximum, read_roster(Path(args.roster)) if args.roster else None):
        say(warning)
    say(f"wrote {out}: {sum(s is not None for _, s in scores)} scores of {len(scores)} submissions")
    return 0
