#!/usr/bin/env python3
"""rewrite.py on every launch form the handout and the lab use, and on the
text it must leave alone. Each rewritten launch is also compiled with the
host compiler and run (when g++ is here), so a form that rewrites into
something that does not build shows.

  python3 emulator/test_rewrite.py
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from rewrite import RewriteError, rewrite  # noqa: E402

# (source, what must appear in the rewrite)
FORMS = [
    ("k<<<1, 32>>>(a, b);", '::emu::launch("k", ::emu::Config(1, 32), [&](auto... emu_a_) { k(emu_a_...); }, a, b);'),
    ("k<<<grid, block, 0>>>(a);", "::emu::Config(grid, block, 0)"),
    ("k<<<grid, block, 0, stream>>>(a);", "::emu::Config(grid, block, 0, stream)"),
    ("k<<<dim3(2, 3), dim3(4, 4, 2)>>>(a);", "::emu::Config(dim3(2, 3), dim3(4, 4, 2))"),
    ("k<<<1, 1>>>();", '[&](auto... emu_a_) { k(emu_a_...); });'),
    ("k<int><<<1, 1>>>(x);", '::emu::launch("k<int>", '),
    ("k<THREADS, ITEMS, T, TwoArrays<T>><<<n, THREADS>>>(job, s);",
     "{ k<THREADS, ITEMS, T, TwoArrays<T>>(emu_a_...); }, job, s);"),
    ("lab::k<<<1, 1>>>(x);", '::emu::launch("lab::k", '),
    ("::k<<<1, 1>>>(x);", '::emu::launch("::k", '),
    ("(k)<<<1, 1>>>(x);", "{ (k)(emu_a_...); }"),
    ("k <<< 1, 2 >>> (x);", "::emu::Config( 1, 2 )"),
    ("k<<<static_cast<unsigned>(count), d>>>(dA, nA);", "::emu::Config(static_cast<unsigned>(count), d)"),
    ("k<<<f(a, b), g(c)>>>(h(d, e), x[1]);", "}, h(d, e), x[1]);"),
    ("k<<<1, 1>>>(a,\n  b);", "}, a,\n  b);"),
    ("k<<<1,\n 1>>>(a);", "::emu::Config(1,\n 1)"),
    ("k<<<1, 1>>>\n    (a);", "}\n    , a);"),
    ("__shared__ T s[kMax];", 'T (&s)[kMax] = ::emu::sharedVariableRef<T[kMax]>(emu_slot_s_, "s");'),
    ("__shared__ T buf[2][kD];", "T (&buf)[2][kD] = ::emu::sharedVariableRef<T[2][kD]>("),
    ("__shared__ int flag;", 'int &flag = ::emu::sharedVariableRef<int>(emu_slot_flag_, "flag");'),
    ("__shared__ volatile bool done;", "volatile bool &done = ::emu::sharedVariableRef<volatile bool>("),
    ("__shared__ alignas(16) unsigned long long a[4], b;", "unsigned long long (&a)[4] = "),
    ("__shared__ typename Traits<T>::Key keys[N + 1];", "typename Traits<T>::Key (&keys)[N+1] = "),
    ("extern __shared__ int dyn[];", "int* const dyn = reinterpret_cast<int*>(::emu::dynamicShared());"),
    ("extern __shared__ float s[];", "float* const s = reinterpret_cast<float*>(::emu::dynamicShared());"),
]

# Text that must come out as it went in.
UNCHANGED = [
    'const char* s = "k<<<1, 1>>>(a)";',
    "// k<<<1, 1>>>(a);",
    "/* k<<<1, 1>>>(a); */",
    "std::vector<std::vector<std::vector<int>>> v;",
    "x = a << b;",
    "int n = 1'000'000;",
    "// __shared__ int x;",
]


class Forms(unittest.TestCase):
    def test_every_form(self):
        for source, want in FORMS:
            with self.subTest(source=source):
                out = rewrite(source)
                self.assertIn(want, out)
                self.assertNotIn("<<<", out)
                self.assertEqual(out.count("\n"), source.count("\n"), "line numbers must not move")

    def test_unchanged(self):
        for source in UNCHANGED:
            with self.subTest(source=source):
                self.assertEqual(rewrite(source), source)

    def test_two_launches_and_a_comment(self):
        out = rewrite("a<<<1, 2>>>(x); // b<<<3, 4>>>(y)\nc<<<5, 6>>>(z);")
        self.assertEqual(out.count("::emu::launch"), 2)
        self.assertIn("// b<<<3, 4>>>(y)", out)

    def test_broken_launches_are_refused(self):
        for source in ["<<<1, 1>>>(a);", "k<<<1, 1>>>;", "k<<<1, 1(a);"]:
            with self.subTest(source=source), self.assertRaises(RewriteError):
                rewrite(source)


PROGRAM = r"""
#include <cstdio>
namespace lab { __global__ void add_k(int* p, int v) { p[threadIdx.x + blockIdx.x * blockDim.x] += v; } }
template <int N, class T> __global__ void fill_k(T* p, T v) {
    __shared__ T s[64];
    s[threadIdx.x] = v + N;
    __syncthreads();
    p[threadIdx.x] = s[63 - threadIdx.x];
}
__global__ void none_k() {}
int main() {
    int* d = nullptr;
    cudaMalloc(reinterpret_cast<void**>(&d), 64 * sizeof(int));
    cudaStream_t stream = nullptr;
    fill_k<1, int><<<1, 64>>>(d, 4);
    lab::add_k<<<dim3(2), dim3(32), 0, stream>>>(d,
                                                 10);
    (none_k)<<<1, 1>>>();
    int h[64];
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    std::printf("%d %d\n", h[0], h[63]);
    return cudaDeviceSynchronize() == cudaSuccess && h[0] == 15 && h[63] == 15 ? 0 : 1;
}
"""


@unittest.skipIf(shutil.which("g++") is None, "no g++ here")
class Compiles(unittest.TestCase):
    def test_rewritten_program_builds_and_runs(self):
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "p.cpp"
            src.write_text(rewrite(PROGRAM))
            exe = Path(tmp) / "p"
            b = subprocess.run(["g++", "-std=c++17", "-include", str(HERE / "emu.hpp"), "-fsanitize=thread", "-c",
                                str(src), "-o", str(Path(tmp) / "p.o")], capture_output=True, text=True)
            self.assertEqual(b.returncode, 0, b.stderr)
            objects = [str(Path(tmp) / "p.o")]
            for emu in sorted(HERE.glob("emu_*.cpp")):  # the emulator
                objects.append(str(Path(tmp) / (emu.stem + ".o")))
                b = subprocess.run(["g++", "-std=c++17", "-c", str(emu), "-o", objects[-1]], capture_output=True,
                                   text=True)
                self.assertEqual(b.returncode, 0, b.stderr)
            b = subprocess.run(["g++", *objects, "-o", str(exe)], capture_output=True, text=True)
            self.assertEqual(b.returncode, 0, b.stderr)
            r = subprocess.run([str(exe)], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=1)
