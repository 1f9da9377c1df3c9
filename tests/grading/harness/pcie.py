"""What crossed PCIe between the host and a GPU, from NVML's byte counters
(nvmlDeviceGetFieldValues, NVML_FI_DEV_PCIE_COUNT_TX_BYTES and _RX_BYTES),
read outside every graded process. A grading holds its GPU alone (lease), so
the bytes of its test phase are its own: the judge's copies of the arrays,
each process's start, and whatever a submission moved itself. They are
logged, never judged: the judge's own copies outweigh what computing on the
host adds (measured: pipeline.log_host_traffic)."""

from __future__ import annotations

import ctypes
import threading

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
