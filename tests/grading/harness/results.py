"""The results a test process hands over (tests/main.cpp, LAB_RESULTS_FD), and
the comparison that decides a test case: the graded process's results against
the trusted run's, byte for byte, here in the harness, a process that never
loads student code.

A stream is a sequence of frames, little endian:
  'S' u32 n, name        a test case starts
  'R' u32 n, what; u8 n, type; u64 n, bytes    one result it read back
  'E'                    the test case ended
The harness keeps a stream in a file of its own (a graded process's arrives on
a pipe; `Collector` copies it) and reads it here without loading the data: a
result is its place in the file, compared in chunks when judged.
"""

from __future__ import annotations

import os
import struct
import threading
from dataclasses import dataclass, field
from pathlib import Path

# Element types: struct format and size; the type names test_env.hpp's RecordType gives.
TYPES = {"i32": ("<i", 4), "i64": ("<q", 8), "u64": ("<Q", 8), "tagged": ("<ii", 8)}
CHUNK = 1 << 20


@dataclass
class Result:
    what: str
    type: str
    offset: int  # of the bytes, in the stream's file
    size: int


@dataclass
class Stream:
    path: Path
    tests: dict[str, list[Result]] = field(default_factory=dict)
    ended: set[str] = field(default_factory=set)
    problem: str = ""  # why the stream could not be read to its end


def read_stream(path: Path) -> Stream:
    """Every test case's results, by name; a malformed frame ends the reading."""
    stream = Stream(path)
    try:
        f = open(path, "rb")
    except OSError as err:
        stream.problem = f"no results ({err.strerror})"
        return stream
    with f:
        size = path.stat().st_size
        current: list[Result] | None = None
        name = ""

        def take(n: int) -> bytes:
            data = f.read(n)
            if len(data) != n:
                raise ValueError("the stream ends inside a frame")
            return data

        try:
            while (kind := f.read(1)) != b"":
                if kind == b"S":
                    name = take(struct.unpack("<I", take(4))[0]).decode("utf-8", "replace")
                    current = stream.tests.setdefault(name, [])
                elif kind == b"R" and current is not None:
                    what = take(struct.unpack("<I", take(4))[0]).decode("utf-8", "replace")
                    type_ = take(take(1)[0]).decode("ascii", "replace")
                    n = struct.unpack("<Q", take(8))[0]
                    if f.tell() + n > size:
                        raise ValueError("the stream ends inside a result")
                    current.append(Result(what, type_, f.tell(), n))
                    f.seek(n, 1)
                elif kind == b"E" and current is not None:
                    stream.ended.add(name)
                    current = None
                else:
                    raise ValueError(f"an unknown frame {kind!r}")
        except ValueError as err:
            stream.problem = f"malformed results at byte {f.tell()}: {err}"
    return stream


def _value(data: bytes, type_: str) -> str:
    fmt, _ = TYPES.get(type_, ("<B", 1))
    values = struct.unpack(fmt, data)
    return "#".join(map(str, values))  # a tagged value reads key#tag, as in the graders' messages


def _first_difference(mine: Stream, a: Result, theirs: Stream, b: Result) -> int | None:
    """The byte offset of the first difference of two results of one size; None when equal."""
    with open(mine.path, "rb") as fa, open(theirs.path, "rb") as fb:
        fa.seek(a.offset)
        fb.seek(b.offset)
        done = 0
        while done < a.size:
            n = min(CHUNK, a.size - done)
            x, y = fa.read(n), fb.read(n)
            if x != y:
                return done + next(i for i in range(min(len(x), len(y))) if x[i] != y[i])
            done += n
    return None


def _element(stream: Stream, r: Result, index: int, width: int) -> bytes:
    with open(stream.path, "rb") as f:
        f.seek(r.offset + index * width)
        return f.read(width)


def compare(mine: Stream, theirs: Stream, name: str) -> str:
    """"" when test case `name` handed over exactly the trusted run's results,
    else what differs first (named in the trusted run's words)."""
    expected = theirs.tests.get(name, [])
    got = mine.tests.get(name)
    if got is None:
        return "it handed over no results" + (f" ({mine.problem})" if mine.problem else "")
    for k, (a, b) in enumerate(zip(got, expected)):
        label = f"result {k + 1} of {len(expected)} ({b.what})"
        if a.what != b.what or a.type != b.type:
            return f"{label}: it handed over '{a.what[:200]}' in its place"
        width = TYPES.get(b.type, ("<B", 1))[1]
        if a.size != b.size:
            return f"{label}: it read back {a.size // width} values, the trusted run {b.size // width}"
        at = _first_difference(mine, a, theirs, b)
        if at is not None:
            i = at // width
            return (f"{label}: at index {i} it read back {_value(_element(mine, a, i, width), b.type)}, "
                    f"the trusted run {_value(_element(theirs, b, i, width), b.type)}")
    if len(got) != len(expected):
        why = f" ({mine.problem})" if mine.problem and len(got) < len(expected) else ""
        return (f"it handed over {len(got)} results where the trusted run handed over {len(expected)}"
                f"{' (all that it did hand over were right)' if len(got) < len(expected) else ''}{why}")
    if name not in mine.ended:
        return "its results end before the test case did"
    return ""


class Collector:
    """Copies what a graded process writes on a pipe into a file of the
    harness's, up to `cap` bytes (the rest is read and dropped, so the process
    never blocks on a full pipe; the stream then reads as cut short)."""

    def __init__(self, read_fd: int, path: Path, cap: int):
        self.path, self.cap, self.overflow = path, cap, False
        self._fd = read_fd
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        total = 0
        with open(self.path, "wb") as out:
            while chunk := os.read(self._fd, CHUNK):
                if total < self.cap:
                    out.write(chunk[: self.cap - total])
                total += len(chunk)
        os.close(self._fd)
        self.overflow = total > self.cap

    def wait(self, timeout: float = 30) -> Path:
        """The file, once the process and everything that held the pipe's other end are gone."""
        self._thread.join(timeout)
        return self.path

    def finish(self, timeout: float = 30) -> Stream:
        """The results stream, once the pipe is closed (wait)."""
        stream = read_stream(self.wait(timeout))
        if self.overflow:  # said first: a stream cut at its cap also reads as malformed
            stream.problem = f"more than {self.cap / (1 << 20):.0f} MiB of results: the rest was not kept"
        return stream
