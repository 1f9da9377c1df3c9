"""The harness's tests of outputs and schedulers (harness/outputs.py,
gradebook.py, timing.py, options.py, schedulers/): records, scores, Gradescope,
the command line."""

from tests.grading.fixtures import *  # noqa: F401,F403 (the harness's modules and the stand-ins)


class Records(unittest.TestCase):
    def test_the_gradebook_comes_from_the_harness_records_not_the_students_folders(self):
        with tempfile.TemporaryDirectory() as tmp:
            grades = Path(tmp)
            q = list(CT.all_questions(CT.LAB).values())
            records = BOOK.Records(grades)
            results = [JUDGE.QuestionResult(x, {}) for x in q]
            records.add({"student": "alice", "score": 0, "gradebook": OUT.gradebook_line("alice", results, 1, [])})
            (grades / "alice").mkdir()
            (grades / "alice" / "gradebook.csv").write_text(f"header\n\"alice\",{TOTAL},{TOTAL}\n")  # a forgery
            BOOK.write_gradebook(grades, [("alice", None), ("bob", None)], BOOK.Records(grades).records)
            book = (grades / "gradebook.csv").read_text().splitlines()
        self.assertTrue(book[1].startswith(f'"alice",0,{TOTAL},'), book[1])
        self.assertIn("not graded", book[2])

    def test_slurm_tasks_get_grade_alls_options_less_the_submitting_hosts(self):
        argv = ["grade-all", "--submissions", "class", "--out", "grades", "--regrade", "bob", "--timeout", "9",
                "--scheduler", "slurm", "--slurm-gres=", "--slurm-partition", "gpu", "--seed", "7",
                "--arch", "sm_80", "--base", "b", "--sanitize", "0"]
        self.assertEqual(SLURM.task_argv(argv), ["--timeout", "9", "--arch", "sm_80", "--sanitize", "0"])

    def test_slurm_task_records_are_gathered_and_refusals_graded_again(self):
        with tempfile.TemporaryDirectory() as tmp:
            grades = Path(tmp)
            tasks = grades / SLURM.TASKS_DIR
            tasks.mkdir(parents=True)
            results = [JUDGE.QuestionResult(x, {}) for x in CT.all_questions(CT.LAB).values()]
            (tasks / "alice.json").write_text(json.dumps(
                {"student": "alice", "score": 0, "gradebook": OUT.gradebook_line("alice", results, 1, [])}))
            (tasks / "bob.json").write_text(json.dumps(
                {"student": "bob", "score": 0, "refused": "no GPU", "gradebook": OUT.gradebook_line("bob", results, 1, [])}))
            (tasks / "broken.json").write_text("{")
            records = BOOK.Records(grades)
            refused = SLURM.gather_tasks(grades, records)
            self.assertEqual(list(records.records), ["alice"])
            self.assertEqual(list(refused), ["bob"])
            self.assertEqual(list(BOOK.Records(grades).records), ["alice"])  # in records.jsonl now
            self.assertFalse((tasks / "alice.json").exists())

    def test_results_say_incomplete_until_the_verdict_is_written(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            OUT.write_atomically(out / "results.json", json.dumps(OUT.incomplete_json("grading did not finish")))
            self.assertIn("INCOMPLETE", json.loads((out / "results.json").read_text())["output"])
            OUT.write_outputs(out, "alice", [JUDGE.QuestionResult(q, {}) for q in CT.all_questions(CT.LAB).values()], [], 3)
            self.assertNotIn("INCOMPLETE", json.loads((out / "results.json").read_text())["output"])
            self.assertEqual(sorted(p.name for p in out.iterdir()),
                             ["gradebook.csv", "report.txt", "results.json", "summary.json"])


class Options(unittest.TestCase):
    def parse(self, *argv):
        return G.main(["grade", *argv])

    def test_bad_options_are_refused_with_status_2(self):
        self.assertEqual(self.parse("--timeout", "-1"), 2)
        self.assertEqual(self.parse("--timeout", "soon"), 2)
        self.assertEqual(self.parse("--sanitize", "yes"), 2)
        self.assertEqual(self.parse("--seed", "-3"), 2)
        self.assertEqual(self.parse("--parts", "part9"), 2)
        self.assertEqual(self.parse("--timing", "fast"), 2)
        self.assertEqual(self.parse("--submission", "/nonexistent/submission"), 2)
        self.assertEqual(G.main(["grade-all", "--submissions", "/nonexistent"]), 2)


class Speed(unittest.TestCase):
    HEADER = "study,implementation,n,d,shape,median_ms,keys_per_s,peer,peer_ms,ratio,gpu\n"

    def csv(self, folder: Path, name: str, rows: str) -> Path:
        path = folder / name
        path.write_text(self.HEADER + textwrap.dedent(rows))
        return path

    def test_ratios_are_geometric_means_over_rows_both_measured(self):
        with tempfile.TemporaryDirectory() as tmp:
            ref = TIMING.read_timing_csv(self.csv(Path(tmp), "ref.csv", """\
                copy,cudaMemcpy,1024,0,,0.5,1,,,,GPU X
                Q5,reference,1024,0,,1.0,1,thrust::merge,2.0,0.5,GPU X
                Q5,reference,1024,0,,1.0,1,rank-naive,3.0,0.33,GPU X
                Q5,reference,4096,0,,2.0,1,thrust::merge,2.0,1.0,GPU X
                Q7,reference,4096,0,256x17,1.0,1,,,,GPU X
                """))
            student = TIMING.read_timing_csv(self.csv(Path(tmp), "student.csv", """\
                Q5,student,1024,0,,4.0,1,thrust::merge,2.0,2.0,GPU X
                Q5,student,4096,0,,2.0,1,thrust::merge,2.0,1.0,GPU X
                Q7,student,4096,0,128x4,9.0,1,,,,GPU X
                Q9,student,1,0,,nan,1,,,,GPU X
                """))
        self.assertEqual(len(ref), 3)  # one time per row key; the copy row is no study
        ratios = TIMING.speed_ratios(student, ref)
        self.assertEqual(set(ratios), {"Q5"})  # Q7's shapes differ: nothing to compare
        self.assertAlmostEqual(ratios["Q5"][0], 2.0)  # (4 / 1 * 2 / 2) ** (1 / 2)
        self.assertEqual(ratios["Q5"][1], 2)
        note = TIMING.speed_note(ratios, "GPU X", ["./part3 crashed"])
        self.assertIn("Q5 2.00", note)
        self.assertIn("no points", note)
        self.assertIn("not timed: ./part3 crashed", note)

    def test_a_missing_or_garbled_csv_times_nothing(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.assertEqual(TIMING.read_timing_csv(Path(tmp) / "none.csv"), {})
            bad = Path(tmp) / "bad.csv"
            bad.write_bytes(b"\xff\xfe garbage")
            self.assertEqual(TIMING.read_timing_csv(bad), {})
        self.assertIn("nothing comparable", TIMING.speed_note({}, "GPU X", []))


class AutograderRouting(unittest.TestCase):
    """cmd_autograder's choice, without a GPU: where one is listed it grades
    through make grade's own path (grade_probed); where the autograder
    fails, the student still gets a results.json that says so."""

    def run_autograder(self, root: Path, **patches) -> int:
        with mock.patch.multiple(GS, say=mock.DEFAULT, **patches):
            return G.main(["autograder", "--root", str(root)])

    def layout(self, tmp: str) -> Path:
        root = Path(tmp)
        (root / "submission").mkdir()
        (root / "submission" / "report.md").write_text("# my report\n")
        return root

    def test_with_a_gpu_it_grades_as_make_grade_does(self):
        seen = {}

        def grade_probed(submission, out, base, opts, student, gpu, gpu_env):
            seen.update(submission=submission, base=base, gpu=gpu, gpu_env=gpu_env)
            results = [JUDGE.QuestionResult(q, {}) for q in CT.all_questions(CT.LAB).values()]
            OUT.write_outputs(out, student, results, [], opts.seed, report=OUT.take_report(submission, out), seconds=3)
            return 0

        with tempfile.TemporaryDirectory() as tmp:
            root = self.layout(tmp)
            real_which = shutil.which

            def which(tool, *args, **kwargs):  # a CUDA toolkit for the autograder's own question only
                return "/usr/local/cuda/bin/nvcc" if tool == "nvcc" and not args and not kwargs \
                    else real_which(tool, *args, **kwargs)

            with mock.patch.object(shutil, "which", side_effect=which), \
                    mock.patch.object(OPT.Options, "unsandboxed", return_value=""):
                status = self.run_autograder(root, gpu_listed=lambda: (True, "GPU 0: NVIDIA H200"),
                                             prepare_base=lambda base, opts, log: base,
                                             probe_held=lambda base, env, opts: (True, "GPU: NVIDIA H200", 1),
                                             visible_gpus=lambda: [("0", "GPU-autograder-test")],
                                             grade_probed=grade_probed)
            data = json.loads((root / "results" / "results.json").read_text())
            self.assertTrue((root / "results" / "lab" / "report" / "report.md").is_file())
        self.assertEqual(status, 0)
        self.assertEqual((seen["submission"], seen["base"], seen["gpu"]),
                         (root / "submission", root / "lab-base", "GPU: NVIDIA H200"))
        self.assertEqual(seen["gpu_env"], {"CUDA_VISIBLE_DEVICES": "0"})  # the GPU it holds (lease)
        gradescope_fields(self, data)
        self.assertNotIn(OUT.PROVISIONAL, data["output"])
        self.assertEqual(data["tests"][-1]["status"], "passed")

    def test_an_autograder_that_fails_says_so_and_acknowledges_the_report(self):
        def broken(*args, **kwargs):
            raise OSError("no space left on device")

        with tempfile.TemporaryDirectory() as tmp:
            root = self.layout(tmp)
            status = self.run_autograder(root, gpu_listed=lambda: (False, "no NVIDIA driver"),
                                         prepare_emulated_base=broken)
            data = json.loads((root / "results" / "results.json").read_text())
        self.assertEqual(status, 3)
        self.assertEqual(data["score"], 0)
        self.assertIn("could not check this submission (no space left on device)", data["output"])
        self.assertIn("report: report.md", data["output"])
        self.assertEqual(data["tests"][-1]["status"], "passed")


class GradescopeEmulated(unittest.TestCase):
    """make gradescope's zip in Gradescope's layout, in a temporary root
    (AUTOGRADER_ROOT), without a GPU: setup.sh (installing nothing) builds the
    emulated base once, then run_autograder gives each submission provisional
    feedback. Part 1 only, to keep it short (a full emulated run takes a few
    minutes of build and tests on 2 cores)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.root = Path(cls.tmp.name) / "autograder"
        source = cls.root / "source"
        source.mkdir(parents=True)
        archive = Path(cls.tmp.name) / "autograder.zip"
        with mock.patch.object(GS, "say"):
            G.main(["gradescope", "--out", str(archive)])
        zipfile.ZipFile(archive).extractall(source)
        cls.env = {**os.environ, "AUTOGRADER_ROOT": str(cls.root), "AUTOGRADER_NO_INSTALL": "1"}
        cls.env.pop("MAKEFLAGS", None)
        cls.setup = subprocess.run(["bash", str(source / "setup.sh"), "--parts", "part1", "--gpu-base", "0"],
                                   env=cls.env, capture_output=True, text=True, timeout=1800)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def submit(self, files: dict[str, bytes]) -> tuple[dict, str]:
        self.assertEqual(self.setup.returncode, 0, self.setup.stdout[-2000:] + self.setup.stderr[-2000:])
        submission = self.root / "submission"
        shutil.rmtree(submission, ignore_errors=True)
        for rel, content in files.items():
            (submission / rel).parent.mkdir(parents=True, exist_ok=True)
            (submission / rel).write_bytes(content)
        run = subprocess.run(["bash", str(self.root / "source" / "run_autograder"), "--parts", "part1",
                              "--feedback-only", "1"], cwd=self.root, env=self.env, capture_output=True, text=True,
                             timeout=1800)
        self.assertEqual(run.returncode, 0, run.stdout[-2000:] + run.stderr[-2000:])
        data = json.loads((self.root / "results" / "results.json").read_text())
        gradescope_fields(self, data)
        self.assertEqual(data["score"], 0)
        self.assertTrue(all(row["score"] == 0 for row in data["tests"]))
        self.assertTrue(data["output"].startswith(OUT.PROVISIONAL))
        self.assertIn("is not your grade: your grade comes from a grading of your final submission on a GPU after "
                      "the deadline", data["output"])
        return data, run.stdout

    def rows(self, data: dict) -> dict[str, dict]:
        return {row["name"].split(" ")[0]: row for row in data["tests"]}

    # Only where the lab's student.cu is the skeleton for sure: in a student's
    # own copy it may be solved (the GitHub workflow runs these tests there).
    @unittest.skipUnless((CT.LAB / "part1_merge_path" / "reference.cu").exists(), "a student copy's student.cu may be solved")
    def test_the_untouched_skeleton_and_a_report(self):
        skeleton = (CT.LAB / "part1_merge_path" / "student.cu").read_bytes()
        data, _ = self.submit({"lab/part1_merge_path/student.cu": skeleton,
                               "lab/report.md": b"# Report\n\n![grid](fig/grid.png)\n", "lab/fig/grid.png": b"png"})
        rows = self.rows(data)
        self.assertEqual(rows["Q1"]["status"], "failed")
        q1 = CT.all_questions(CT.LAB)["Q1"]
        emulated = [c for c in q1.tests if not c.large]
        passed = sum(q1.weights[c.name] == 0 for c in emulated)  # the argument refusals: given code
        self.assertEqual(rows["Q1"]["name"], f"Q1 {q1.title}: {passed}/{len(emulated)} pass emulated (provisional)")
        self.assertIn("First failure: ", rows["Q1"]["output"])
        self.assertIn("  passed  mergeSmallMany refuses bad sizes and counts", rows["Q2"]["output"])
        self.assertIn("Not emulated: 1 test past 2^31 elements", rows["Q2"]["output"])
        self.assertNotIn("status", rows["Q3"])  # Part 2: not checked in this run
        self.assertEqual(rows["Report"]["status"], "passed")
        self.assertIn("report: report.md and 1 figure", data["output"])
        self.assertEqual((self.root / "results" / "lab" / "report" / "fig" / "grid.png").read_bytes(), b"png")

    @unittest.skipUnless((CT.LAB / "part1_merge_path" / "reference.cu").exists(), "a student copy has no reference")
    def test_the_reference_handed_in_as_a_students_files(self):
        from tests.redteam import faults as F

        files = {rel: text.encode() for rel, text in F.reference_submission(CT.LAB).items()}
        data, _ = self.submit({**files, "report.pdf": b"%PDF-1.4\n"})
        rows = self.rows(data)
        for qid in ("Q1", "Q2"):
            self.assertEqual(rows[qid]["status"], "passed", rows[qid]["output"])
            self.assertNotIn("FAILED", rows[qid]["output"])
        self.assertIn("tests pass on the CPU emulator", rows["Q1"]["output"])
        self.assertEqual(rows["Report"]["status"], "passed")
        self.assertIn("report: report.pdf", data["output"])

    def test_a_part_that_does_not_compile_and_no_report(self):
        skeleton = (CT.LAB / "part1_merge_path" / "student.cu").read_text()
        data, _ = self.submit({"part1_merge_path/student.cu": (skeleton + "\nint broken(\n").encode()})
        rows = self.rows(data)
        self.assertEqual(rows["Q1"]["status"], "failed")
        self.assertIn("Does not compile for the emulator (g++):", rows["Q1"]["output"])
        self.assertIn("student.cu", rows["Q1"]["output"])
        self.assertEqual(rows["Report"]["status"], "failed")
        self.assertIn("report: none handed in", data["output"])


class Scores(unittest.TestCase):
    def test_scores_csv_matches_the_roster_by_submission_email_or_sid(self):
        questions = list(CT.all_questions(CT.LAB).values())
        full = [JUDGE.QuestionResult(q, {c.name: REP.Outcome("passed") for c in q.tests}) for q in questions]
        with tempfile.TemporaryDirectory() as tmp:
            grades = Path(tmp)
            records = BOOK.Records(grades)
            q1_only = full[:1] + [JUDGE.QuestionResult(q, {}) for q in questions[1:]]
            for student, results in (("submission_11", full), ("Bob@Uni.edu", q1_only)):
                records.add({"student": student, "score": round(sum(r.score for r in results), 4),
                             "gradebook": OUT.gradebook_line(student, results, 1, [])})
            roster = grades / "roster.csv"
            roster.write_text("First Name,Last Name,SID,Email,Submission\n"
                              "Ann,Lee,111,ann@uni.edu,submission_11\n"
                              "Ben,Lee,112,ben@uni.edu,submission_11\n"  # a group of two
                              "Bob,Ray,113,bob@uni.edu,\n"
                              "Cy,Ng,114,cy@uni.edu,\n")
            students = [("submission_11", None), ("Bob@Uni.edu", None), ("dan", None)]
            with mock.patch.object(BOOK, "say") as said:
                BOOK.write_gradebook(grades, students, records.records, roster=roster)
            rows = list(csv.reader((grades / "scores.csv").read_text().splitlines()))
            self.assertEqual(rows[0], BOOK.SCORES_HEADER)
            top, most = f"{sum(r.score for r in full):g}", f"{BOOK.max_points(questions):g}"
            q1 = f"{questions[0].points:g}"
            self.assertEqual(rows[1:], [["Ann Lee", "ann@uni.edu", "111", top, most, "submission_11"],
                                        ["Ben Lee", "ben@uni.edu", "112", top, most, "submission_11"],
                                        ["Bob Ray", "bob@uni.edu", "113", q1, most, "Bob@Uni.edu"],
                                        ["Cy Ng", "cy@uni.edu", "114", "", most, ""],
                                        ["dan", "", "", "", most, "dan"]])
            warnings = " ".join(c.args[0] for c in said.call_args_list)
            self.assertIn("no submission for Cy Ng", warnings)
            self.assertIn("dan: not in the roster", warnings)
            # the same from the gradebook alone, afterwards (scores)
            (grades / "scores.csv").unlink()
            with mock.patch.object(BOOK, "say"):
                self.assertEqual(G.main(["scores", "--gradebook", str(grades / "gradebook.csv"), "--roster",
                                         str(roster)]), 0)
            self.assertEqual(list(csv.reader((grades / "scores.csv").read_text().splitlines())), rows)
            # without a roster: a row per submission, the email where the name is one
            with mock.patch.object(BOOK, "say"):
                G.main(["scores", "--gradebook", str(grades / "gradebook.csv"), "--csv", str(grades / "plain.csv")])
            plain = list(csv.reader((grades / "plain.csv").read_text().splitlines()))
            self.assertEqual(plain[2], ["Bob@Uni.edu", "Bob@Uni.edu", "", q1, most, "Bob@Uni.edu"])
            self.assertEqual(plain[3][3], "")  # dan: not graded, no score rather than 0

    def test_a_roster_without_email_sid_or_submission_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            roster = Path(tmp) / "roster.csv"
            roster.write_text("Student,Grade\nann,1\n")
            with self.assertRaises(CT.GradingError):
                BOOK.read_roster(roster)
