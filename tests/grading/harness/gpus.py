"""The GPU a grading uses: the lab's own probe (no student code) asked about
it, its sandboxed view (its device nodes, its UUID), and the places every
grading on this machine shares, so that no GPU runs more at once than it
should. nvidia-smi asked before anything is built (Gradescope)."""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from . import sandbox as sb
from .processes import describe_exit, kept_env, run

if TYPE_CHECKING:  # for the annotations only
    from .options import Options


PROBE_TIMEOUT = 60


class LabError(Exception):
    """A grading that could not run for a reason that is not the submission's
    (its GPU held elsewhere, the lab's probe failing on a GPU nvidia-smi
    lists): never a score, always said as such, and graded again later."""



# A place waited for longer than this is a lab error (a place is held by one
# process of the same grading, itself under a time limit).
PLACE_WAIT = 1800


# The lab's probe, tried again this often (PROBE_PAUSE s apart) before a GPU
# that nvidia-smi lists is called a lab error.
PROBE_TRIES, PROBE_PAUSE = 3, 10


def probe_gpu(base: Path, env: dict, opts: "Options | None" = None) -> tuple[bool, str, int]:
    """Asks the lab's own test binary (no student code in it) about the GPU;
    with opts, fits their process counts to the GPU's free memory."""
    fields = _probe(base, env)
    if "GPU" in fields:
        count = int(fields.get("devices", "1"))
        if opts is not None:
            opts.fit_gpu(int(fields["free MiB"]) if fields.get("free MiB", "").isdigit() else None)
            opts.large_jobs = large_jobs(int(fields.get("total MiB", "0") or 0), len(opts.parts))
            if opts.large and fields.get("large tier", "fits") != "fits":
                opts.large, opts.large_off = False, "not graded on this GPU: " + fields["large tier"]
        return True, "GPU: " + fields["GPU"], count
    return False, "no GPU: " + fields.get("no GPU", fields.get("", "the probe failed")), 0


# What one trusted [large] process holds at most, of the GPU's memory and of
# the host's (two arrays of 2^31 ints, and the oracle's copies of them).
LARGE_PROCESS_MIB = 24 * 1024


def large_jobs(gpu_total_mib: int, parts: int) -> int:
    """How many trusted [large] processes fit at once in the GPU's memory and the host's."""
    host_mib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") >> 20
    return max(1, min(parts, gpu_total_mib // LARGE_PROCESS_MIB, host_mib // LARGE_PROCESS_MIB))


def visible_gpus() -> list[tuple[str, str]]:
    """The GPUs a grading here may hold: (what CUDA_VISIBLE_DEVICES names it
    by, its UUID), from nvidia-smi, limited to CUDA_VISIBLE_DEVICES where
    that is set (by index or UUID, as Slurm and instructors set it); one
    unnamed GPU where nvidia-smi does not answer."""
    listed: list[tuple[str, str]] = []
    smi = shutil.which("nvidia-smi")
    if smi is not None:
        try:
            r = subprocess.run([smi, "--query-gpu=index,uuid", "--format=csv,noheader"], capture_output=True,
                               text=True, timeout=PROBE_TIMEOUT, stdin=subprocess.DEVNULL)
            listed = [(i.strip(), u.strip()) for i, _, u in (ln.partition(",") for ln in r.stdout.splitlines())
                      if u.strip().startswith("GPU-")]
        except (OSError, subprocess.TimeoutExpired):
            pass
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    if not listed:
        return [(v, v) for v in visible] or [("", "")]
    if not visible:
        return [(uuid, uuid) for _, uuid in listed]
    found = [next(((v, u) for i, u in listed if v in (i, u) or (v.startswith("GPU-") and u.startswith(v))), (v, v))
             for v in visible]
    return found


@contextlib.contextmanager
def lease(gpus: list[tuple[str, str]], wait: float, said=None):
    """One of `gpus` (visible_gpus) held by this grading alone, machine-wide,
    from its first process on the GPU to its last: yields the environment
    that names it. No other grading's process, on this machine and of any
    user, runs on it meanwhile, so no classmate's test can take its memory or
    its time. Waited for up to `wait` seconds (`said` hears once that it is
    waited for); then LabError. Held as a place is (place), by name, but one
    name per GPU for every user."""
    told = []

    def waiting(waited: float) -> None:
        if waited > wait:
            raise LabError(f"waited {waited:.0f} s for a GPU that other gradings held (LEASE_WAIT={wait:g})")
        if not told and said is not None and waited > 2:
            said(f"waiting for a GPU: another grading on this machine holds {'each of ' if len(gpus) > 1 else ''}"
                 f"{', '.join(u or 'it' for _, u in gpus)}")
            told.append(True)

    with _held([f"lab-gpu-lease-{uuid or 'default'}" for _, uuid in gpus], waiting, 1.0) as i:
        yield {"CUDA_VISIBLE_DEVICES": gpus[i][0]} if gpus[i][0] else {}


def probe_held(base: Path, gpu_env: dict, opts: "Options") -> tuple[bool, str, int]:
    """probe_gpu on a GPU this grading holds (lease): where nvidia-smi lists a
    GPU and the probe still fails (its memory taken by a process that is not
    a grading's, a driver fault), tried again, then a LabError, never "no GPU"."""
    ok, line, count = probe_gpu(base, gpu_env, opts)
    if ok or not gpu_listed()[0]:
        return ok, line, count
    for _ in range(PROBE_TRIES - 1):
        time.sleep(PROBE_PAUSE)
        ok, line, count = probe_gpu(base, gpu_env, opts)
        if ok:
            return ok, line, count
    raise LabError(f"the lab's probe failed {PROBE_TRIES} times on a GPU nvidia-smi lists ({line})")


@contextlib.contextmanager
def place(kind: str, slots: int, wait: float = PLACE_WAIT):
    """One of `slots` places of `kind` on this machine, shared by every grading
    on it, waited for. "gpu-<UUID>": a process on that GPU (a test, a
    sanitized run, a trusted run), GPU_JOBS of them: the GPU time-slices
    between processes, and tests that launch thousands of small kernels
    slowed four-fold with sixteen beside them; so the grading that holds a
    GPU (lease) never loads it with more, and a test's time limit holds (the
    wait is not the test's time). "large": a
    [large] process (24 GiB of the GPU's and the host's memory each),
    large_jobs of them, taken before its GPU place. A place is a name in
    Linux's abstract socket namespace, held by binding it: nothing on disk,
    gone with the process that held it, and out of a sandbox's reach (its own
    network namespace has its own names). Waited for up to `wait` seconds,
    then LabError."""
    def waiting(waited: float) -> None:
        if waited > wait:
            raise LabError(f"waited {wait:g} s for a place of {kind}")

    with _held([f"lab-{kind}-{os.geteuid()}-{i}" for i in range(slots)], waiting, 0.2):
        yield


@contextlib.contextmanager
def _held(names: list[str], waiting, longest_pause: float):
    """One of `names` bound in Linux's abstract socket namespace, tried in a
    random order until one is free: yields its index and holds it until the
    block ends. `waiting(seconds)` hears how long it has waited between
    tries (and raises to stop waiting); pauses grow to `longest_pause`."""
    pause, started = 0.01, time.monotonic()
    while True:
        for i in random.sample(range(len(names)), len(names)):
            held = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                held.bind("\0" + names[i])
            except OSError:
                held.close()
                continue
            try:
                yield i
            finally:
                held.close()
            return
        waiting(time.monotonic() - started)
        time.sleep(pause)
        pause = min(longest_pause, pause * 1.5)


def _probe(base: Path, env: dict) -> dict[str, str]:
    """The lab's probe's lines (GPU, devices, free MiB, uuid, large tier; or no
    GPU), under `env`; "" holds how it ended when it failed."""
    r = run([str(base / "build" / "test_common")], base, PROBE_TIMEOUT,
              env={**kept_env(), **env, "LAB_PROBE_GPU": "1"})
    keys = ("GPU", "no GPU", "devices", "free MiB", "total MiB", "uuid", "large tier")
    fields = {k: v.strip() for k, _, v in (ln.partition(":") for ln in r.output.splitlines()) if k in keys}
    if r.returncode != 0:
        fields.pop("GPU", None)
        fields[""] = describe_exit(r, PROBE_TIMEOUT)
    return fields


_gpu_views: dict[tuple, tuple[dict, list[str] | None]] = {}


_gpu_views_lock = threading.Lock()


def gpu_view(base: Path, gpu_env: dict) -> tuple[dict, list[str] | None]:
    """What a sandbox of a grading on the GPU `gpu_env` names gets: the
    environment that names that GPU (by its UUID, since the sandbox shows it
    alone and a CUDA index would count from it) and its device nodes
    (sandbox.gpu_nodes), or `gpu_env` and None (every GPU node) where the
    driver does not say which node is that GPU's. Once per GPU."""
    key = tuple(sorted(gpu_env.items()))
    with _gpu_views_lock:
        if key not in _gpu_views:
            uuid = _probe(base, gpu_env).get("uuid", "")
            nodes = sb.gpu_nodes(uuid) if uuid.startswith("GPU-") else None
            _gpu_views[key] = ({**gpu_env, "CUDA_VISIBLE_DEVICES": uuid} if nodes else dict(gpu_env), nodes)
        return _gpu_views[key]


def gpu_place(base: Path, gpu_env: dict) -> str:
    """The kind of place (place) a process on the GPU `gpu_env` takes: named
    by the GPU's UUID where the probe tells it, so that gradings naming one
    GPU differently still share its places."""
    return "gpu-" + gpu_view(base, gpu_env)[0].get("CUDA_VISIBLE_DEVICES", "")


def gpu_listed() -> tuple[bool, str]:
    """Whether nvidia-smi lists a GPU, and its line or why not: asked before
    anything is built (probe_gpu then asks the lab's own probe)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False, "no NVIDIA driver: nvidia-smi is not installed"
    try:
        r = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=PROBE_TIMEOUT,
                           stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as err:
        return False, f"nvidia-smi did not answer ({err})"
    gpus = [ln for ln in r.stdout.splitlines() if ln.startswith("GPU ")]
    if r.returncode != 0 or not gpus:
        said = (r.stderr or r.stdout).strip().splitlines()
        return False, "nvidia-smi lists no GPU" + (f" ({said[-1][:200]})" if said else "")
    return True, gpus[0]
