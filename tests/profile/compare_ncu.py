#!/usr/bin/env python3
"""The emulator's profile (EMU_PROFILE) against Nsight Compute's, on a GPU.

Builds tests/profile/launches.cpp twice (make profile-launches, for the GPU
and with EMULATE=1), runs each of its cases under ncu and on the emulator,
and prints per kernel and launch shape what both counted: global sectors per
request (loads, stores), shared-memory wavefronts per request and bank
conflicts per launch (loads, stores), and the emulator's over ncu's.

    python3 tests/profile/compare_ncu.py                    # every case
    python3 tests/profile/compare_ncu.py --cases merge-256x16,merge-256x17
    python3 tests/profile/compare_ncu.py --csv compare.csv  # the table as CSV too

ncu profiles at most --launch-count launches of each case (default 64; the
odd-even sort's case makes 2048): both sides are compared per launch, so the
emulator's rows (every launch) and ncu's (the first ones) agree where the
launches are alike. Needs ncu on the PATH (or --ncu) and access to the GPU's
performance counters. Kernel names are matched on the function's name
(without namespaces or template arguments), the grid and the block size,
within a case (each case runs in a process of its own).
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LAB = Path(__file__).resolve().parents[2]
GPU_BINARY = LAB / "build" / "profile_launches"
EMU_BINARY = LAB / "build" / "emu" / "profile_launches"

# ncu's names for what the emulator counts (Nsight Compute's metrics reference).
METRICS = {
    "gld": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "gld_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "gst": "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "gst_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "sld_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "sst_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "sld_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "sst_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "sld": "smsp__inst_executed_op_shared_ld.sum",
    "sst": "smsp__inst_executed_op_shared_st.sum",
    "grid": "launch__grid_size",
    "block": "launch__block_size",
}
# The emulator's CSV columns (EMU_PROFILE_FILE) for the same counts.
EMU_COLUMNS = {
    "gld": "global_ld_requests", "gld_sectors": "global_ld_sectors",
    "gst": "global_st_requests", "gst_sectors": "global_st_sectors",
    "sld": "shared_ld_requests", "sld_wavefronts": "shared_ld_wavefronts", "sld_conflicts": "shared_ld_conflicts",
    "sst": "shared_st_requests", "sst_wavefronts": "shared_st_wavefronts", "sst_conflicts": "shared_st_conflicts",
}
COUNTS = list(EMU_COLUMNS)


def base_name(kernel: str) -> str:
    """'void lab::mergeTiles_k<256, 17, int>(...)' or 'mergeTiles_k<...>' -> 'mergeTiles_k'."""
    name = kernel.split("(")[0] if not kernel.startswith("(") else kernel
    name = re.sub(r"<.*", "", name).strip()
    name = name.split(" ")[-1]
    return name.split("::")[-1]


def number(text: str) -> float:
    text = text.strip().replace(",", "")
    try:
        return float(text)
    except ValueError:
        return 0.0


def dims_product(text: str) -> int:
    """'16', '16x2', '(16, 2, 1)' -> 32."""
    values = [int(v) for v in re.findall(r"\d+", text)] or [1]
    product = 1
    for v in values:
        product *= v
    return product


def run(command: list[str], env: dict | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=LAB, env=env, text=True, capture_output=True, timeout=timeout)


def build(jobs: int, skip: bool) -> None:
    if skip:
        for binary in (GPU_BINARY, EMU_BINARY):
            if not binary.exists():
                sys.exit(f"--skip-build, but {binary.relative_to(LAB)} is missing: run without it")
        return
    print(f"building the launches for the GPU and for the emulator (make -j{jobs} profile-launches [EMULATE=1]) ...",
          flush=True)
    started = time.time()
    builds = [subprocess.Popen(["make", f"-j{jobs}", "profile-launches"] + extra, cwd=LAB, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
              for extra in ([], ["EMULATE=1"])]
    for process, what in zip(builds, ("GPU", "emulated")):
        out, _ = process.communicate()
        if process.returncode != 0:
            sys.exit(f"the {what} build failed:\n{out[-4000:]}")
    print(f"built in {time.time() - started:.0f} s", flush=True)


def ncu_rows(ncu: str, case: str, launch_count: int, metrics: list[str], folder: Path) -> list[dict]:
    """Per launch ncu profiled: its kernel's function name and each metric."""
    log = folder / f"ncu-{case}.csv"
    command = [ncu, "--target-processes", "all", "--csv", "--page", "raw", "--print-kernel-base", "function",
               "--kernel-name", "regex:_k$", "--launch-count", str(launch_count), "--metrics", ",".join(metrics),
               "--log-file", str(log), str(GPU_BINARY), case]
    result = run(command)
    text = log.read_text(errors="replace") if log.exists() else ""
    if result.returncode != 0 or '"ID"' not in text:
        raise RuntimeError(f"ncu failed on case {case} (exit {result.returncode}):\n"
                           f"{' '.join(command)}\n{(result.stdout + result.stderr + text)[-3000:]}")
    lines = text[text.index('"ID"'):].splitlines()
    rows = list(csv.DictReader(io.StringIO("\n".join(line for line in lines if not line.startswith("==")))))
    launches = []
    for row in rows:
        if not row.get("ID", "").strip().isdigit():
            continue  # the units row
        launches.append(row)
    return launches


def ncu_case(ncu: str, case: str, launch_count: int, folder: Path) -> dict:
    """(function, grid, block) -> summed counts and launches, from ncu."""
    try:
        launches = ncu_rows(ncu, case, launch_count, list(METRICS.values()), folder)
    except RuntimeError as first:
        # an older ncu may lack the instruction counts: the rest still compares
        optional = {METRICS["sld"], METRICS["sst"]}
        try:
            launches = ncu_rows(ncu, case, launch_count, [m for m in METRICS.values() if m not in optional], folder)
        except RuntimeError:
            raise first
    table: dict = {}
    for row in launches:
        grid = int(number(row.get(METRICS["grid"], "0"))) or dims_product(row.get("Grid Size", "1"))
        block = int(number(row.get(METRICS["block"], "0"))) or dims_product(row.get("Block Size", "1"))
        key = (base_name(row.get("Kernel Name", "?")), grid, block)
        entry = table.setdefault(key, {"launches": 0, "name": key[0], **{c: 0.0 for c in COUNTS}})
        entry["launches"] += 1
        for count in COUNTS:
            value = row.get(METRICS[count])
            entry[count] += number(value) if value is not None else float("nan")
    return table


def emu_case(case: str, folder: Path) -> dict:
    """(function, grid, block) -> summed counts and launches, from the emulator."""
    path = folder / f"emu-{case}.csv"
    path.unlink(missing_ok=True)
    env = dict(os.environ, EMU_PROFILE_FILE=str(path))
    env.pop("EMU_PROFILE", None)
    result = run([str(EMU_BINARY), case], env=env)
    if result.returncode != 0 or not path.exists():
        raise RuntimeError(f"the emulated case {case} failed (exit {result.returncode}):\n"
                           f"{(result.stdout + result.stderr)[-3000:]}")
    table: dict = {}
    with path.open() as f:
        for row in csv.DictReader(f):
            key = (base_name(row["kernel"]), dims_product(row["grid"]), dims_product(row["block"]))
            entry = table.setdefault(key, {"launches": 0, "name": row["kernel"], **{c: 0.0 for c in COUNTS}})
            entry["launches"] += int(row["launches"])
            for count in COUNTS:
                entry[count] += number(row[EMU_COLUMNS[count]])
    return table


def per(a: float, b: float) -> float | None:
    return a / b if b else None


def text(value: float | None) -> str:
    if value is None or value != value:
        return "-"
    return f"{value:.2f}" if abs(value) < 1000 else f"{value:.0f}"


def compare(case: str, ncu: dict, emu: dict) -> list[dict]:
    rows = []
    for key in sorted(set(ncu) | set(emu), key=lambda k: (k[0], k[1], k[2])):
        n, e = ncu.get(key), emu.get(key)
        row = {"case": case, "kernel": (e or n)["name"], "grid": key[1], "block": key[2],
               "launches_ncu": n["launches"] if n else 0, "launches_emu": e["launches"] if e else 0}
        for side, data in (("ncu", n), ("emu", e)):
            for what in ("gld", "gst"):
                row[f"{what}_sect_per_req_{side}"] = per(data[f"{what}_sectors"], data[what]) if data else None
            for what in ("sld", "sst"):
                row[f"{what}_wavef_per_req_{side}"] = per(data[f"{what}_wavefronts"], data[what]) if data else None
                row[f"{what}_confl_per_launch_{side}"] = per(data[f"{what}_conflicts"], data["launches"]) if data else None
            row[f"sectors_per_launch_{side}"] = per(data["gld_sectors"] + data["gst_sectors"], data["launches"]) if data else None
            row[f"conflicts_per_launch_{side}"] = per(data["sld_conflicts"] + data["sst_conflicts"], data["launches"]) if data else None
        row["ratio_sectors"] = per(row["sectors_per_launch_emu"] or 0, row["sectors_per_launch_ncu"] or 0) \
            if n and e else None
        row["ratio_conflicts"] = per(row["conflicts_per_launch_emu"] or 0, row["conflicts_per_launch_ncu"] or 0) \
            if n and e else None
        rows.append(row)
    return rows


COLUMNS = [
    ("case", "case", 18), ("kernel", "kernel", 44), ("shape", "grid x block", 13), ("launches", "launches n/e", 12),
    ("gld_sect_per_req", "gld sect/req n|e", 16), ("gst_sect_per_req", "gst sect/req n|e", 16),
    ("sld_wavef_per_req", "sld wavef/req n|e", 17), ("sld_confl_per_launch", "sld confl/launch n|e", 21),
    ("sst_wavef_per_req", "sst wavef/req n|e", 17), ("sst_confl_per_launch", "sst confl/launch n|e", 21),
    ("ratio_sectors", "sectors e/n", 11), ("ratio_conflicts", "conflicts e/n", 13),
]


def cell(row: dict, column: str) -> str:
    if column == "shape":
        return f"{row['grid']} x {row['block']}"
    if column == "launches":
        return f"{row['launches_ncu']}/{row['launches_emu']}"
    if column in ("case", "kernel"):
        return str(row[column])
    if column.startswith("ratio"):
        return text(row[column])
    return f"{text(row[column + '_ncu'])}|{text(row[column + '_emu'])}"


def print_table(rows: list[dict]) -> None:
    print("  ".join(f"{title:<{width}}" for _, title, width in COLUMNS))
    for row in rows:
        print("  ".join(f"{cell(row, key):<{width}}" for key, _, width in COLUMNS))
    print("n: Nsight Compute, e: the emulator (EMU_PROFILE). sect/req: 32-byte sectors per global request;\n"
          "wavef/req: shared wavefronts per request; confl/launch: bank conflicts per launch; sectors e/n and\n"
          "conflicts e/n: the emulator's over ncu's, per launch (1.00: the same). A '-' where a side saw no\n"
          "such request, or no such kernel and shape.")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default="", help="comma-separated cases (default: all; --list-cases)")
    parser.add_argument("--list-cases", action="store_true", help="list the cases and exit (after the build)")
    parser.add_argument("--ncu", default=shutil.which("ncu") or "ncu", help="the ncu to run (default: on the PATH)")
    parser.add_argument("--launch-count", type=int, default=64, help="launches ncu profiles per case (default 64)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 4, help="make -j for the builds")
    parser.add_argument("--skip-build", action="store_true", help="use the binaries already built")
    parser.add_argument("--csv", default="", help="also write the table to this CSV file")
    args = parser.parse_args()

    build(args.jobs, args.skip_build)
    listed = run([str(EMU_BINARY), "--list"]).stdout.split()
    if args.list_cases:
        print("\n".join(listed))
        return 0
    cases = [c for c in args.cases.split(",") if c] or listed
    unknown = [c for c in cases if c not in listed]
    if unknown:
        sys.exit(f"unknown cases: {', '.join(unknown)} (--list-cases names them)")
    if not shutil.which(args.ncu):
        sys.exit(f"no ncu at '{args.ncu}': put Nsight Compute's ncu on the PATH or name it with --ncu")

    rows: list[dict] = []
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="compare-ncu-") as tmp:
        folder = Path(tmp)
        for i, case in enumerate(cases, 1):
            print(f"[{i}/{len(cases)}] {case}: ncu, then the emulator ...", flush=True)
            rows += compare(case, ncu_case(args.ncu, case, args.launch_count, folder), emu_case(case, folder))
    print(f"profiled {len(cases)} cases in {time.time() - started:.0f} s\n")
    print_table(rows)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["case"])
            writer.writeheader()
            writer.writerows(rows)
        print(f"wrote {args.csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
