#!/usr/bin/env python3
"""Host tests of symbols.py (g++ and binutils; no GPU, no nvcc): small objects
compiled here stand for the graders' trusted objects and for honest and hostile
student objects. Ends with the plain line `N passed, N failed`."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
from tests.grading.harness import symbols as S

# A header both sides include: an interface function, an inline function and a
# graders' template, like the lab's headers.
HEADER = """#pragma once
#include <vector>
namespace lab {
void mergeSmall(int n);
inline int twice(int x) { return 2 * x; }
namespace test { template <class T> int record(T x) { return x + 1; } }
}
"""

TRUSTED = """#include "lab.hpp"
int (*keepRecord)(int) = &lab::test::record<int>;  // out-of-line (weak) copies
int (*keepTwice)(int) = &lab::twice;
int useIt(int n) {
  std::vector<int> v;
  for (int i = 0; i < n; ++i) v.push_back(lab::test::record<int>(i));  // std::vector's weak copies
  v.resize(2 * n);
  lab::mergeSmall(v.back());
  return static_cast<int>(v.size());
}
"""

STUDENTS = {
    "honest": """#include "lab.hpp"
#include <cstdio>
namespace { int tripled(int x) { return 3 * x; } }
static int minusOne(int x) { return x - 1; }
namespace lab {
int studentHelper(int n) {
  std::vector<int> v;
  for (int i = 0; i < n; ++i) v.push_back(tripled(i));
  v.resize(2 * n);
  return v.back() + minusOne(n);
}
void mergeSmall(int n) { std::printf("%d\\n", studentHelper(n)); }
}
struct Setup { Setup() { lab::mergeSmall(0); } } setup;
""",
    "specialised": """#include "lab.hpp"
template <> int lab::test::record<int>(int) { return 42; }
""",
    "weak_twice": """#include "lab.hpp"
int (*mine)(int) = &lab::twice;
""",
    "weak_record": """#include "lab.hpp"
int (*mine)(int) = &lab::test::record<int>;
""",
    "operator_new": """#include <cstdlib>
#include <new>
void* operator new(std::size_t n) { return std::malloc(n ? n : 1); }
""",
    "malloc": """#include <cstddef>
extern "C" void* malloc(std::size_t n) {
  static char pool[1 << 16];
  static std::size_t used;
  void* p = pool + used;
  used += (n + 15) & ~std::size_t(15);
  return p;
}
""",
    "atexit": 'extern "C" int atexit(void (*)()) { return 0; }\n',
    "cuda": """extern "C" int cudaMalloc(void** p, unsigned long n) { *p = nullptr; return static_cast<int>(n); }
extern "C" int cuMemAlloc_v2(unsigned long long* p, unsigned long n) { *p = 0; return static_cast<int>(n); }
""",
    "many": "".join(f'extern "C" int cudaThing{i}() {{ return {i}; }}\n' for i in range(20)),
    "priority": "extern int flag;\n__attribute__((constructor(101))) static void early() { flag = 1; }\n",
    "preinit": """extern int flag;
static void early() { flag = 1; }
__attribute__((section(".preinit_array"), used)) static void (*earlyPointer)() = &early;
""",
    "in_init": """extern int flag;
__attribute__((section(".init"), used)) static const char inInit = 1;
__attribute__((destructor(150))) static void late() { flag = 2; }
""",
    "ifunc": """extern "C" int implementation() { return 1; }
extern "C" void* resolver() { return reinterpret_cast<void*>(&implementation); }
extern "C" int picked() __attribute__((ifunc("resolver")));
""",
    "dlsym": """extern "C" void* dlsym(void*, const char*);
void* find(const char* name) { return dlsym(nullptr, name); }
""",
    "entry_point": """extern "C" int cudaGetDriverEntryPoint(const char*, void**, unsigned long long, void*);
void* find(const char* name) { void* f = nullptr; cudaGetDriverEntryPoint(name, &f, 0, nullptr); return f; }
""",
    "phdr": """#include <link.h>
static int seen(dl_phdr_info*, size_t, void*) { return 0; }
int walk() { return dl_iterate_phdr(seen, nullptr); }
""",
}


def compile_object(folder: Path, name: str, source: str) -> Path:
    (folder / f"{name}.cpp").write_text(source)
    subprocess.run(["g++", "-std=c++17", "-c", "-O1", f"-I{folder}", f"{name}.cpp", "-o", f"{name}.o"],
                   cwd=folder, check=True, capture_output=True, timeout=120)
    return folder / f"{name}.o"


def defined(obj: Path) -> dict[str, str]:
    out = subprocess.run(["nm", "--defined-only", str(obj)], capture_output=True, text=True, check=True).stdout
    return {f[2]: f[1] for f in (ln.split() for ln in out.splitlines()) if len(f) == 3}


@unittest.skipUnless(shutil.which("g++") and shutil.which("nm") and shutil.which("readelf"),
                     "needs g++ and binutils")
class ObjectProblems(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        folder = Path(cls.tmp.name)
        (folder / "lab.hpp").write_text(HEADER)
        cls.trusted = [compile_object(folder, "trusted", TRUSTED)]
        cls.objects = {name: compile_object(folder, name, source) for name, source in STUDENTS.items()}
        (folder / "program.cpp").write_text("#include <iostream>\nint main() { std::cout << 1; }\n")
        subprocess.run(["g++", "program.cpp", "-o", "program"], cwd=folder, check=True, timeout=120)
        cls.libraries = S.link_libraries(folder / "program")
        cls.garbage = folder / "garbage.o"
        cls.garbage.write_bytes(b"not an object file at all\n" * 10)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def problems(self, name: str) -> list[str]:
        return S.object_problems(self.objects[name], self.trusted, self.libraries)

    def test_libraries_of_a_linked_program(self):
        names = [p.name for p in self.libraries]
        self.assertIn("libc.so.6", names)
        self.assertTrue(any(n.startswith("libstdc++.so") for n in names), names)

    def test_honest_object_passes(self):
        shared_weak = {n for n, k in defined(self.objects["honest"]).items() if k == "W"} & \
                      {n for n, k in defined(self.trusted[0]).items() if k == "W"}
        self.assertTrue(any("vector" in n for n in shared_weak), shared_weak)  # the case is really tested
        self.assertEqual(self.problems("honest"), [])

    def test_strong_replacement_of_a_graders_template(self):
        found = self.problems("specialised")
        self.assertEqual(len(found), 1, found)
        self.assertIn("lab::test::record<int>(int), which the graders define", found[0])

    def test_weak_duplicate_of_a_header_function_passes(self):
        self.assertEqual(defined(self.objects["weak_twice"]).get("_ZN3lab5twiceEi"), "W")
        self.assertEqual(self.problems("weak_twice"), [])

    def test_lab_test_is_reserved_even_weakly(self):
        found = self.problems("weak_record")
        self.assertEqual(len(found), 1, found)
        self.assertIn("lab::test::record<int>(int)", found[0])

    def test_runtime_libc_and_cuda_names(self):
        self.assertEqual(self.problems("operator_new"),
                         ["defines operator new(unsigned long): the C++ runtime's, reserved"])
        self.assertEqual(self.problems("malloc"), ["defines malloc, which libc.so.6 defines"])
        self.assertEqual(self.problems("cuda"), ["defines cuMemAlloc_v2: CUDA's, reserved",
                                                 "defines cudaMalloc: CUDA's, reserved"])

    def test_static_parts_of_libc_count(self):
        if "libc_nonshared.a" not in [p.name for p in self.libraries]:
            self.skipTest("this toolchain has no libc_nonshared.a")
        self.assertEqual(self.problems("atexit"), ["defines atexit, which libc_nonshared.a defines"])

    def test_long_lists_are_cut(self):
        found = self.problems("many")
        self.assertEqual(len(found), S.MAX_LINES)
        self.assertEqual(found[-1], f"and {20 - S.MAX_LINES + 1} more")

    def test_code_that_runs_before_the_lab(self):
        self.assertEqual(self.problems("priority"), ["has a .init_array.00101 section: a constructor with a "
                                                     "priority runs before the lab's own start-up code"])
        self.assertEqual(self.problems("preinit"),
                         ["has a .preinit_array section: it runs before the lab's own start-up code"])
        self.assertCountEqual(self.problems("in_init"),
                              ["has a .init section: it runs before the lab's own start-up code",
                               "has a .fini_array.00150 section: a destructor with a priority runs after the lab's "
                               "own shutdown code"])
        found = self.problems("ifunc")
        self.assertEqual(len(found), 1, found)
        self.assertTrue(found[0].startswith("defines picked, an indirect function"), found)

    def test_forbidden_use(self):
        # a lookup is a note for a person, not a refusal (Thrust's host code makes them)
        self.assertEqual(self.problems("dlsym"), [])
        self.assertEqual(self.problems("phdr"), [])
        self.assertEqual(self.problems("entry_point"),
                         ["uses cudaGetDriverEntryPoint: it reaches the CUDA driver past the launch trace"])

    def test_a_static_archives_weak_copies_lose_to_the_students(self):
        # An archive after the student object in the link (Catch2 v3's): its
        # weak header code loses to the student's weak copy, its strong names
        # and a strong replacement of its weak ones are refused.
        folder = Path(self.tmp.name)
        inline = "inline int shared(int x) { return x * 3; }\nint (*keep)(int) = &shared;\n"  # emitted, weak
        compile_object(folder, "member", inline + "int strongInArchive() { return shared(2); }\n")
        subprocess.run(["ar", "rcs", "libarchive.a", "member.o"], cwd=folder, check=True, timeout=60)
        archive = [*self.libraries, folder / "libarchive.a"]
        weak = compile_object(folder, "weak_copy", inline.replace("keep", "mine"))
        strong = compile_object(folder, "strong_copy", "int shared(int x) { return x; }\n")
        again = compile_object(folder, "strong_again", "int strongInArchive() { return 1; }\n")
        self.assertEqual(S.object_problems(weak, self.trusted, archive), [])
        self.assertEqual(S.object_problems(strong, self.trusted, archive),
                         ["defines shared(int) strongly, which libarchive.a defines: it would replace the library's"])
        self.assertEqual(S.object_problems(again, self.trusted, archive),
                         ["defines strongInArchive(), which libarchive.a defines"])

    def test_unreadable_object(self):
        found = S.object_problems(self.garbage, self.trusted, self.libraries)
        self.assertEqual(len(found), 1, found)
        self.assertTrue(found[0].startswith("cannot read the compiled object: "), found)


if __name__ == "__main__":  # make test runs these with the harness's own tests (test_harness.py)
    unittest.main()
