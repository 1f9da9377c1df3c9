"""What crossed PCIe between the host and a GPU, from NVML's byte counters
(nvmlDeviceGetFieldValues, NVML_FI_DEV_PCIE_COUNT_TX_BYTES and _RX_BYTES),
read outside every graded process. A grading holds its GPU alone (lease), so
the bytes of its test phase are its own: the judge's copies of the arrays,
each process's start, and whatever a submission moved itself. Their total is
logged, never judged: the judge's own copies outweigh what computing on the
host adds (measured: pipeline.log_host_traffic). Each call of the judge's,
metered alone, is judged (the rule below)."""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass
from pathlib import Path

FIELD_TX, FIELD_RX = 197, 198  # nvml.h's NVML_FI_DEV_PCIE_COUNT_TX_BYTES, _RX_BYTES


class _Field(ctypes.Structure):
    _fields_ = [("fieldId", ctypes.c_uint), ("scopeId", ctypes.c_uint), ("timestamp", ctypes.c_longlong),
                ("latencyUsec", ctypes.c_longlong), ("valueType", ctypes.c_int), ("nvmlReturn", ctypes.c_int),
                ("value", ctypes.c_ulonglong)]


_nvml, _lock = [], threading.Lock()


def _library():
    """libnvidia-ml, initialised once; None where the driver has none."""
    with _lock:
        if not _nvml:
            try:
                lib = ctypes.CDLL("libnvidia-ml.so.1")
                _nvml.append(lib if lib.nvmlInit_v2() == 0 else None)
            except OSError:
                _nvml.append(None)
        return _nvml[0]


def _counters(uuid: str) -> tuple[int, int] | None:
    """The GPU `uuid`'s two counters now (bytes sent, received), or None where NVML cannot say."""
    lib = _library()
    if lib is None or not uuid.startswith("GPU-"):
        return None
    handle = ctypes.c_void_p()
    if lib.nvmlDeviceGetHandleByUUID(uuid.encode(), ctypes.byref(handle)) != 0:
        return None
    fields = (_Field * 2)()
    fields[0].fieldId, fields[1].fieldId = FIELD_TX, FIELD_RX
    if lib.nvmlDeviceGetFieldValues(handle, 2, fields) != 0 or any(f.nvmlReturn for f in fields):
        return None
    return fields[0].value, fields[1].value


# The counters wrap at 2^32 bytes (measured on an H100: a grading's test phase
# read fewer bytes after than before), so they are read every SAMPLE seconds,
# far less than 4 GiB at PCIe's speed, and the steps added up.
SAMPLE = 0.02


class Meter:
    """Bytes the GPU `uuid` moved over PCIe (both ways) while the meter runs:
    `with Meter(uuid) as m: ...`, then m.bytes (None where NVML cannot say)."""

    def __init__(self, uuid: str):
        self.uuid, self.bytes = uuid, None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> "Meter":
        self._last = _counters(self.uuid)
        if self._last is not None:
            self.bytes = 0
            self._thread.start()
        return self

    def _step(self) -> None:
        now = _counters(self.uuid)
        if now is None:
            return
        self.bytes += sum((b - a) % (1 << 32) for a, b in zip(self._last, now))
        self._last = now

    def _sample(self) -> None:
        while not self._stop.wait(SAMPLE):
            self._step()

    def __exit__(self, *exc) -> None:
        if self.bytes is not None:
            self._stop.set()
            self._thread.join()
            self._step()


def readable(uuid: str) -> bool:
    """Whether NVML reads the counters of the GPU `uuid`."""
    return _counters(uuid) is not None


# The rule on one judged test case's calls. The judge meters each call alone
# (tests/judge/pcie.hpp: from sending the call to its reply, while the
# grading holds its GPU alone and runs one test case at a time; the graded
# process has made its context and loaded its kernels' code before the first)
# and writes a line per call: its name, the bytes of the judge's arrays it was
# given, its kernel launches, the bytes PCIe moved, its seconds. Measured on
# an H200 (the reference, 52,070 calls): a call moves 30-40 KB with no launch
# (the meter's own two reads), about 48 KB with one launch and its
# synchronisation, about 2.3 KB more per further launch (oddEvenSort's 10,007
# launches: 22 MB), at most 240 KB in all but the launch-heavy ones. A launcher
# that merges or sorts on the host moves every array it was given: its inputs
# down and its outputs back, 1.1-1.2 times their bytes.
CALL_ALLOWANCE = 56 << 10  # a call's own: the meter's reads, the synchronisation, one launch
LAUNCH_ALLOWANCE = 4 << 10  # each kernel launch
SAMPLE_ALLOWANCE = 48 << 10  # each read of the meter's during a call (one every SAMPLE seconds)
EXCESS_FLOOR = 512 << 10  # a case's bytes past its calls' allowances never judged ...
EXCESS_SHARE = 0.5  # ... nor those under this share of its calls' arrays


@dataclass
class Call:
    name: str
    arrays: int
    launches: int
    moved: int
    seconds: float

    def allowance(self) -> int:
        return CALL_ALLOWANCE + LAUNCH_ALLOWANCE * self.launches + int(SAMPLE_ALLOWANCE * self.seconds / SAMPLE)


def read_calls(path: Path) -> list[Call] | None:
    """The judge's lines for one test case; None where it wrote none (no meter)."""
    try:
        text = path.read_text()
    except OSError:
        return None
    calls = []
    for line in text.splitlines():
        name, arrays, launches, moved, seconds = line.split("\t")
        calls.append(Call(name, int(arrays), int(launches), int(moved), float(seconds)))
    return calls


@dataclass
class Traffic:
    calls: int
    arrays: int  # bytes of the arrays the calls were given
    moved: int  # bytes PCIe moved during the calls
    excess: int  # what they moved past their allowances, in all (a call under its allowance offsets one over)

    def verdict(self) -> str:
        """Why the case fails ("" where it does not): its calls moved past
        their allowances more than EXCESS_FLOOR and EXCESS_SHARE of their
        arrays' bytes. Summed over the case, so that many small calls done on
        the host add up; a case whose arrays hold less than about 1 MiB in all
        can hide that much."""
        if self.excess <= max(EXCESS_FLOOR, EXCESS_SHARE * self.arrays):
            return ""
        return (f"its {self.calls} call(s) moved {self.excess / 2**20:.1f} MiB over PCIe past what their launches "
                f"need, where their arrays hold {self.arrays / 2**20:.1f} MiB: work done on the host (or a "
                f"kernel's printf, whose output crosses PCIe too)")


def traffic(calls: list[Call]) -> Traffic:
    return Traffic(len(calls), sum(c.arrays for c in calls), sum(c.moved for c in calls),
                   sum(c.moved - c.allowance() for c in calls))
