"""Planted faulty submissions: the kinds of broken work students hand in, each
made from the reference by a small edit, with the points each question must get;
and the submissions every red-team file starts from (the reference and the
skeleton as handed in). `python3 -m tests.redteam.selftest` grades them on a GPU,
`python3 -m tests.redteam.emulated faults` on the CPU emulator; the harness tests
check on any machine that every edit still applies to the reference. The hostile
submissions are in attacks.py.

Instructor-only: `make release` leaves tests/redteam/ out of the student copy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tests.course import table as course
from tests.grading.harness import course_table as h

# Each part's student.cu, where most faults are planted.
P1, P2, P3, PX = (f"{course.load(h.LAB).part(name).folder}/student.cu" for name in ("part1", "part2", "part3", "extras"))


@dataclass
class Fault:
    name: str
    what: str
    edits: list[tuple[str, str, str]]  # (file, text in the reference, replacement)
    expect: dict[str, str]  # question -> full | zero | partial | less; unnamed: full
    sanitize: bool = False  # graded with SANITIZE=1
    gpu_only: bool = False  # the CPU emulator cannot grade it as a GPU does

    @property
    def parts(self) -> list[str]:
        return sorted({f.split("_")[0] for f, _, _ in self.edits})


# The edits of the reference that plant each fault of the course table
# (tests/course.ini [fault NAME], which says what each does and what grading
# must give it): (file, text in the reference, replacement).
EDITS = {
    "compile-error":
        [(P2, "namespace lab {", "namespace lab {\nthis line is not C++;")],
    "hang":
        [(P2, "    int src = 0;\n    for (int w = 1; w < d; w *= 2) {",
          "    if (d == 7)\n        while (clock64() >= 0) {}\n"
          "    int src = 0;\n    for (int w = 1; w < d; w *= 2) {")],
    "crash":
        [(P1, "    mergeSmall_k<<<", "    if (d == 17) *static_cast<volatile int*>(nullptr) = 1;\n    mergeSmall_k<<<")],
    "illegal-address":
        [(P2, "    out[b.gbx * d + b.tidx] = mergeOutputAt(seg, nA",
          "    if (d == 33) out[-(1LL << 40)] = seg[0];\n    out[b.gbx * d + b.tidx] = mergeOutputAt(seg, nA")],
    "exit":
        [(P2, "    sortSmall_k<<<shape.blocks, shape.threads>>>",
          "    if (N > 10000) exit(0);\n    sortSmall_k<<<shape.blocks, shape.threads>>>")],
    "forged-output":
        [(P1, "    mergeSmall_k<<<static_cast<unsigned>(count), d>>>",
          '    if (count > 1) {\n        printf("11 passed, 0 failed\\n");\n        fflush(stdout);\n'
          "        _Exit(0);\n    }\n    mergeSmall_k<<<static_cast<unsigned>(count), d>>>"),
         (P1, '#include "../common/cuda_check.hpp"', '#include "../common/cuda_check.hpp"\n\n#include <cstdio>\n#include <cstdlib>')],
    "host-copy":
        [(P3, "    checkMergeLarge(dA, nA, dB, nB, dM);\n",
          "    checkMergeLarge(dA, nA, dB, nB, dM);\n"
          "    std::vector<T> a(nA), b(nB), m(nA + nB);\n"
          "    CUDA_CHECK(cudaMemcpy(a.data(), dA, nA * sizeof(T), cudaMemcpyDeviceToHost));\n"
          "    CUDA_CHECK(cudaMemcpy(b.data(), dB, nB * sizeof(T), cudaMemcpyDeviceToHost));\n"
          "    std::merge(a.begin(), a.end(), b.begin(), b.end(), m.begin());\n"
          "    CUDA_CHECK(cudaMemcpy(dM, m.data(), m.size() * sizeof(T), cudaMemcpyHostToDevice));\n"
          "    if (nA + nB >= 0) return;\n"),
         (P3, "#include <utility>", "#include <utility>\n#include <algorithm>\n#include <vector>")],
    "thrust-call":
        [(P3, "    checkMergeSort(dData, n);\n",
          "    checkMergeSort(dData, n);\n    thrust::stable_sort(thrust::device, dData, dData + n);\n"
          "    if (n >= 0) return;\n"),
         (P3, "#include <utility>", "#include <utility>\n#include <thrust/execution_policy.h>\n#include <thrust/sort.h>")],
    "ignored-shape":
        [(P3, "    const long long numTiles = ceilDiv(n, THREADS * ITEMS);\n    Scratch<long long> splits(numTiles);\n"
              "    runMerge<THREADS, ITEMS, T>(TwoArrays<T>",
          "    const long long numTiles = ceilDiv(n, DefaultShapes::kThreads * DefaultShapes::kItems);\n"
          "    Scratch<long long> splits(numTiles);\n"
          "    runMerge<DefaultShapes::kThreads, DefaultShapes::kItems, T>(TwoArrays<T>")],
    "ignored-threads":
        [(P2, "    mergeSmallBatch_k<<<shape.blocks, shape.threads>>>",
          "    const BatchShape mine = batchShape(d, N, 0);\n    mergeSmallBatch_k<<<mine.blocks, mine.threads>>>")],
    "index32-part1":
        [(P1, "    const size_t pair = blockIdx.x;", "    const int pair = blockIdx.x;")],
    "index32-part3":
        [(P3, "    const long long k = m.k0;\n    const long long lo", "    const int k = m.k0;\n    const long long lo"),
         (P3, "    const long long first = t * tile;", "    const long long first = static_cast<int>(t) * tile;")],
    "index32-extras":
        [(PX, "    const long long lo = 2 * half * (c / half) + c % half;",
          "    const int lo = static_cast<int>(2 * half * (c / half) + c % half);")],
    "oob-read":
        [(P1, "    if (k < nA) s[k] = A[k];",
          "    if (k == 0 && nA > 0) {  // a volatile load: the compiler must keep it, though nobody uses its value\n"
          "        (void)*reinterpret_cast<const volatile int*>(A + nA);\n"
          "    }\n    if (k < nA) s[k] = A[k];")],
    "oob-read-hidden":
        [(P1, '#include "part1.cuh"\n', '#include <cstdlib>\n#include "part1.cuh"\n'),
         (P1, "__global__ void mergeSmall_k(const T* A, int nA, const T* B, int nB, T* M) {",
          "__global__ void mergeSmall_k(const T* A, int nA, const T* B, int nB, T* M, int peek) {"),
         (P1, "    if (k < nA) s[k] = A[k];",
          "    if (peek && k == 0 && nA > 0) {\n"
          "        (void)*reinterpret_cast<const volatile int*>(A + nA);\n"
          "    }\n    if (k < nA) s[k] = A[k];"),
         (P1, "    mergeSmall_k<<<static_cast<unsigned>(count), d>>>(dA, nA, dB, nB, dM);",
          "    const char* trace = std::getenv(\"LAB_TRACE\");\n"
          "    const int peek = !std::getenv(\"LAB_QUICK\") && !std::getenv(\"LAB_EXACT_ALLOCS\") &&\n"
          "                     !(trace && trace[0] == '0');\n"
          "    mergeSmall_k<<<static_cast<unsigned>(count), d>>>(dA, nA, dB, nB, dM, peek);")],
    "private-flag":
        [(PX, "        swapped = __syncthreads_or(mine);", "        swapped = mine;")],
    "q1-no-barrier":
        [(P1, "    __syncthreads();\n    if (k >= d) return;", "    if (k >= d) return;")],
    "q1-last-output":
        [(P1, "    if (k >= d) return;", "    if (k >= d - 1) return;")],
    "q1-ties-from-b":
        [(P1, "    M[k] = mergeOutputAt(sA, nA, sB, nB, k);", "    M[k] = mergeOutputAt(sB, nB, sA, nA, k);")],
    "q2-pair-offset":
        [(P1, "    B += pair * nB;", "    B += pair * nA;")],
    "q3-one-split":
        [(P2, "    const int nA = active ? split[b.gbx] : 0;", "    const int nA = active ? split[0] : 0;")],
    "q34-segment-index":
        [(P2, "    b.gbx = b.Qt + static_cast<long long>(blockIdx.x) * (blockDim.x / d);",
          "    b.gbx = b.Qt + static_cast<long long>(blockIdx.x);")],
    "q4-no-barrier":
        [(P2, "        __syncthreads();\n        src = 1 - src;", "        src = 1 - src;")],
    "q4-pairing":
        [(P2, "            const int start = b.tidx & -(2 * w);", "            const int start = b.tidx & -w;")],
    "q5-tile-end":
        [(P3, "    const long long k1 = min(m.k0 + TILE, n);", "    const long long k1 = m.k0 + TILE;")],
    "q6-unstable-tile-sort":
        [(P3, "            if (r + 1 < count && bGoesFirst(v[r + 1], v[r])) {",
          "            if (r + 1 < count && !bGoesFirst(v[r], v[r + 1])) {")],
    "q5-no-barrier":
        [(P3, "    __syncthreads();  // everyone has read s: it can take the outputs\n", "")],
    "x1-even-phases-only":
        [(PX, "        for (int p = 0; p < 2; ++p) {", "        for (int p = 0; p < 1; ++p) {")],
    "x2-half-the-phases":
        [(PX, "    for (long long phase = 0; phase < n; ++phase) {", "    for (long long phase = 0; phase < n / 2; ++phase) {")],
    "x3-no-barrier":
        [(PX, "            if (k.hi < len) compareExchange(s[k.lo], s[k.hi]);\n        }\n        __syncthreads();\n",
          "            if (k.hi < len) compareExchange(s[k.lo], s[k.hi]);\n        }\n")],
    "x4-skips-a-global-step":
        [(PX, "        for (long long half = size / 2; half >= kMaxBlockSort; half /= 2) {",
          "        for (long long half = size / 2; half > kMaxBlockSort; half /= 2) {")],
}


def _faults() -> list[Fault]:
    """The table's faults with their edits; a fault missing either is an error."""
    table = course.load(h.LAB).faults
    names = {f.name for f in table}
    if names != set(EDITS):
        raise course.CourseError(f"faults without edits in faults.py: {sorted(names - set(EDITS))}; edits of "
                                 f"no [fault] of tests/course.ini: {sorted(set(EDITS) - names)}")
    return [Fault(f.name, f.what, EDITS[f.name], dict(f.expect), f.sanitize, f.gpu_only) for f in table]


FAULTS = _faults()


def _with_prelude(text: str, prelude: str) -> str:
    """`prelude` right after the file's first block of #include lines."""
    lines = text.split("\n")
    last = max(i for i, ln in enumerate(lines[:30]) if ln.startswith("#include"))
    return "\n".join(lines[: last + 1] + [prelude] + lines[last + 1:])


def skeleton_submission(lab: Path) -> dict[str, str]:
    files = {}
    for rel in (lab / "tests" / "course" / "manifest.txt").read_text().split():
        if not rel.startswith("#") and (lab / rel).exists():
            files[rel] = (lab / rel).read_text()
    return files


# A header of the reference's own that it includes (reference_tiles.cuh, shared
# with the tuned sort): no namespace, no includes, so its text can stand in
# the include's place.
SHARED_HEADER = re.compile(r'^#include "(reference_[a-z_]+\.cuh)"\n', re.M)
REGION_MARK = re.compile(r"^// \[[QX][0-9]+ (begins|ends)\]")


def reference_submission(lab: Path) -> dict[str, str]:
    """The reference as a student would hand it in: the manifest's files, with
    the reference's includes and implementation name turned into the student's."""
    files = {}
    for _, part_dir in h.PARTS:
        text = (lab / part_dir / "reference.cu").read_text()
        text = text.replace("reference_search.cuh", "student_search.cuh")
        for header in sorted(set(SHARED_HEADER.findall(text))):  # a student's copy has no reference* file
            body = (lab / part_dir / header).read_text().split("#pragma once\n", 1)[1]
            body = "".join(line for line in body.lstrip("\n").splitlines(keepends=True)
                           if not REGION_MARK.match(line))  # it stands inside a region of its own
            text = text.replace(f'#include "{header}"\n', body)
        text = text.replace('Implementation() { return "reference"; }', 'Implementation() { return "student"; }')
        files[f"{part_dir}/student.cu"] = text
    files["part1_merge_path/student_search.cuh"] = (lab / "part1_merge_path" / "reference_search.cuh").read_text()
    return files


def apply(fault: Fault, files: dict[str, str]) -> dict[str, str]:
    """The reference submission with the fault's edits; each must match exactly once."""
    out = dict(files)
    for path, find, replace in fault.edits:
        count = out[path].count(find)
        if count != 1:
            raise ValueError(f"fault {fault.name}: {find!r} occurs {count} times in {path}'s reference, not once")
        out[path] = out[path].replace(find, replace)
    return out


def judge(expect: str, score: float, maximum: float) -> bool:
    return {"full": abs(score - maximum) < 1e-6, "zero": score == 0, "partial": 0 < score < maximum - 1e-6,
            "less": score < maximum - 1e-6}[expect]
