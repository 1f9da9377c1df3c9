"""Running a process: in its own session, under a time limit, its output
logged up to a cap; what a test leaves behind reaped; how it ended, said in
words. The environment a submission's processes see. Files a test process
left, read without trusting them."""

from __future__ import annotations

import errno
import os
import signal
import stat
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # for the annotations only
    from .options import Options


LOG_TAIL_BYTES = 4000  # how much of a failing test's output the report quotes


LOG_CAP_BYTES = 1 << 20  # what one log keeps of a process's output; the rest is counted, not kept


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
        sandboxed: bool = False, pass_fds: tuple[int, ...] = (), started=None) -> Run:
    """Runs cmd in its own process group; at the timeout the whole group is
    killed, and so is anything it left behind. The log keeps LOG_CAP_BYTES of
    the output. `sandboxed`: cmd is a sandbox.wrap() command (its shell reports
    a signal N as 128 + N). `pass_fds`: descriptors the command inherits.
    `started(pid)`: called once the command has started (its group is pid)."""
    start = time.monotonic()
    with open(log, "wb") if log else open(os.devnull, "wb") as sink:
        # Started and listed as one step: reap_orphans (another thread's) must
        # never see this child before it is listed as waited on.
        with _active_lock:
            proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True, pass_fds=pass_fds)
            _active.add(proc.pid)
        if started is not None:
            started(proc.pid)
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


# What of the harness's environment a submission's builds and tests see: what
# finds the compilers, their libraries and the GPU; nothing that names the
# grading (its folders, make's variables, a token the machine holds).
ENV_KEPT = ("PATH", "LD_LIBRARY_PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM", "NVCC", "CXX", "CC", "CUDA_HOME",
            "CUDA_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NVIDIA_VISIBLE_DEVICES",
            "NVIDIA_DRIVER_CAPABILITIES")


def kept_env() -> dict:
    return {k: v for k, v in os.environ.items() if k in ENV_KEPT}


def test_env(opts: Options, gpu_env: dict) -> dict:
    """The environment of every graded and sanitized run (and the trusted one)."""
    env = kept_env()
    env.update(gpu_env)
    env.update({"LAB_SEED": str(opts.seed), "LAB_TRACE": "require", "LAB_CONFINE": "1", "NO_COLOR": "1"})
    if opts.large:
        env["LAB_LARGE"] = "1"
    return env


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
