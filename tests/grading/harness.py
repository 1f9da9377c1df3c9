"""The grading harness: turns a submission into points, trusting nothing it runs.

A submission's student files (the manifest) are put into a pristine copy of the
lab outside the lab's own tree, so nothing else of it can change the graders.
Each part builds on its own, in a sandbox (sandbox.py), and may include nothing
outside that copy but the system's headers. Each test case runs in its own
sandboxed process under a timeout, confined to itself (no child processes),
with graders built to hold no expected answer (LAB_GRADED). It reports how the
test ended on one pipe (LAB_REPORT_FD) and hands every result it read back to
the harness on another (LAB_RESULTS_FD). Both come from a process that ran
student code, so they prove nothing by themselves: a test passes only when its
report says so *and* the harness finds its results equal, byte for byte, to
those a trusted build of the same graders (tests/oracle/, no student code)
handed over for the same seed (results.py). Student objects are checked before
they are linked (symbols.py). Points come from the course table (course.py). grade.py
is the command line; this module is the logic.
"""

from __future__ import annotations

import csv
import errno
import io
import json
import math
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tarfile
import threading
import time
import zipfile
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import course  # noqa: E402

LAB = Path(__file__).resolve().parents[2]


def read_parts(lab: Path) -> list[tuple[str, str]]:
    """(name, folder) of every part, in order: the course table's (course.py)."""
    return [(p.name, p.folder) for p in course.load(lab).parts]


PARTS = read_parts(LAB)
MAX_FILE_BYTES = 2 << 20  # a student file larger than this is refused
LOG_TAIL_BYTES = 4000  # how much of a failing test's output the report quotes
LOG_CAP_BYTES = 1 << 20  # what one log keeps of a process's output; the rest is counted, not kept

# What the pristine copy of the lab leaves out: instructor files, builds, outputs.
SKIP_NAMES = {".git", "build", "dist", "grades", "grade-results", "grade-selftest", "__pycache__",
              *(name for name, _ in PARTS)}  # the demo binaries


class GradingError(Exception):
    """A problem with the harness's own inputs (options, lab files): exit non-zero."""


# ---------------------------------------------------------------- the lab's tables


@dataclass
class TestCase:
    part: str
    name: str
    tags: list[str]
    questions: list[str]

    @property
    def large(self) -> bool:
        return "large" in self.tags


@dataclass
class Question:
    qid: str
    part: str
    points: float
    timeout: float
    sanitizer_penalty: float
    title: str
    tests: list[TestCase] = field(default_factory=list)
    weights: dict[str, float] = field(default_factory=dict)
    timeouts: dict[str, float] = field(default_factory=dict)  # a test case's own time limit, where it has one
    report_points: float = 0.0  # read by a person from the student's report, never by the harness
    bonus: bool = False  # a bonus question (the extras) adds to the score but not to the maximum

    @property
    def max_points(self) -> float:
        return 0.0 if self.bonus else self.points


TEST_CASE_RE = re.compile(r'TEST_CASE\(\s*"((?:[^"\\]|\\.)*)"\s*,\s*"([^"]*)"\s*\)')
SAFE_NAME_RE = re.compile(r"^[A-Za-z0-9 _'^.()|+=<>-]+$")


def read_test_cases(lab: Path, part: str) -> list[TestCase]:
    """The test cases of a part, read from its grader source (not from a binary
    that links student code, which could print any list it likes)."""
    source = (lab / "tests" / f"test_{part}.cpp").read_text()
    cases = []
    for name, tags in TEST_CASE_RE.findall(source):
        if not SAFE_NAME_RE.match(name):
            raise GradingError(f"test name {name!r} has characters a Catch2 test spec would read as syntax")
        tag_list = re.findall(r"\[([^\]]*)\]", tags)
        questions = [t for t in tag_list if re.fullmatch(r"[QX]\d+", t)]
        cases.append(TestCase(part, name, tag_list, questions))
    return cases


def read_points(lab: Path, part: str) -> dict[str, Question]:
    """Questions of a part with their test cases, weights and time limits: the
    course table's questions, matched with the test cases of the part's grader."""
    try:
        table = course.load(lab)
    except course.CourseError as e:
        raise GradingError(str(e)) from None
    questions = {q.qid: Question(q.qid, part, float(q.points), q.time_limit, q.sanitizer_penalty, q.title,
                                 report_points=float(q.report), bonus=q.bonus)
                 for q in table.questions_of(part)}
    cases = read_test_cases(lab, part)
    for case in cases:
        for qid in case.questions:
            if qid not in questions:
                raise GradingError(f"test {case.name!r} is tagged {qid}, which {table.path} does not list for {part}")
            rule = table.tests.get(case.name, course.TestRule(case.name))
            questions[qid].tests.append(case)
            questions[qid].weights[case.name] = rule.weight
            if rule.time_limit is not None:
                questions[qid].timeouts[case.name] = rule.time_limit
    for q in questions.values():
        if sum(q.weights.values()) <= 0:
            raise GradingError(f"{table.path}: {q.qid} has no test case that carries points")
    return questions


def unknown_test_rules(lab: Path) -> list[str]:
    """The table's [test] sections that name no test case of any grader."""
    names = {c.name for part, _ in read_parts(lab) for c in read_test_cases(lab, part)}
    return sorted(set(course.load(lab).tests) - names)


def all_questions(lab: Path) -> dict[str, Question]:
    out: dict[str, Question] = {}
    for part, _ in PARTS:
        out.update(read_points(lab, part))
    return out


def read_manifest(lab: Path) -> list[str]:
    """The student files that are built and graded (the course table's parts)."""
    return course.load(lab).student_files()


def read_documents(lab: Path) -> list[str]:
    """The optional documents (report.md, ...): taken for the person who grades
    them, never built or run (the course table's [course] documents)."""
    return list(course.load(lab).documents)


def report_points(questions) -> float:
    return sum(q.report_points for q in questions)


MAX_DOCUMENT_BYTES = 25 * 1024 * 1024  # all documents together, the report's figures included
FIGURE_SUFFIXES = (".png", ".jpg", ".jpeg", ".svg", ".gif", ".pdf")


# ---------------------------------------------------------------- taking a submission's files


@dataclass
class Submission:
    files: dict[str, bytes]  # manifest path -> content
    notes: list[str]  # missing, ignored, unreadable: said in the report
    documents: dict[str, bytes] = field(default_factory=dict)  # the report and its figures, by relative path


def _match(member: str, wanted: str) -> bool:
    return member == wanted or member.endswith("/" + wanted)


def _pick(candidates: list[str], wanted: str, notes: list[str]) -> str | None:
    if not candidates:
        return None
    best = min(candidates, key=lambda c: (c.count("/"), c))
    if len(candidates) > 1:
        notes.append(f"{wanted}: found {len(candidates)} copies, graded {best}")
    return best


def _clean(name: str) -> str | None:
    """A member name as a relative path, or None when it escapes the root."""
    name = name.replace("\\", "/")
    while name.startswith("./"):
        name = name[2:]
    parts = name.split("/")
    if name.startswith("/") or ".." in parts or not name:
        return None
    return name


def collect_submission(path: Path, manifest: list[str], documents_wanted: list[str] = ()) -> Submission:
    """The manifest's files from a folder or an archive (.zip, .tar.gz, .tgz, .tar).
    Only regular files are read; links, paths that leave the archive, and files over
    MAX_FILE_BYTES are refused. A missing file is noted; the skeleton stands in."""
    notes: list[str] = []
    if path.is_dir():
        readers = _folder_readers(path)
    else:
        try:
            readers = _archive_readers(path, notes)
        except (OSError, zipfile.BadZipFile, tarfile.TarError, EOFError) as err:
            notes.append(f"could not read the archive {path.name}: {err}")
            readers = {}
    files: dict[str, bytes] = {}
    used = set()
    for wanted in manifest:
        chosen = _pick([m for m in readers if _match(m, wanted)], wanted, notes)
        if chosen is None:
            notes.append(f"missing: {wanted} (the untouched skeleton was graded in its place)")
            continue
        read, size = readers[chosen]
        used.add(chosen)
        if size > MAX_FILE_BYTES:
            notes.append(f"refused: {chosen} is {size} bytes, over the {MAX_FILE_BYTES} limit (skeleton used)")
            continue
        files[wanted] = read()
    for rel, content in files.items():
        notes += suspicious_lines(rel, content)
    documents = collect_documents(readers, documents_wanted, used, notes)
    extra = sorted(m for m in readers if m not in used)
    if extra:
        shown = ", ".join(extra[:8]) + (f" and {len(extra) - 8} more" if len(extra) > 8 else "")
        notes.append(f"ignored (not in the manifest): {shown}")
    return Submission(files, notes, documents)


def figure_links(markdown: str) -> list[str]:
    """The local image files a Markdown report shows: ![..](path) and <img src="path">."""
    links = re.findall(r"!\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", markdown)
    links += re.findall(r"<img\b[^>]*\bsrc\s*=\s*[\"']([^\"']+)[\"']", markdown, flags=re.I)
    return [ln for ln in links if "://" not in ln and ln.lower().endswith(FIGURE_SUFFIXES)]


def collect_documents(readers: dict, wanted: list[str], used: set, notes: list[str]) -> dict[str, bytes]:
    """The report (the first of `wanted` found, e.g. report.pdf or report.md)
    and, for a report.md, the figures it links to inside the submission, within
    MAX_DOCUMENT_BYTES in all. Paths are kept relative to the report's folder."""
    for name in wanted:
        chosen = _pick([m for m in readers if _match(m, name)], name, notes)
        if chosen is None:
            continue
        folder = chosen[: -len(name)]  # "" or "top/"
        picked = [chosen]
        if name.endswith(".md") and readers[chosen][1] <= MAX_DOCUMENT_BYTES:
            for link in figure_links(readers[chosen][0]().decode("utf-8", "replace")):
                member = _clean(folder + link)
                if member and member in readers and member not in picked:
                    picked.append(member)
        out: dict[str, bytes] = {}
        total = 0
        for member in picked:
            read, size = readers[member]
            if total + size > MAX_DOCUMENT_BYTES:
                notes.append(f"report: {member} left out (the report and its figures may take "
                             f"{MAX_DOCUMENT_BYTES // (1024 * 1024)} MiB in all)")
                continue
            total += size
            out[member[len(folder):]] = read()
            used.add(member)
        return out
    notes.append(f"no report found ({' or '.join(wanted)}): its points are the grader's to give or not")
    return {}


# Calls a kernel launcher has no business making: they end the process, read
# the grader's environment or files, or hand the work to a library. Listed in
# the report for a person to look at; the tests themselves decide the points.
SUSPICIOUS = re.compile(r"\b(_?[Ee]xit|quick_exit|abort|getenv|environ|LAB_(?:REPORT|SEED|TRACE|LARGE|QUICK|PROBE_GPU)|fopen|open|ofstream|ifstream|/proc/|"
                        r"system|popen|syscall|fork|vfork|exec\w*|setsid|daemon|dlopen|dlsym|asm|__asm__|"
                        r"thrust::|cub::|std::(stable_)?sort|std::merge|cudaMemcpy\w*|cudaMallocManaged|__managed__|"
                        r"cudaMallocHost|cudaHostAlloc|cudaHostRegister|cupti\w*|__attribute__|constructor)\b")


def suspicious_lines(rel: str, content: bytes, limit: int = 6) -> list[str]:
    found = []
    for number, line in enumerate(content.decode("utf-8", "replace").splitlines(), 1):
        code = line.split("//", 1)[0]
        m = SUSPICIOUS.search(code)
        if m:
            found.append(f"for a person to look at: {rel}:{number} uses {m.group(0)}")
    return found[:limit] + ([f"... and {len(found) - limit} more such lines in {rel}"] if len(found) > limit else [])


# Library calls a launcher has no business making, looked up in the compiled
# student object (so no spelling in the source hides them): for a person.
SUSPICIOUS_SYMBOLS = re.compile(r"^(_?exit|_Exit|quick_exit|abort|system|popen|fork|vfork|clone\d*|execv\w*|execl\w*|"
                                r"posix_spawn\w*|setsid|daemon|syscall|ptrace|prctl|kill|dlopen|dlmopen|dlsym|dlvsym|"
                                r"dladdr1?|dlinfo|dl_iterate_phdr|_r_debug|setenv|putenv|"
                                r"unsetenv|getenv|secure_getenv|open|open64|openat|openat64|fopen|fopen64|creat|"
                                r"unlink|rename|cudaMallocHost|cudaHostAlloc|cudaHostRegister|cudaMallocManaged|"
                                r"cudaHostGetDevicePointer|__cudaRegisterManagedVar|cupti\w+|cu[A-Z]\w+)$")


def suspicious_symbols(part: str, obj: Path) -> list[str]:
    """Notes for the calls of SUSPICIOUS_SYMBOLS that the student object makes."""
    try:
        r = subprocess.run(["nm", "-u", str(obj)], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return []
    names = sorted({ln.split()[-1].split("@")[0] for ln in r.stdout.splitlines() if ln.strip()})
    found = [n for n in names if SUSPICIOUS_SYMBOLS.match(n)]
    return [f"for a person to look at: {part}'s compiled student code calls {', '.join(found[:12])}"] if found else []


# Each reader maps a member's clean relative name to (read it, its size).
def _folder_readers(path: Path) -> dict:
    readers = {}
    for root, dirs, names in os.walk(path):
        dirs[:] = [d for d in dirs if d not in {".git", "build"}]
        for n in names:
            full = Path(root) / n
            if full.is_symlink() or not full.is_file():
                continue
            readers[full.relative_to(path).as_posix()] = (full.read_bytes, full.stat().st_size)
    return readers


ARCHIVE_MEMBERS = 2000  # an archive's members looked at: a submission has a handful


def _archive_readers(path: Path, notes: list[str]) -> dict:
    readers = {}
    name = path.name.lower()
    seen = 0

    def one_more() -> bool:
        """Counts a member; False, with a note, once the archive holds more than are looked at."""
        nonlocal seen
        seen += 1
        if seen > ARCHIVE_MEMBERS:
            notes.append(f"the archive holds more than {ARCHIVE_MEMBERS} members: the rest were not looked at")
            return False
        return True

    if name.endswith(".zip"):
        z = zipfile.ZipFile(path)
        for info in z.infolist():
            if not one_more():
                break
            clean = _clean(info.filename)
            is_link = (info.external_attr >> 16) & 0o170000 == 0o120000
            if info.is_dir() or clean is None or is_link:
                if clean is None or is_link:
                    notes.append(f"refused archive member {info.filename!r} (a link or a path outside the archive)")
                continue
            readers[clean] = (lambda z=z, i=info: z.read(i), info.file_size)
        return readers
    if name.endswith((".tar.gz", ".tgz", ".tar")):
        t = tarfile.open(path)
        for info in t:  # one member at a time: never the whole list of a huge archive
            if not one_more():
                break
            clean = _clean(info.name)
            if info.isdir():
                continue
            if not info.isfile() or clean is None:
                notes.append(f"refused archive member {info.name!r} (not a regular file inside the archive)")
                continue
            readers[clean] = (lambda t=t, i=info: t.extractfile(i).read(), info.size)
        return readers
    raise OSError("not a folder, .zip, .tar.gz, .tgz or .tar")


# ---------------------------------------------------------------- the pristine copy


def copy_lab(lab: Path, dest: Path, exclude: tuple[Path, ...] = (), with_reference: bool = False) -> None:
    """The lab without instructor files (reference*, unless with_reference),
    builds or grading outputs (`exclude`: output folders that may lie inside
    the lab). Modification times are kept, so objects built in a copy stay up
    to date."""
    skip = {p.resolve() for p in exclude} | {dest.resolve()}

    def ignore(folder, names):
        return {n for n in names if n in SKIP_NAMES or (n.startswith("reference") and not with_reference)
                or n.startswith(".") or (Path(folder) / n).resolve() in skip}

    shutil.copytree(lab, dest, ignore=ignore, copy_function=shutil.copy2, symlinks=False, dirs_exist_ok=True)


def place_files(work: Path, files: dict[str, bytes]) -> None:
    for rel, content in files.items():
        target = work / rel
        target.unlink(missing_ok=True)  # a fresh file: newer than any object, so it is rebuilt
        target.write_bytes(content)


# ---------------------------------------------------------------- running things


@dataclass
class Run:
    returncode: int | None  # None: killed at the timeout
    seconds: float
    output: str
    limit: str = ""  # the sandbox's limit it ran into, if any (sandbox.Box.close)
    peak_memory: int = 0  # bytes of host memory at its peak, where a cgroup measured it

    @property
    def timed_out(self) -> bool:
        return self.returncode is None


_active: set[int] = set()  # processes run() is waiting on (grade-all runs several at once)
_active_lock = threading.Lock()


def become_subreaper() -> None:
    """Processes orphaned by a test (a double fork, setsid) become the harness's
    children, so that reap_orphans() can end them where no sandbox does."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def reap_orphans() -> None:
    """Kills what a test left behind after its own process ended: the
    harness's children (as subreaper) that no run() is waiting on and that are
    not in the harness's own session. run() starts every command in a session
    of its own, and whatever a command starts stays in that session or makes
    one of its own; the tools the harness calls itself (nm, readelf, ...) stay
    in the harness's session, and are never taken for orphans."""
    me, my_session = str(os.getpid()), str(os.getsid(0))
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry.name)
        with _active_lock:
            mine = pid in _active
        if fields[1] == me and fields[3] != my_session and not mine:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass


def run(cmd: list[str], cwd: Path, timeout: float, env: dict | None = None, log: Path | None = None,
        sandboxed: bool = False, pass_fds: tuple[int, ...] = ()) -> Run:
    """Runs cmd in its own process group; at the timeout the whole group is
    killed, and so is anything it left behind. The log keeps LOG_CAP_BYTES of
    the output. `sandboxed`: cmd is a sandbox.wrap() command (its shell reports
    a signal N as 128 + N). `pass_fds`: descriptors the command inherits."""
    start = time.monotonic()
    with open(log, "wb") if log else open(os.devnull, "wb") as sink:
        # Started and listed as one step: reap_orphans (another thread's) must
        # never see this child before it is listed as waited on.
        with _active_lock:
            proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True, pass_fds=pass_fds)
            _active.add(proc.pid)
        chunks: list[bytes] = []
        written = [0]

        def pump():
            for chunk in iter(lambda: proc.stdout.read(65536), b""):
                if written[0] < LOG_CAP_BYTES:
                    sink.write(chunk[: LOG_CAP_BYTES - written[0]])
                written[0] += len(chunk)
                chunks.append(chunk)
                if sum(map(len, chunks)) > 4 * LOG_TAIL_BYTES:
                    del chunks[: len(chunks) // 2]

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        try:
            code: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # also whatever it left behind in its group
        except ProcessLookupError:
            pass
        proc.wait()
        with _active_lock:
            _active.discard(proc.pid)
        reap_orphans()
        reader.join(timeout=5)
        proc.stdout.close()
        if written[0] > LOG_CAP_BYTES:
            sink.write(f"\n[log cut: {written[0]} bytes of output, the first {LOG_CAP_BYTES} kept]\n".encode())
    text = b"".join(chunks).decode("utf-8", "replace")
    if code is not None and sandboxed and 128 < code < 160:
        code = -(code - 128)
    return Run(code, time.monotonic() - start, text[-LOG_TAIL_BYTES:])


def describe_exit(r: Run, timeout: float) -> str:
    """How a run ended, with the sandbox's limit it ran into, if any."""
    if r.timed_out:
        how = f"timed out after {timeout:g} s (a hang, or far too slow) and was killed"
    elif r.returncode < 0:
        try:
            name = signal.Signals(-r.returncode).name
        except ValueError:
            name = f"signal {-r.returncode}"
        how = f"crashed ({name})"
    else:
        how = f"ended with exit status {r.returncode}"
    return how + (f" ({r.limit})" if r.limit else "")


# ---------------------------------------------------------------- files a test leaves

LEFT_FILE_CAP = 16 << 20  # what is read of a file a test process left (its report, a sanitizer log)


class LeftFileError(Exception):
    """A file a test process left cannot be read as one: missing, not a regular file, too large."""


def read_left_file(path: Path, cap: int = LEFT_FILE_CAP) -> bytes:
    """A file a test process left in its scratch folder, which it could have
    made anything: opened without following a link and without blocking (a
    named pipe), read only if it is a regular file, and only up to `cap`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as err:
        why = "a symbolic link" if err.errno == errno.ELOOP else (err.strerror or str(err)).lower()
        raise LeftFileError(f"{path.name}: {why}") from err
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise LeftFileError(f"{path.name}: not a regular file (a named pipe, a device or a folder)")
        if info.st_size > cap:
            raise LeftFileError(f"{path.name}: {info.st_size} bytes, more than the {cap >> 20} MiB read of it")
        chunks, size = [], 0
        while size <= cap and (chunk := os.read(fd, min(1 << 20, cap + 1 - size))):
            chunks.append(chunk)
            size += len(chunk)
        if size > cap:
            raise LeftFileError(f"{path.name}: grew past the {cap >> 20} MiB read of it")
        return b"".join(chunks)
    finally:
        os.close(fd)


def left_text(path: Path, cap: int = LEFT_FILE_CAP) -> str:
    return read_left_file(path, cap).decode("utf-8", "replace")


# ---------------------------------------------------------------- reports


@dataclass
class Outcome:
    status: str  # passed, failed, not-graded
    message: str = ""


def read_report(path: Path, name: str, r: Run, timeout: float) -> Outcome:
    """The outcome of one test case from its report file (see tests/main.cpp).
    Anything short of a complete, well-formed report of exactly this test is a failure."""
    how = describe_exit(r, timeout)
    try:
        lines = left_text(path).splitlines()
    except LeftFileError as err:
        if path.exists() or path.is_symlink():
            return Outcome("failed", f"the report cannot be read ({err}; the process {how})")
        lines = []
    events = []
    for line in lines:
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            return Outcome("failed", f"malformed report (the process {how})")
    starts = [e for e in events if e.get("event") == "start"]
    ends = [e for e in events if e.get("event") == "end"]
    summary = [e for e in events if e.get("event") == "summary"]
    if not starts:
        return Outcome("failed", f"the test never started: the process {how}")
    if any(e.get("test") != name for e in starts + ends) or len(starts) != 1 or len(ends) > 1:
        return Outcome("failed", "the report names other test cases than the one run")
    if not ends:
        return Outcome("failed", f"the process {how} during the test (a crash, a hang, or exit() in the code under test)")
    end = ends[0]
    if len(summary) != 1:
        if end.get("status") == "failed":  # Catch2 reports a fatal signal as a failure, then the process ends
            return Outcome("failed", f"{end.get('failure') or 'failed'} (then the process {how})")
        return Outcome("failed", f"the report is incomplete: the process {how} after the test")
    counts = (summary[0].get("passed"), summary[0].get("failed"), summary[0].get("skipped"))
    expected = {"passed": (1, 0, 0), "failed": (0, 1, 0), "skipped": (0, 0, 1)}.get(end.get("status"))
    if counts != expected:
        return Outcome("failed", "the report's summary does not match its test case")
    if end["status"] == "passed":
        if r.returncode != 0:
            return Outcome("failed", f"the report says passed, but the process {how}")
        if end.get("trace"):  # the launch trace's objections to calls outside the launchers
            return Outcome("failed", "launch trace: " + str(end["trace"])[:600])
        return Outcome("passed")
    if end["status"] == "failed":
        return Outcome("failed", end.get("failure") or "failed")
    reason = end.get("reason", "")
    if reason.startswith("not graded here"):
        return Outcome("not-graded", reason)
    return Outcome("failed", f"skipped ({reason}); a test that did not run is never a pass")


@dataclass
class Trusted:
    """How one test case ended, as a report tells it (read_report_ends): for
    the trusted build (tests/oracle/), with its results (results.py), the truth
    a student's run is judged by."""
    status: str  # passed, failed, skipped
    message: str


def read_report_ends(path: Path) -> dict[str, Trusted]:
    """Every test case a report (LAB_REPORT) says ended, by name: the trusted
    run's results, or what `make test` could not check (unchecked.py)."""
    out: dict[str, Trusted] = {}
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return out
    for line in lines:
        try:
            e = json.loads(line)
        except json.JSONDecodeError:
            continue
        if e.get("event") == "end" and isinstance(e.get("test"), str):
            message = e.get("reason") if e.get("status") == "skipped" else e.get("failure")
            out[e["test"]] = Trusted(str(e.get("status")), str(message or ""))
    return out


def judge(student: Outcome, trusted: Trusted | None, differs: str) -> Outcome:
    """The verdict on one test case: the student's report (a claim) against the
    trusted run of the same test on the same seed (the truth). A pass needs
    both to say passed and the student's results to equal the trusted run's
    (`differs`: "" when they do, else what differs first: results.compare)."""
    if trusted is None:
        return Outcome("not-graded", "not graded: the trusted run did not report this test (a problem of the lab, "
                                     "not of the submission; see logs/trusted-*.log)")
    if trusted.status == "skipped":
        reason = trusted.message if trusted.message.startswith("not graded") else "not graded: " + trusted.message
        return Outcome("not-graded", reason + " (decided by the trusted run)")
    if trusted.status != "passed":
        return Outcome("not-graded", "not graded: the trusted run failed this test (a problem of the lab): " +
                       trusted.message[:300])
    if student.status == "not-graded":
        return Outcome("failed", f"{student.message}, but the trusted run on this GPU ran it: a test that did not "
                                 f"run is never a pass")
    if student.status != "passed":
        return student
    if differs:
        return Outcome("failed", "wrong results: " + differs)
    return Outcome("passed")


def include_problems(dep_file: Path, work: Path, system_roots: list[Path]) -> list[str]:
    """Files a student object included from outside the submission's copy
    (per its dependency file): anything but the copy's own sources (not its
    tests/ or build/) and the compiler's and CUDA's system headers."""
    try:
        text = dep_file.read_text(errors="replace")
    except OSError:
        return [f"{dep_file.name}: no dependency file (the build did not record its includes)"]
    rule = text.replace("\\\n", " ").split("\n", 1)[0]
    deps = rule.split(":", 1)[1].split() if ":" in rule else []
    work = work.resolve()
    allowed = [work]
    banned = [work / "tests", work / "build"]
    roots = [r.resolve() for r in system_roots]
    problems = []
    for dep in deps:
        path = (work / dep).resolve() if not os.path.isabs(dep) else Path(os.path.normpath(dep)).resolve()
        inside = any(path.is_relative_to(a) for a in allowed) and not any(path.is_relative_to(b) for b in banned)
        if not inside and not any(path.is_relative_to(r) for r in roots):
            problems.append(dep)
    return problems


def sanitizer_errors(log: Path, tool: str = "memcheck") -> int | None:
    """Errors a compute-sanitizer log reports, or None when it has no summary.
    The last summary counts: the sanitizer writes it after the program under
    test has ended, so lines that program wrote into the log come before it."""
    try:
        text = left_text(log)
    except LeftFileError:
        return None
    pattern = (r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?" if tool == "racecheck"
               else r"ERROR SUMMARY: (\d+) errors?")
    found = re.findall(pattern, text)
    return int(found[-1]) if found else None


# ---------------------------------------------------------------- scoring


def split_cents(points: float, weights: dict[str, float]) -> dict[str, int]:
    """`points` split over `weights` in hundredths of a point: each share
    rounded down, then the hundredths left over go one each to the largest
    remainders (the earlier test on a tie), so that the shares add up to
    exactly `points` (6 points over 7 tests: 0.86 five times and 0.85 twice,
    where shares rounded one by one would add up to 6.02 or 5.95)."""
    cents = round(Fraction(points) * 100)
    total = sum(Fraction(w) for w in weights.values())
    if total <= 0:
        return {name: 0 for name in weights}
    exact = {name: cents * Fraction(w) / total for name, w in weights.items()}
    shares = {name: math.floor(x) for name, x in exact.items()}
    by_remainder = sorted(exact, key=lambda name: shares[name] - exact[name])  # stable: ties keep the tests' order
    for name in by_remainder[: cents - sum(shares.values())]:
        shares[name] += 1
    return shares


@dataclass
class QuestionResult:
    question: Question
    outcomes: dict[str, Outcome]  # test name -> outcome
    sanitizer: str = ""  # what the sanitizer found, "" when clean or not run
    build_error: str = ""

    def test_cents(self) -> dict[str, tuple[int, int]]:
        """(score, max) per test case in hundredths of a point: the question's
        points split by weight over the graded test cases (split_cents); a
        not-graded one is left out of the split."""
        q = self.question
        graded = {n: w for n, w in q.weights.items() if self.outcomes.get(n, Outcome("failed")).status != "not-graded"}
        shares = split_cents(q.points, graded)
        out = {}
        for name in q.weights:
            share = shares.get(name, 0)
            passed = self.outcomes.get(name, Outcome("failed")).status == "passed"
            out[name] = (share if passed else 0, share)
        return out

    def test_points(self) -> dict[str, tuple[float, float]]:
        """test_cents in points."""
        return {name: (score / 100, share / 100) for name, (score, share) in self.test_cents().items()}

    @property
    def score(self) -> float:
        raw = sum(s for s, _ in self.test_cents().values()) / 100
        if self.sanitizer:
            raw *= 1.0 - self.question.sanitizer_penalty
        return round(raw, 4)

    @property
    def first_failure(self) -> str:
        if self.build_error.startswith("not graded"):
            return self.build_error
        if self.build_error:
            return "does not compile: " + self.build_error.splitlines()[0]
        for case in self.question.tests:
            o = self.outcomes.get(case.name)
            if o and o.status == "failed" and self.question.weights[case.name] > 0:
                return f"{case.name}: {o.message}"
        return self.sanitizer

    def counts(self) -> tuple[int, int]:
        weighted = [n for n, w in self.question.weights.items() if w > 0]
        graded = [n for n in weighted if self.outcomes.get(n, Outcome("failed")).status != "not-graded"]
        return sum(self.outcomes.get(n, Outcome("failed")).status == "passed" for n in graded), len(graded)


def compile_errors(output: str, limit: int = 12) -> str:
    lines = [ln for ln in output.splitlines() if re.search(r"\berror\b|undefined reference", ln)]
    lines.sort(key=lambda ln: "collect2" in ln)  # the linker's summary after what it could not find
    return "\n".join(lines[:limit]) or output.strip()[-1500:]


# ---------------------------------------------------------------- outputs


# ---------------------------------------------------------------- speed (for information)


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


def incomplete_json(reason: str) -> dict:
    """What results.json says while grading runs, and after one that was cut off."""
    return {"score": 0, "output": "INCOMPLETE: " + reason, "tests": [], "stdout_visibility": "visible"}


def write_atomically(path: Path, content: str | bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    if isinstance(content, bytes):
        tmp.write_bytes(content)
    else:
        tmp.write_text(content)
    os.replace(tmp, path)


def gradescope_test(name: str, score: float, max_score: float, output: str, status: str = "") -> dict:
    """One row of results.json's tests, as Gradescope reads it; `status`
    ("passed" or "failed") colours the row, "" leaves it to Gradescope (a
    test not graded, which is neither)."""
    row = {"name": name, "score": score, "max_score": max_score, "output": output, "visibility": "visible"}
    if status:
        row["status"] = status
    return row


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
        large = len(q.tests) - len(emulated)
        lines = []
        if r.build_error:
            lines.append("Does not compile for the emulator (g++):\n" + r.build_error)
        else:
            for c in emulated:
                o = r.outcomes.get(c.name, Outcome("failed", "not run"))
                detail = f": {o.message.splitlines()[0][:300]}" if o.status != "passed" and o.message else ""
                lines.append(f"  {'passed' if c in passed else 'FAILED'}  {c.name}{detail}")
        ran.update((q.part, c.name) for c in emulated)
        passed_all.update((q.part, c.name) for c in passed)
        compiles, said = device.get(q.part, (None, ""))
        if compiles is False:
            lines.append(said)
        if large:
            lines.append(f"Not emulated: {large} test{'s' if large > 1 else ''} past 2^31 elements ([large]); "
                         f"only the GPU grading runs {'them' if large > 1 else 'it'}.")
        head = f"{PROVISIONAL}: {len(passed)} of {len(emulated)} tests pass on the CPU emulator."
        if r.first_failure:
            head += "\nFirst failure: " + r.first_failure.splitlines()[0][:400]
        ok = not r.build_error and len(passed) == len(emulated) and compiles is not False
        tests.append(gradescope_test(f"{q.qid} {q.title}: {len(passed)}/{len(emulated)} pass emulated (provisional)",
                                     0, q.max_points, head + "\n" + "\n".join(lines), "passed" if ok else "failed"))
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
              "EMULATE=1 IMPL=student (README, The CPU emulator).",
              *notes]
    return {"score": 0, "execution_time": round(seconds), "output": "\n".join(output), "visibility": "visible",
            "stdout_visibility": "visible", "tests": tests}


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


def report_note(questions: list[Question], report: str) -> str:
    """The line every output gives the written report."""
    shares = ", ".join(f"{q.qid} {q.report_points:g}" for q in questions if q.report_points)
    points = f"{report_points(questions):g} points ({shares})"
    if not report:
        return f"report: none handed in (report.pdf or report.md); its {points} are for a person to decide"
    return f"report: {report}, copied to report/ -- its {points} are to be graded by a person"
