#!/usr/bin/env python3
"""Measures, on a GPU, whether a graded process inside the grading's sandbox
can map device memory a trusted process owns (share_probe.cu), for each way of
sharing (vmm: CUDA VMM descriptors over a Unix socket; ipc: legacy cudaIpc
handles) and each sandbox (none, unshare, bwrap), at a few sizes; then whether
compute-sanitizer's memcheck in the sandbox sees a read one int past a mapped
array. One line per trial.

  python3 -m tests.judge.share_probe BUILD/share_probe
"""
from __future__ import annotations

import ctypes
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

from tests.grading.harness import sandbox as SB


class Pcie:
    """NVML's PCIe byte counters of GPU 0 (field values), where the driver has
    them: what the judge would read before and after a test case."""

    class Field(ctypes.Structure):
        _fields_ = [("fieldId", ctypes.c_uint), ("scopeId", ctypes.c_uint), ("timestamp", ctypes.c_longlong),
                    ("latencyUsec", ctypes.c_longlong), ("valueType", ctypes.c_int), ("nvmlReturn", ctypes.c_int),
                    ("value", ctypes.c_ulonglong)]

    def __init__(self):
        self.ids, self.why = [], ""
        header = next((h for h in ("/usr/local/cuda/include/nvml.h", "/usr/include/nvml.h") if os.path.exists(h)), None)
        if header is None:
            self.why = "no nvml.h"
            return
        text = open(header).read()
        for name in ("NVML_FI_DEV_PCIE_COUNT_TX_BYTES", "NVML_FI_DEV_PCIE_COUNT_RX_BYTES"):
            m = re.search(r"#define\s+" + name + r"\s+(\d+)", text)
            if m:
                self.ids.append(int(m[1]))
        try:
            self.nvml = ctypes.CDLL("libnvidia-ml.so.1")
            self.nvml.nvmlInit_v2()
            self.handle = ctypes.c_void_p()
            self.nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(self.handle))
        except OSError as e:
            self.ids, self.why = [], str(e)

    def read(self):
        if len(self.ids) != 2:
            return None
        fields = (self.Field * 2)()
        for f, i in zip(fields, self.ids):
            f.fieldId = i
        r = self.nvml.nvmlDeviceGetFieldValues(self.handle, 2, fields)
        if r != 0 or any(f.nvmlReturn != 0 for f in fields):
            self.why = f"nvmlDeviceGetFieldValues: {r}, " + ", ".join(str(f.nvmlReturn) for f in fields)
            return None
        return fields[0].value, fields[1].value


PCIE = None


def trial(probe: Path, how: str, n: int, box: SB.Sandbox | None, graded_args=(), sanitizer=False) -> tuple[int, str]:
    before = PCIE.read()
    judge_end, graded_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    graded = [str(probe), "graded", str(graded_end.fileno()), *graded_args]
    if sanitizer:
        graded = ["compute-sanitizer", "--tool", "memcheck", "--error-exitcode", "99", *graded]
    if box is not None:
        graded = box.wrap(graded, Path("/"), SB.TEST, readable=[probe.parent])
    g = subprocess.Popen(graded, pass_fds=(graded_end.fileno(),), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    graded_end.close()
    env = {**os.environ, "LAB_PCIE_FIELDS": ",".join(map(str, PCIE.ids))} if len(PCIE.ids) == 2 else None
    j = subprocess.run([str(probe), "judge", str(judge_end.fileno()), how, str(n)], pass_fds=(judge_end.fileno(),),
                       capture_output=True, text=True, timeout=120, env=env)
    judge_end.close()
    out, _ = g.communicate(timeout=120)
    text = (j.stdout + j.stderr).strip().replace("\n", " | ")
    after = PCIE.read()
    if before is not None and after is not None:
        text += f" [PCIe tx {(after[0] - before[0]) >> 10} KiB, rx {(after[1] - before[1]) >> 10} KiB]"
    else:
        text += f" [PCIe counters: {PCIE.why}]"
    graded_text = out.decode(errors="replace").strip().splitlines()
    return j.returncode, text + (f" || graded (exit {g.returncode}): " + " | ".join(graded_text[-6:]) if graded_text else
                                 f" || graded exit {g.returncode}")


def main() -> int:
    global PCIE
    PCIE = Pcie()
    probe = Path(sys.argv[1]).resolve()
    boxes = [("none", None)]
    for tool in ("unshare", "bwrap"):
        box = SB.Sandbox(tools=(tool,))
        boxes.append((tool, box if box.available else None) if box.available else (tool + " (unavailable)", None))
    status = 0
    for name, box in boxes:
        if name.endswith("(unavailable)"):
            print(f"{name}: skipped")
            continue
        for how in ("vmm", "ipc"):
            for n in (1000, 1 << 20, 1 << 24, 1 << 28):
                rc, text = trial(probe, how, n, box)
                print(f"[{name}] {how} {n}: {'OK' if rc == 0 else 'FAILED'}: {text}", flush=True)
                status |= rc != 0 and how == "vmm"
    for name, box in boxes:
        if name.endswith("(unavailable)"):
            continue
        for n in (1000, 1 << 20, 1 << 26):
            rc, text = trial(probe, "vmm", n, box, ("host-copy",))
            print(f"[{name}] the work done on the host through copies, {n}: {text}", flush=True)
        rc, text = trial(probe, "vmm", 1000, box, ("past-end",))
        print(f"[{name}] a read one int past a mapped array: {text}", flush=True)
        rc, text = trial(probe, "vmm", 1000, box, ("past-end",), sanitizer=True)
        print(f"[{name}] memcheck, a read one int past a mapped array: {text}", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
