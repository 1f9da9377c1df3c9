"""Taking a submission: the manifest's files from a folder or an archive,
refusing links, paths that leave it and oversized files; the written report
and its figures; the class's submissions in grade-all's folder; the lines a
person should look at."""

from __future__ import annotations

import os
import re
import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from .course_table import LAB, PARTS, all_questions


MAX_FILE_BYTES = 2 << 20  # a student file larger than this is refused


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


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _shared_names(manifest: list[str]) -> set[str]:
    """The file names several of the manifest's files have (student.cu)."""
    names = [_name(w) for w in manifest]
    return {n for n in names if names.count(n) > 1}


def _by_name_alone(readers: dict, wanted: str, manifest: list[str], notes: list[str]) -> str | None:
    """A file handed in without its folder (Gradescope's upload of single
    files puts each at the top), taken for `wanted` when no other file of the
    manifest has its name (student_search.cuh); else None."""
    if _name(wanted) in _shared_names(manifest):
        return None
    chosen = _pick([m for m in readers if _name(m) == _name(wanted)], wanted, notes)
    if chosen is not None:
        notes.append(f"{wanted}: taken from {chosen}, by its name alone (no other file of the manifest has it)")
    return chosen


def questions_of(wanted: str) -> str:
    """The questions of the part a manifest file belongs to ("Q3 and Q4"), or ""."""
    part = next((p for p, folder in PARTS if wanted.startswith(folder + "/")), None)
    names = [qid for qid, q in all_questions(LAB).items() if q.part == part]
    return ", ".join(names[:-1]) + (" and " if len(names) > 1 else "") + names[-1] if names else ""


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
            chosen = _by_name_alone(readers, wanted, manifest, notes)
        if chosen is None:
            questions = questions_of(wanted)
            notes.append(f"missing: {wanted} (the untouched skeleton was graded in its place"
                         + (f", so {questions} score 0)" if questions else ")"))
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
    # A file handed in without its folder, whose name several of the manifest's share (student.cu).
    shared = _shared_names(manifest)
    loose = sorted(m for m in readers if m not in used and _name(m) in shared
                   and not any(_match(m, w) for w in manifest))
    if loose:
        notes.append(f"{', '.join(loose)}: handed in without its part's folder, so it could be any part's, "
                     "and was not used: hand in a .zip (or .tar.gz) that keeps the folders, e.g. "
                     "zip hand-in.zip " + " ".join(manifest))
    extra = sorted(m for m in readers if m not in used)
    if extra:
        shown = ", ".join(extra[:8]) + (f" and {len(extra) - 8} more" if len(extra) > 8 else "")
        notes.append(f"ignored (not in the manifest): {shown}")
    return Submission(files, notes, documents)


MAX_DOCUMENT_BYTES = 25 * 1024 * 1024  # all documents together, the report's figures included


FIGURE_SUFFIXES = (".png", ".jpg", ".jpeg", ".svg", ".gif", ".pdf")


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


def submissions_in(folder: Path) -> list[tuple[str, Path]]:
    found = []
    for entry in sorted(folder.iterdir()):
        name = entry.name
        if name.startswith("."):
            continue
        if entry.is_dir():
            found.append((name, entry))
        elif name.lower().endswith((".zip", ".tar.gz", ".tgz", ".tar")):
            stem = name[: -len(".tar.gz")] if name.lower().endswith(".tar.gz") else entry.stem
            found.append((stem, entry))
    return found
