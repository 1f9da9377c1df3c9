"""Tests of the course table and what reads it (tests/course/): the
tables, the documents, the hints, the regions, the release, CI's reports."""

from tests.grading.fixtures import *  # noqa: F401,F403 (the harness's modules and the stand-ins)

# part3_merge_sort/bench_peers.cu as it once shipped (release.py must find Q6 in it).
LEAKED = Path(__file__).resolve().parent / "reference_leaked_bench_peers.cu.txt"


class Tables(unittest.TestCase):
    def test_every_question_has_tests_and_sane_limits(self):
        questions = CT.all_questions(CT.LAB)
        self.assertEqual([q for q in questions], [q.qid for q in course.load(CT.LAB).questions])
        for q in questions.values():
            self.assertTrue(q.tests, q.qid)
            self.assertGreater(q.timeout, 0)
            for name, seconds in q.timeouts.items():  # a test's own limit only ever lengthens its question's
                self.assertGreater(seconds, q.timeout, name)
            self.assertTrue(0 <= q.sanitizer_penalty <= 1)

    def test_the_generated_parts_agree_with_the_course_table(self):
        # make docs writes them; nothing else may state a fact of the table
        self.assertEqual(docs.run(CT.LAB, check=True), [])

    def test_a_changed_measurement_shows_in_the_tables_check_until_make_docs(self):
        # The tables of results (results/tables.py) against CSVs of a lab of its own: the
        # student copy has no results.
        table = course.load(CT.LAB)
        with tempfile.TemporaryDirectory() as tmp:
            lab = Path(tmp)
            (lab / "results/nvidia-h200").mkdir(parents=True)
            header = "study,implementation,n,d,shape,median_ms,keys_per_s,peer,peer_ms,ratio,gpu\n"

            def write_csv(tuned_ms: str) -> None:
                rows = [f"Q6 tuned,tuned reference,16777216,0,,{tuned_ms},1,{peer},{ms},1,GPU\n"
                        for peer, ms in (("Q6 reference", "0.8"), ("cub::DeviceMergeSort", "1.0"),
                                         ("cub::DeviceRadixSort", "0.4"))]
                (lab / "results/nvidia-h200/part3.csv").write_text(header + "".join(rows))

            write_csv("0.5")
            text = "text\n<!-- results:tuned-sort --><!-- /results:tuned-sort -->\nmore\n"
            written, missing = docs.generate("TUNING.md", text, table, lab)  # make docs
            self.assertNotIn("tuned-sort", missing)  # (the course table's blocks are not in this text)
            self.assertIn("| 2^24 | 0.500 | 0.62 | 0.50 | 0.400 | - | - | - |", written)
            self.assertEqual(docs.generate("TUNING.md", written, table, lab)[0], written)  # the check agrees
            write_csv("0.75")  # a new make bench: the check differs until make docs
            rewritten = docs.generate("TUNING.md", written, table, lab)[0]
            self.assertNotEqual(rewritten, written)
            self.assertIn("| 2^24 | 0.750 | 0.94 | 0.75 |", rewritten)
            self.assertIn("tuned-sort", docs.generate("TUNING.md", "text without the table\n", table, lab)[1])

    def test_a_changed_fact_of_the_table_shows_in_the_check_until_make_docs(self):
        with tempfile.TemporaryDirectory() as tmp:
            lab = Path(tmp) / "lab"
            for rel in ["tests/course.ini", *docs.BLOCKS, "tests/course/manifest.txt"]:
                if (CT.LAB / rel).exists():  # (the student copy has no INSTRUCTORS.md nor TUNING.md)
                    (lab / rel).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy(CT.LAB / rel, lab / rel)
            if (CT.LAB / "results").is_dir():  # what TUNING.md's tables of results are made from
                shutil.copytree(CT.LAB / "results", lab / "results", dirs_exist_ok=True)
            table = (lab / "tests/course.ini").read_text()
            before = course.load(CT.LAB)
            q = before.questions_of("part2")[0]  # one more code point for it; the rest stays
            at = table.index(f"[question {q.qid}]")
            old_line = f"points = {course.points(q.points)}\n"
            self.assertIn(old_line, table[at:])
            (lab / "tests/course.ini").write_text(
                table[:at] + table[at:].replace(old_line, f"points = {course.points(q.points + 1)}\n", 1))
            course.load.cache_clear()
            found = docs.run(lab, check=True)
            self.assertTrue(any(p.startswith("handout.md: differs") for p in found), found)
            self.assertEqual(docs.run(lab, check=False), [])  # make docs
            self.assertEqual(docs.run(lab, check=True), [])
            handout = (lab / "handout.md").read_text()
            code, report = before.code_points() + 1, before.report_points()
            part2 = sum(x.points + x.report for x in before.questions_of("part2")) + 1
            self.assertIn(f"### {q.qid} — {q.heading} ({docs.amount(q.points + 1, q.report)})", handout)
            self.assertIn(f"## Part 2 — {before.part('part2').title} ({docs.amount(part2)})", handout)
            self.assertIn(f"| | | total | {course.points(code)} | {course.points(report)} | "
                          f"{course.points(code + report)} |", handout)
            self.assertIn(f"on top of the {course.points(code + report)}.", handout)
            (lab / "notes.md").write_text(f"{q.qid} is worth {course.points(q.points + 1)} points, "
                                          f"of {course.points(code)} in all.\n")
            found = docs.run(lab, check=True)
            self.assertEqual(len([p for p in found if p.startswith("notes.md:1")]), 2, found)
        course.load.cache_clear()

    def test_the_check_finds_each_spelling_of_a_fact(self):
        from tests.course import restated
        table = course.load(CT.LAB)
        code = course.points(table.code_points())
        weights = docs.report_weights(table)  # each question with report points, and its points
        shapes = (docs.LAB / "part3_merge_sort" / "reference.cu").exists()  # (not in the student copy)
        merge = "{} x {}".format(*docs.default_shapes()["merge"]) if shapes else "256 x 17"
        part3 = [q.qid for q in table.questions_of("part3")]
        text = (f"Its report points ({weights}) are a person's.\nAn error costs {docs.penalty(table)} of the points.\n"
                f"The rows add up to the assignment's {code} while every score is 0.\n"
                f"The default merge shape is {merge}.\nPart 3 ({part3[0]}-{part3[-1]}) is one step.\n"
                f"A test took 17.5 s; the [{part3[0]}-{part3[-1]} begins] region.\n")
        found = restated.file_problems("notes.md", text, table, docs)
        lines = {int(f.split(":")[1]) for f in found}  # line 6: a time and a region's name, no fact
        expected = {1, 2, 5} | ({3} if "." in code else set()) | ({4} if shapes else set())
        self.assertEqual(lines, expected, found)
        self.assertEqual(len([f for f in found if f.startswith("notes.md:1:")]),
                         len([q for q in table.questions if q.report]), found)

    def test_a_part_s_question_range_in_code_follows_the_table(self):
        from tests.course import restated
        table = course.load(CT.LAB)
        part3 = [q.qid for q in table.questions_of("part3")]
        shorter = f"Q{int(part3[-1][1:]) - 1}"
        text = (f"// Part 3 ({part3[0]}-{part3[-1]}): merge sort.\n// Part 3 reference ({part3[0]}-{shorter}): stale.\n"
                f"// odd-even sort (X1-X2) and bitonic sort (X3-X4).\n")
        found = restated.file_problems("part3_merge_sort/part3.cuh", text, table, docs)
        self.assertEqual([int(f.split(":")[1]) for f in found], [2], found)
        self.assertIn(f"the table gives part3 {part3[0]}-{part3[-1]}", found[0])

    def test_kernels_of_the_table_are_the_ones_the_graders_allow(self):
        table = course.load(CT.LAB)
        for part in table.parts:
            source = (CT.LAB / "tests" / f"test_{part.name}.cpp").read_text()
            if part.name == "part2":
                source += (CT.LAB / "tests" / "batch_cases.hpp").read_text()
            named = set(re.findall(r'"(\w+_k)"', source))
            kernels = {k for q in table.questions_of(part.name) for k in q.kernels}
            self.assertEqual(named, kernels, f"{part.name}: the kernels its graders allow")

    def test_every_gpu_test_case_says_so_and_large_ones_are_hidden(self):
        for part, _ in CT.PARTS:
            source = (CT.LAB / "tests" / f"test_{part}.cpp").read_text()
            for c in CT.read_test_cases(CT.LAB, part):
                self.assertTrue(c.questions, c.name)
                if c.large:
                    self.assertIn(".", c.tags, f"{c.name}: [large] tests must be hidden ([.])")
                body = source.split(f'TEST_CASE("{c.name}"', 1)[1].split("TEST_CASE(", 1)[0]
                if "gpu" in c.tags:  # the GPU check comes before anything else runs
                    head = "\n".join(body.splitlines()[:4])
                    self.assertTrue("LAB_NEEDS_GPU()" in head or "large::canRun(" in head, c.name)

    def test_the_tables_reject_bad_rows_and_unknown_tests(self):
        table = (CT.LAB / "tests" / "course.ini").read_text()
        with tempfile.TemporaryDirectory() as tmp:
            lab = Path(tmp)
            (lab / "tests").mkdir()
            (lab / "tests" / "test_part1.cpp").write_text('TEST_CASE("one", "[part1][Q1]") {}')
            for bad in (("points = 6\n", "points = six\n"), ("points = 6\n", "points = 0.333\n"),
                        ("time limit = 30\n", "time limit = 0\n"), ("part = part1\n", "part = part9\n"),
                        ("expect = Q3 zero", "expect = Q3 nothing"), ("[part part2]", "[section part2]")):
                if bad[0].startswith("expect") and "\n[fault " not in table:
                    continue  # the student copy's table has no planted faults
                self.assertIn(bad[0], table)
                course.load.cache_clear()
                (lab / "tests" / "course.ini").write_text(table.replace(bad[0], bad[1], 1))
                with self.assertRaises(CT.GradingError, msg=bad[1]):
                    CT.read_points(lab, "part1")
            course.load.cache_clear()
            (lab / "tests" / "course.ini").write_text(table + "[test none]\nweight = 0\n")
            for part in ("part2", "part3", "extras"):
                (lab / "tests" / f"test_{part}.cpp").write_text("")
            self.assertIn("none", CT.unknown_test_rules(lab))
            (lab / "tests" / "test_part1.cpp").write_text('TEST_CASE("a, b", "[part1][Q1]") {}')
            with self.assertRaises(CT.GradingError):
                CT.read_test_cases(lab, "part1")
        course.load.cache_clear()

    def test_every_test_rule_of_the_table_names_a_test_case(self):
        self.assertEqual(CT.unknown_test_rules(CT.LAB), [])

    def test_the_manifest_lists_every_student_file_and_nothing_else(self):
        on_disk = sorted(p.relative_to(CT.LAB).as_posix() for _, folder in CT.PARTS
                         for p in (CT.LAB / folder).glob("student*"))
        self.assertEqual(sorted(MANIFEST), on_disk)


class Unchecked(unittest.TestCase):
    def test_skipped_tests_and_the_large_tier_are_counted_in_points(self):
        cases = CT.read_test_cases(CT.LAB, "part1")
        ran = [c.name for c in cases if not c.large]
        with tempfile.TemporaryDirectory() as tmp:
            report = Path(tmp) / "test_part1.jsonl"
            report.write_text("".join(json.dumps({"event": "end", "test": n, "status": "skipped", "reason": "no GPU"})
                                      + "\n" for n in ran) + "not json\n")
            skipped, seen = U.read_reports([report, Path(tmp) / "missing.jsonl"])
        self.assertEqual(set(skipped), set(ran))
        text = U.summary(skipped, seen)
        q1, q2 = CT.all_questions(CT.LAB)["Q1"], CT.all_questions(CT.LAB)["Q2"]
        large = sum(JUDGE.QuestionResult(q, {}).test_points()[c.name][1] for q in (q1, q2) for c in q.tests if c.large)
        self.assertIn("did not run (no GPU)", text)
        part1 = [q for q in CT.all_questions(CT.LAB).values() if any(c.name in ran for c in q.tests)]
        code_max = sum(q.points for q in part1 if not q.bonus)
        self.assertIn(f"They carry {round(q1.points + q2.points - large, 2):g} of these parts' {code_max:g} code points",
                      text)
        self.assertIn("the [large] tier", text)
        self.assertIn(f"Q1: {sum(not c.large for c in q1.tests)} of its {len(q1.tests)} tests", text)
        self.assertEqual(U.summary({}, set()), "")


class Hints(unittest.TestCase):
    """hints/: each question's second hint, shown only when asked (make hint)."""

    def show(self, *argv, answer=""):
        return subprocess.run([sys.executable, str(CT.LAB / "hints" / "show.py"), *argv], input=answer,
                              capture_output=True, text=True)

    def test_every_question_has_one_and_none_is_code(self):
        for qid in CT.all_questions(CT.LAB):
            text = (CT.LAB / "hints" / f"{qid}.md").read_text()
            self.assertTrue(text.startswith(f"# {qid}, "), qid)
            self.assertNotIn("```", text, f"{qid}'s hint holds a code block")
            for span in re.findall(r"`([^`]*)`", text):  # names (a file's path too), never formulas
                self.assertIsNone(re.search(r"[-+*%^=]|\s/|/\s", span), f"{qid}'s hint: `{span}`")
        handout = (CT.LAB / "handout.md").read_text()
        self.assertNotIn("Hint 2: the idea", handout)
        self.assertEqual(handout.count("make hint Q="), len(CT.all_questions(CT.LAB)))

    def test_a_hint_is_shown_only_when_asked(self):
        hint = (CT.LAB / "hints" / "Q3.md").read_text()
        for answer in ("", "n\n"):
            r = self.show("Q3", answer=answer)
            self.assertEqual(r.returncode, 1)
            self.assertNotIn(hint.splitlines()[2], r.stdout)
        self.assertIn(hint, self.show("3", answer="y\n").stdout)
        self.assertEqual(self.show("x3", "--yes").stdout, (CT.LAB / "hints" / "X3.md").read_text())
        self.assertEqual(self.show("Q9").returncode, 2)


class DocumentsCheck(unittest.TestCase):
    def test_outside_a_repository_builds_and_outputs_are_no_part_of_the_lab(self):
        from tests.course import restated
        with tempfile.TemporaryDirectory() as tmp:
            lab = Path(tmp)
            for rel in ("handout.md", "grade-results/results.json", "check-results/report.txt", "build/x.o", "part1"):
                (lab / rel).parent.mkdir(parents=True, exist_ok=True)
                (lab / rel).write_text("text")
            self.assertEqual(restated.lab_files(lab), ["handout.md"])


class EmulatedOnlyTests(unittest.TestCase):
    """The tests built only for the emulator (#ifdef LAB_EMULATED) carry
    [emulated], and a GPU's grading never lists them (course_table.py)."""

    def test_tagged_exactly_where_compiled_for_the_emulator_alone(self):
        for part, _ in CT.PARTS:
            inside, tagged, guarded = False, set(), set()
            for line in (CT.LAB / "tests" / f"test_{part}.cpp").read_text().splitlines():
                if line.startswith("#ifdef LAB_EMULATED"):
                    inside = True
                elif line.startswith("#endif"):
                    inside = False
                for name, tags in CT.TEST_CASE_RE.findall(line):
                    if "[emulated]" in tags:
                        tagged.add(name)
                    if inside:
                        guarded.add(name)
            self.assertEqual(tagged, guarded, part)

    def test_a_gpu_grading_leaves_them_out(self):
        only = CT.emulated_names(CT.LAB)
        self.assertEqual(len(only), 2)
        gpu = {n for q in CT.all_questions(CT.LAB).values() for n in q.weights}
        emulated = {n for q in CT.all_questions(CT.LAB, emulated=True).values() for n in q.weights}
        self.assertFalse(only & gpu)
        self.assertEqual(emulated - gpu, only)


class Regions(unittest.TestCase):
    @unittest.skipUnless((CT.LAB / "part1_merge_path" / "reference.cu").exists(), "a student copy has no reference")
    def test_skeletons_and_references_differ_only_inside_question_regions(self):
        from tests.course import regions

        self.assertEqual(regions.problems(CT.LAB), [])

    def test_unbalanced_markers_are_reported(self):
        from tests.course import regions

        with self.assertRaises(ValueError):
            regions.skeleton_view("x\n// [Q1 begins]\ny\n")
        with self.assertRaises(ValueError):
            regions.skeleton_view("// [Q1 begins]\n// [Q2 ends]\n")
        self.assertEqual(regions.skeleton_view("// head\nint a;\n  // [Q5 begins] --\nbody\n  // [Q5 ends]\n"),
                         ["int a;", "[Q5]"])


@unittest.skipUnless(R, "make release is the instructors' (release.py is not in a student copy)")
class Release(unittest.TestCase):
    def test_instructor_files_and_text_stay_out(self):
        self.assertFalse(R.student_file("part1_merge_path/reference.cu"))
        self.assertFalse(R.student_file("part1_merge_path/reference_search.cuh"))
        self.assertFalse(R.student_file("tests/redteam/faults.py"))
        self.assertFalse(R.student_file(".ci/run"))
        self.assertTrue(R.student_file("part1_merge_path/student.cu"))
        self.assertTrue(R.student_file("tests/grading/grade.py"))
        text = "keep\n<!-- instructor-only -->\nsecret\n<!-- /instructor-only -->\nkeep too\n"
        self.assertEqual(R.INSTRUCTOR_TEXT.sub("", text), "keep\nkeep too\n")

    def test_a_repository_ships_only_what_git_tracks(self):
        with tempfile.TemporaryDirectory() as tmp:
            lab = Path(tmp)
            (lab / "part1_merge_path").mkdir()
            (lab / "part1_merge_path" / "student.cu").write_text("// tracked\n")
            (lab / "handout.md").write_text("tracked\n")
            (lab / ".gitignore").write_text("build/\n")
            self.assertEqual(R.lab_files(lab), [".gitignore", "handout.md", "part1_merge_path/student.cu"])  # no repository: all
            quiet = {"cwd": lab, "check": True, "capture_output": True}
            subprocess.run(["git", "init", "-q"], **quiet)
            subprocess.run(["git", "add", "."], **quiet)
            (lab / "part1_merge_path" / "my_solution.cu").write_text("// a scratch file\n")
            (lab / "build").mkdir()
            (lab / "build" / "x.o").write_text("")
            with contextlib.redirect_stdout(io.StringIO()) as said:
                files = R.lab_files(lab)
            self.assertEqual(files, [".gitignore", "handout.md", "part1_merge_path/student.cu"])
            self.assertIn("left out 1 file(s) git does not track: part1_merge_path/my_solution.cu", said.getvalue())

    def test_the_student_copy_gives_no_answer_away(self):
        if not (CT.LAB / "part1_merge_path" / "reference.cu").exists():
            self.skipTest("this is a student copy already (make release checks it for leaks)")
        with tempfile.TemporaryDirectory() as tmp:
            target = R.write_release(CT.LAB, Path(tmp))
            self.assertEqual(R.leaks(target, CT.LAB), [])  # the check by shape included
            self.assertFalse((target / "TUNING.md").exists())
            self.assertFalse(any((target / "results").glob("*/*")))
            self.assertTrue((target / "results" / "bench.py").exists())

    def test_planted_answers_are_found(self):
        with tempfile.TemporaryDirectory() as tmp:
            lab = Path(tmp)
            (lab / "results" / "gpu").mkdir(parents=True)
            (lab / "results" / "gpu" / "q7.png").write_bytes(b"png")
            (lab / "a.cpp").write_text("int s(const int* B, int k, int lo, int hi) {\n"
                                       "  while (lo < hi) { int mid = lo + (hi - lo) / 2; if (B[k - 1 - mid] < 3) hi = mid; }\n"
                                       "  return lo; }\n")
            (lab / "b.cu").write_text("int p(int i, int size) { return i ^ (size - 1); }\n")
            (lab / "c.cpp").write_text('// lo + (hi - lo) / 2 and B[k - 1 - i] in a comment\n'
                                       'const char* t = "i ^ (size - 1)";\n')
            found = R.leaks(lab)
            self.assertEqual(len(found), 3, found)
            self.assertTrue(any(f.startswith("a.cpp: a diagonal search") for f in found))
            self.assertTrue(any(f.startswith("b.cu: the bitonic network") for f in found))
        self.assertFalse(R.student_file("TUNING.md"))
        self.assertFalse(R.student_file("results/nvidia-h200/q7.png"))

    @unittest.skipUnless(LEAKED.exists(), "a student copy has no reference")
    def test_the_naive_merge_sort_that_once_shipped_is_found_by_its_shape(self):
        # part3_merge_sort/bench_peers.cu as it shipped with the naive GPU merges:
        # the searches by formula missed it; its merge sort's pass repeats three
        # statements of Q6's region (SortPass::mergeOf) in a row.
        old = LEAKED.read_text()
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp)
            (copy / "part3_merge_sort").mkdir()
            (copy / "part3_merge_sort" / "bench_peers.cu").write_text(old)
            self.assertEqual(R.leaks(copy), [])
            found = R.leaks(copy, CT.LAB)
        line = 1 + old[:old.index("const long long start")].count("\n")
        self.assertEqual(len(found), 1, found)
        self.assertTrue(found[0].startswith(f"part3_merge_sort/bench_peers.cu:{line}-{line + 1}: 3 statements"), found)
        self.assertIn("question region Q6 of part3_merge_sort/reference.cu", found[0])

    def test_a_region_renamed_and_reformatted_is_found_and_two_statements_are_not(self):
        # A made-up region (no answer of the lab's), in a made-up instructor file.
        region = ("int f(float* w, int base, int step, int lane, int total, float scale) {\n"
                  "    // [Q9 begins] ---\n"
                  "    const int left = base + step * (2 * lane);  // the pair's first\n"
                  "    const int right = min(left + step, total - 1);\n"
                  "    w[left] = w[left] * scale + w[right] * (1 - scale);\n"
                  "    return left;\n"
                  "    // [Q9 ends] ---\n"
                  "}\n")
        shipped = {
            # one line, other names and types, a comment, two declarations in one
            "renamed.cu": "#include <x>\n\nvoid g() {\n  long a = b + c * (2 * d) /* x */, e = std::min(a + c, n - 1); "
                          "v[a] = v[a]*k + v[e]*(1 - k); }\n",
            # in a Python string, as a test's snippet would be
            "snippet.py": 'CODE = """\nint l = b + s * (2 * x);\nint r = min(l + s, t - 1);\n"""\n'
                          'MORE = "w[l] = w[l] * k + w[r] * (1 - k);\\n"\n',
            # two of the three statements, then others
            "two.cu": "int a = b + c * (2 * d);\nint e = min(a + c, n - 1);\nw[e] = 0;\nreturn a * a + e * e;\n",
        }
        with tempfile.TemporaryDirectory() as tmp:
            lab, copy = Path(tmp) / "lab", Path(tmp) / "copy"
            (lab / "p").mkdir(parents=True)
            copy.mkdir()
            (lab / "p" / "reference_x.cu").write_text(region)
            for name, text in shipped.items():
                (copy / name).write_text(text)
            found = R.shape_leaks(copy, lab)
        self.assertEqual(len(found), 2, found)
        self.assertTrue(found[0].startswith("renamed.cu:4-4: 3 statements in a row shaped as in question region Q9 "
                                            "of p/reference_x.cu (its lines 3-5)"), found)
        self.assertTrue(found[1].startswith("snippet.py:2-5: 3 statements"), found)


# ---------------------------------------------------------------- Gradescope


@unittest.skipUnless(CI_SUMMARY.exists(), "the lab's CI (.ci/) is not in the student copy")
class CiSummary(unittest.TestCase):
    """CI reads the last line of .ci/run as the count of tests it ran: a made-up
    run's logs go through .ci/summary.py as .ci/run sends them, and no line but
    the last may read as a count."""
    LOOKS_LIKE_A_COUNT = re.compile(r"^(\w+: )?[0-9]+ passed, [0-9]+ failed")

    def summary(self, *args):
        r = subprocess.run([sys.executable, str(CI_SUMMARY), *map(str, args)], capture_output=True, text=True,
                           env={"PATH": os.environ["PATH"]})
        return r.returncode, r.stdout.splitlines()

    def test_only_the_last_line_reads_as_a_count_and_it_adds_up_the_programs(self):
        with tempfile.TemporaryDirectory() as tmp:
            tests, emulated, broken = Path(tmp) / "make-test.log", Path(tmp) / "emulated.log", Path(tmp) / "b.log"
            tests.write_text("==> build/test_common\nAll tests passed\n12 passed, 0 failed, 1 skipped\n"
                             "==> build/test_tuned\nNo tests ran\n0 passed, 0 failed\n"
                             "==> the grading harness's own tests\n121 passed, 1 failed, 1 skipped\n")
            emulated.write_text("test_tuned: 0 passed, 0 failed\n7 passed, 2 failed\n")
            broken.write_text("".join(f"line {i}\n" for i in range(100)) +
                              "3 passed, 1 failed\nworkflow: 0 passed, 0 failed\nmake: *** Error 2\n")
            printed = []
            for name, rc, log in (("make-test", 0, tests), ("emulated", 0, emulated), ("release", 2, broken)):
                status, lines = self.summary("step", name, rc, 75, log, "what the step checks")
                self.assertEqual(status, 0)
                printed += lines
            status, lines = self.summary("total", tests, emulated)
            printed += lines
        self.assertEqual(status, 0)
        self.assertIn("CI   1m15s  release: what the step checks: FAILED (exit 2)", printed)
        self.assertIn("  | make: *** Error 2", printed)  # a failed step's tail is shown ...
        self.assertNotIn("  | line 5", printed)  # ... its last lines only
        counts = [line for line in printed[:-1] if self.LOOKS_LIKE_A_COUNT.match(line)]
        self.assertEqual(counts, [], "a line before the last reads as a count of tests")
        self.assertEqual(printed[-1], "tests: 140 passed, 3 failed, 2 skipped")
        self.assertEqual(len([line for line in printed if re.search(r"[0-9]+ passed, [0-9]+ failed", line)]), 1)

    def test_logs_without_a_count_say_so_in_words_and_fail(self):
        with tempfile.TemporaryDirectory() as tmp:
            log = Path(tmp) / "make-test.log"
            log.write_text("make: *** [Makefile:363: test] Error 2\n")
            status, lines = self.summary("total", log)
        self.assertEqual(status, 1)
        self.assertEqual(len(lines), 1)
        self.assertIn("no test ran", lines[0])
        self.assertNotRegex(lines[0], r"[0-9]+ passed")
