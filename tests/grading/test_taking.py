"""The harness's tests of taking a submission (harness/submission.py,
building.py): its files, archives, includes, the hand-in check."""

from tests.grading.fixtures import *  # noqa: F401,F403 (the harness's modules and the stand-ins)


class Submissions(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def test_a_folder_with_one_top_folder_gives_the_manifest_files(self):
        for rel in MANIFEST:
            (self.dir / "lab" / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.dir / "lab" / rel).write_text("// " + rel)
        (self.dir / "lab" / "Makefile").write_text("all:\n\techo pwned\n")
        (self.dir / "lab" / "tests").mkdir()
        (self.dir / "lab" / "tests" / "test_part1.cpp").write_text("// forged grader")
        sub = SUB.collect_submission(self.dir, MANIFEST)
        self.assertEqual(sorted(sub.files), sorted(MANIFEST))
        self.assertEqual(sub.files[MANIFEST[0]], b"// " + MANIFEST[0].encode())
        self.assertTrue(any("ignored" in n and "Makefile" in n for n in sub.notes))

    def test_the_report_and_the_figures_it_shows_are_taken(self):
        top = self.dir / "lab"
        (top / "figs").mkdir(parents=True)
        (top / "results").mkdir()
        (top / "report.md").write_text("# Report\n![Q2](figs/q2.png)\n<img src='q7.svg'>\n![x](../secret.png)\n"
                                       "![web](https://example.org/a.png)\n")
        (top / "figs" / "q2.png").write_bytes(b"\x89PNG")
        (top / "q7.svg").write_text("<svg/>")
        (top / "results" / "q7.png").write_bytes(b"\x89PNG")  # not shown by the report: not taken
        (self.dir / "secret.png").write_bytes(b"no")
        sub = SUB.collect_submission(self.dir, MANIFEST, ["report.pdf", "report.md"])
        self.assertEqual(sorted(sub.documents), ["figs/q2.png", "q7.svg", "report.md"])
        self.assertFalse(any("ignored" in n and "report.md" in n for n in sub.notes))
        out = self.dir / "out"
        self.assertEqual(OUT.write_documents(out, sub.documents), "report.md and 2 figures")
        self.assertEqual((out / "report" / "figs" / "q2.png").read_bytes(), b"\x89PNG")

    def test_a_pdf_report_comes_first_and_none_is_noted(self):
        sub = SUB.collect_submission(self.dir, MANIFEST, ["report.pdf", "report.md"])
        self.assertEqual(sub.documents, {})
        self.assertTrue(any(n.startswith("no report found") for n in sub.notes))
        (self.dir / "report.md").write_text("md")
        (self.dir / "report.pdf").write_bytes(b"%PDF")
        sub = SUB.collect_submission(self.dir, MANIFEST, ["report.pdf", "report.md"])
        self.assertEqual(list(sub.documents), ["report.pdf"])
        self.assertEqual(OUT.write_documents(self.dir / "out", sub.documents), "report.pdf")
        self.assertEqual(OUT.write_documents(self.dir / "out", {}), "")
        self.assertFalse((self.dir / "out" / "report").exists())

    def test_suspicious_calls_are_listed_for_a_person(self):
        (self.dir / "part2_batch").mkdir()
        (self.dir / "part2_batch" / "student.cu").write_text(
            "// exit( in a comment is fine\nvoid f() {\n    if (n > 9) exit(0);\n    thrust::sort(p, p + n);\n}\n")
        notes = SUB.collect_submission(self.dir, MANIFEST).notes
        self.assertIn("for a person to look at: part2_batch/student.cu:3 uses exit", notes)
        self.assertIn("for a person to look at: part2_batch/student.cu:4 uses thrust::", notes)
        self.assertFalse(any(":1 uses" in n for n in notes))

    def test_files_handed_in_one_by_one_are_taken_by_a_unique_name_and_a_zip_is_asked_for(self):
        # Gradescope's upload of single files puts each at the top, without its folder.
        (self.dir / "student_search.cuh").write_text("search")
        (self.dir / "student.cu").write_text("which part?")
        sub = SUB.collect_submission(self.dir, MANIFEST)
        self.assertEqual(sub.files, {"part1_merge_path/student_search.cuh": b"search"})
        self.assertTrue(any("by its name alone" in n for n in sub.notes), sub.notes)
        self.assertIn("missing: part2_batch/student.cu (the untouched skeleton was graded in its place, "
                      "so Q3 and Q4 score 0)", sub.notes)
        loose = [n for n in sub.notes if n.startswith("student.cu: handed in without its part's folder")]
        self.assertEqual(len(loose), 1, sub.notes)
        self.assertIn("zip hand-in.zip part1_merge_path/student.cu", loose[0])
        self.assertFalse(any(n.startswith("ignored") and "student_search" in n for n in sub.notes))

    def test_missing_files_are_noted_and_the_skeleton_stands_in(self):
        (self.dir / "part2_batch").mkdir()
        (self.dir / "part2_batch" / "student.cu").write_text("x")
        sub = SUB.collect_submission(self.dir, MANIFEST)
        self.assertEqual(list(sub.files), ["part2_batch/student.cu"])
        self.assertEqual(sum("missing" in n for n in sub.notes), len(MANIFEST) - 1)

    def test_zip_members_outside_the_archive_and_links_are_refused(self):
        path = self.dir / "s.zip"
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("../part1_merge_path/student.cu", "escape")
            link = zipfile.ZipInfo("x/part2_batch/student.cu")
            link.external_attr = (stat.S_IFLNK | 0o777) << 16
            z.writestr(link, "/etc/passwd")
            z.writestr("x/part3_merge_sort/student.cu", "ok")
        sub = SUB.collect_submission(path, MANIFEST)
        self.assertEqual(sub.files, {"part3_merge_sort/student.cu": b"ok"})
        self.assertEqual(sum("refused" in n for n in sub.notes), 2)

    def test_tar_links_are_refused_and_regular_files_taken(self):
        path = self.dir / "s.tar.gz"
        with tarfile.open(path, "w:gz") as t:
            link = tarfile.TarInfo("lab/part1_merge_path/student.cu")
            link.type = tarfile.SYMTYPE
            link.linkname = "/etc/passwd"
            t.addfile(link)
            data = b"int x;"
            info = tarfile.TarInfo("lab/part2_batch/student.cu")
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
        sub = SUB.collect_submission(path, MANIFEST)
        self.assertEqual(sub.files, {"part2_batch/student.cu": b"int x;"})
        self.assertTrue(any("refused" in n for n in sub.notes))

    def test_an_unreadable_archive_is_a_note_not_a_crash(self):
        path = self.dir / "broken.zip"
        path.write_bytes(b"not a zip")
        sub = SUB.collect_submission(path, MANIFEST)
        self.assertEqual(sub.files, {})
        self.assertTrue(any("could not read the archive" in n for n in sub.notes))

    def test_an_oversized_file_is_refused(self):
        (self.dir / "part2_batch").mkdir()
        (self.dir / "part2_batch" / "student.cu").write_bytes(b"x" * (SUB.MAX_FILE_BYTES + 1))
        sub = SUB.collect_submission(self.dir, MANIFEST)
        self.assertNotIn("part2_batch/student.cu", sub.files)

    def test_the_pristine_copy_has_no_reference_files_or_outputs(self):
        out = CT.LAB / "grade-results-test-copy"
        dest = self.dir / "copy"
        try:
            out.mkdir(exist_ok=True)
            (out / "x").write_text("output")
            BUILD.copy_lab(CT.LAB, dest, exclude=(out,))
        finally:
            (out / "x").unlink()
            out.rmdir()
        self.assertEqual(list(dest.rglob("reference*")), [])
        self.assertFalse((dest / out.name).exists())
        self.assertFalse((dest / "build").exists())
        self.assertTrue((dest / "tests" / "course.ini").exists())


class BaseLock(unittest.TestCase):
    def test_two_gradings_take_turns_at_a_stale_base_and_a_held_lock_is_a_bounded_wait(self):
        with tempfile.TemporaryDirectory() as tmp:
            base, order = Path(tmp) / "base", []

            def builder(n):
                with BUILD.base_lock(base):
                    order.append(("in", n))
                    time.sleep(0.3)
                    order.append(("out", n))

            threads = [threading.Thread(target=builder, args=(n,)) for n in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            self.assertEqual([kind for kind, _ in order], ["in", "out", "in", "out"])
            # A lock another process keeps (a test of an earlier grading, say) is waited for, not forever.
            holder = subprocess.Popen([sys.executable, "-c", "import fcntl, sys, time; f = open(sys.argv[1]); "
                                       "fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)",
                                       str(Path(tmp) / ".base.lock")], stdout=subprocess.PIPE, text=True)
            try:
                self.assertEqual(holder.stdout.readline().strip(), "held")
                with mock.patch.object(BUILD, "BASE_BUILD_TIMEOUT", -58):
                    with self.assertRaisesRegex(CT.GradingError, "stayed locked"):
                        with BUILD.base_lock(base):
                            pass
            finally:
                holder.kill()
                holder.wait()


class Archives(unittest.TestCase):
    def test_an_archive_is_looked_at_up_to_a_bound_of_members(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "many.tar"
            with tarfile.open(path, "w") as tar:
                for i in range(SUB.ARCHIVE_MEMBERS + 5):
                    data = b"x"
                    info = tarfile.TarInfo(f"junk/{i}.txt")
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
            notes: list[str] = []
            readers = SUB._archive_readers(path, notes)
        self.assertEqual(len(readers), SUB.ARCHIVE_MEMBERS)
        self.assertTrue(any("the rest were not looked at" in n for n in notes), notes)


class CheckSubmission(unittest.TestCase):
    def test_a_hand_in_is_checked_with_the_emulated_feedback_and_never_graded(self):
        from tests.grading.harness.schedulers import gradescope as GS
        seen = {}

        def feedback(submission, out, base, opts, student, why, started):
            seen.update(submission=submission, base=base, student=student, why=why)
            return {}

        with tempfile.TemporaryDirectory() as tmp:
            hand_in = Path(tmp) / "alice.zip"
            hand_in.write_bytes(b"")
            out = Path(tmp) / "check-results"
            with mock.patch.object(GS, "prepare_emulated_base", lambda base, parts, exclude, log: base), \
                    mock.patch.object(GS, "feedback", feedback), \
                    mock.patch.object(GS, "prepare_base", side_effect=AssertionError("a GPU build")):
                status = G.main(["check-submission", "--submission", str(hand_in), "--out", str(out)])
            self.assertEqual(status, 0)
            self.assertEqual(seen["submission"], hand_in.resolve())
            self.assertEqual(seen["base"], Path(tmp).resolve() / ".check-results-base")
            self.assertEqual(seen["student"], "alice.zip")
            self.assertIn("a hand-in check", seen["why"])
            self.assertEqual(G.main(["check-submission", "--submission", str(Path(tmp) / "missing")]), 2)


class Includes(unittest.TestCase):
    def test_includes_from_outside_the_copy_or_of_its_tests_are_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp) / "work"
            (work / "part1_merge_path").mkdir(parents=True)
            dep = work / "student.d"
            dep.write_text("build/student/part1_merge_path/student.o : part1_merge_path/student.cu \\\n"
                           "  part1_merge_path/part1.cuh /usr/include/stdio.h \\\n"
                           "  ../../part1_merge_path/reference.cu /etc/passwd tests/oracle/oracle_part1.cpp\n"
                           "part1_merge_path/part1.cuh:\n")
            got = BUILD.include_problems(dep, work, [Path("/usr/include")])
        self.assertEqual(got, ["../../part1_merge_path/reference.cu", "/etc/passwd", "tests/oracle/oracle_part1.cpp"])

    def test_a_missing_dependency_file_is_a_problem(self):
        self.assertTrue(BUILD.include_problems(Path("/nonexistent.d"), Path("/tmp"), []))

    def test_the_headers_of_the_toolkit_in_use_are_system_headers_wherever_it_lies(self):
        from unittest import mock
        with tempfile.TemporaryDirectory() as tmp:
            kit = fake_toolkit(Path(tmp))
            work = Path(tmp) / "work"
            work.mkdir()
            dep = work / "student.d"
            dep.write_text(f"student.o : student.cu {kit}/bin/../include/cuda_runtime.h {tmp}/elsewhere.h\n")
            with mock.patch.dict(os.environ, {"NVCC": str(kit / "bin" / "nvcc")}):
                roots = BUILD.system_include_roots()
            self.assertIn(kit.resolve(), roots)
            self.assertEqual(BUILD.include_problems(dep, work, roots), [f"{tmp}/elsewhere.h"])

    def test_thrust_and_cub_headers_are_found_however_the_source_spells_them(self):
        # CUB's BlockMergeSort behind a namespace alias: the source never says
        # cub::, the dependency file names the header all the same.
        with tempfile.TemporaryDirectory() as tmp:
            dep = Path(tmp) / "student.d"
            dep.write_text("build/student/part3_merge_sort/student.o : part3_merge_sort/student.cu \\\n"
                           "  /usr/local/cuda/bin/../targets/x86_64-linux/include/cccl/cub/block/block_merge_sort.cuh \\\n"
                           "  /usr/local/cuda/include/cuda_runtime.h part3_merge_sort/part3.cuh \\\n"
                           "  /usr/local/cuda/include/thrust/sort.h part3_merge_sort/my_cub_notes.cuh\n")
            got = BUILD.library_includes(dep)
            self.assertEqual([Path(d).name for d in got], ["block_merge_sort.cuh", "sort.h"])
            dep.write_text("student.o : student.cu /usr/local/cuda/include/cuda_runtime.h part3_merge_sort/part3.cuh\n")
            self.assertEqual(BUILD.library_includes(dep), [])
