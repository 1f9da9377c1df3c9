"""Planted faulty submissions: the kinds of broken work students hand in, each
made from the reference by a small edit, with the points each question must get.
`python3 tests/grading/selftest.py` grades them on a GPU; the harness tests check
on any machine that every edit still applies to the reference.

Instructor-only: `make release` leaves this folder's faults out of the student copy.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

P1 = "part1_merge_path/student.cu"
P2 = "part2_batch/student.cu"
P3 = "part3_merge_sort/student.cu"
PX = "extras_oddeven_bitonic/student.cu"


@dataclass
class Fault:
    name: str
    what: str
    edits: list[tuple[str, str, str]]  # (file, text in the reference, replacement)
    expect: dict[str, str]  # question -> full | zero | partial | less; unnamed: full
    sanitize: bool = False  # graded with SANITIZE=1

    @property
    def parts(self) -> list[str]:
        return sorted({f.split("_")[0] for f, _, _ in self.edits})


FAULTS = [
    Fault("compile-error", "Part 2 does not compile",
          [(P2, "namespace lab {", "namespace lab {\nthis line is not C++;")],
          {"Q3": "zero", "Q4": "zero"}),
    Fault("hang", "Q4's kernel spins forever when d = 7",
          [(P2, "    int src = 0;\n    for (int w = 1; w < d; w *= 2) {",
            "    if (d == 7)\n        while (clock64() >= 0) {}\n"
            "    int src = 0;\n    for (int w = 1; w < d; w *= 2) {")],
          {"Q3": "full", "Q4": "partial"}),
    Fault("crash", "the Q1/Q2 launcher dereferences a null pointer when |A| + |B| = 17",
          [(P1, "    mergeSmall_k<<<", "    if (d == 17) *static_cast<volatile int*>(nullptr) = 1;\n    mergeSmall_k<<<")],
          {"Q1": "partial", "Q2": "full"}),
    Fault("illegal-address", "Q3's kernel writes far outside its output when d = 33",
          [(P2, "    out[b.gbx * d + b.tidx] = mergeOutputAt(seg, nA",
            "    if (d == 33) out[-(1LL << 40)] = seg[0];\n    out[b.gbx * d + b.tidx] = mergeOutputAt(seg, nA")],
          {"Q3": "partial", "Q4": "full"}),
    Fault("exit", "the Q4 launcher calls exit(0) for large batches",
          [(P2, "    sortSmall_k<<<shape.blocks, shape.threads>>>",
            "    if (N > 100000) exit(0);\n    sortSmall_k<<<shape.blocks, shape.threads>>>")],
          {"Q3": "full", "Q4": "partial"}),
    Fault("forged-output", "the Q2 launcher prints a passing summary line and ends the process",
          [(P1, "    mergeSmall_k<<<static_cast<unsigned>(count), d>>>",
            '    if (count > 1) {\n        printf("11 passed, 0 failed\\n");\n        fflush(stdout);\n'
            "        _Exit(0);\n    }\n    mergeSmall_k<<<static_cast<unsigned>(count), d>>>"),
           (P1, '#include "../common/cuda_check.hpp"', '#include "../common/cuda_check.hpp"\n\n#include <cstdio>\n#include <cstdlib>')],
          {"Q1": "full", "Q2": "zero"}),
    Fault("host-copy", "mergeLarge copies to the host and calls std::merge",
          [(P3, "    mergeLargeImpl<kThreads, kItems>(dA, nA, dB, nB, dM);\n}",
            "    std::vector<T> a(nA), b(nB), m(nA + nB);\n"
            "    CUDA_CHECK(cudaMemcpy(a.data(), dA, nA * sizeof(T), cudaMemcpyDeviceToHost));\n"
            "    CUDA_CHECK(cudaMemcpy(b.data(), dB, nB * sizeof(T), cudaMemcpyDeviceToHost));\n"
            "    std::merge(a.begin(), a.end(), b.begin(), b.end(), m.begin());\n"
            "    CUDA_CHECK(cudaMemcpy(dM, m.data(), m.size() * sizeof(T), cudaMemcpyHostToDevice));\n}"),
           (P3, "#include <utility>", "#include <utility>\n#include <algorithm>\n#include <vector>")],
          {"Q5": "zero", "Q6": "full", "Q7": "full"}),
    Fault("thrust-call", "mergeSort calls thrust::stable_sort",
          [(P3, "    mergeSortImpl<kSortThreads, kSortItems>(dData, n);\n}",
            "    thrust::stable_sort(thrust::device, dData, dData + n);\n}"),
           (P3, "#include <utility>", "#include <utility>\n#include <thrust/execution_policy.h>\n#include <thrust/sort.h>")],
          {"Q5": "full", "Q6": "zero", "Q7": "full"}),
    Fault("ignored-shape", "the Q7 launchers ignore the shape they are given",
          [(P3, "    withShape(shape, MergeLargeInt{dA, nA, dB, nB, dM});",
            "    (void)shape;\n    mergeLargeImpl<kThreads, kItems>(dA, nA, dB, nB, dM);"),
           (P3, "{ withShape(shape, MergeSortInt{dData, n}); }",
            "{\n    (void)shape;\n    mergeSortImpl<kThreads, kItems>(dData, n);\n}")],
          {"Q5": "full", "Q6": "full", "Q7": "zero"}),
    Fault("ignored-threads", "mergeSmallBatch ignores threadsPerBlock",
          [(P2, "    mergeSmallBatch_k<<<shape.blocks, shape.threads>>>",
            "    const BatchShape mine = batchShape(d, N, 0);\n    mergeSmallBatch_k<<<mine.blocks, mine.threads>>>")],
          {"Q3": "partial", "Q4": "full"}),
    Fault("index32-part1", "Q2's kernel computes pair offsets in 32-bit ints",
          [(P1, "    const size_t pair = blockIdx.x;", "    const int pair = blockIdx.x;")],
          {"Q1": "full", "Q2": "partial"}),
    Fault("index32-part3", "Q5's and Q6's tile offsets are 32-bit ints",
          [(P3, "        m.k0 = t * tile;", "        m.k0 = static_cast<int>(t) * tile;"),
           (P3, "        const long long first = t * tile;", "        const long long first = static_cast<int>(t) * tile;")],
          {"Q5": "partial", "Q6": "partial", "Q7": "full"}),
    Fault("oob-read", "Q1/Q2's kernel reads one element past the end of A",
          [(P1, "    if (k < nA) s[k] = A[k];",
            "    if (k == 0 && nA > 0) {  // a load the compiler must keep, whose value nobody uses\n"
            "        unsigned sink;\n"
            '        asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(sink) : "l"(A + nA));\n'
            "    }\n    if (k < nA) s[k] = A[k];")],
          {"Q1": "less", "Q2": "less"}, sanitize=True),
    Fault("private-flag", "X1's loop ends on each thread's own 'did I swap?' flag (the bug gallery's first)",
          [(PX, "        swapped = __syncthreads_or(mine);", "        swapped = mine;")],
          {"X1": "less", "X2": "full", "X3": "full", "X4": "full"}),
]


def reference_submission(lab: Path) -> dict[str, str]:
    """The reference as a student would hand it in: the manifest's files, with
    the reference's includes and implementation name turned into the student's."""
    files = {}
    for part_dir in ("part1_merge_path", "part2_batch", "part3_merge_sort", "extras_oddeven_bitonic"):
        text = (lab / part_dir / "reference.cu").read_text()
        text = text.replace("reference_search.cuh", "student_search.cuh")
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
