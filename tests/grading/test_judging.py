"""The harness's tests of judging (harness/judging.py, results.py, reports.py,
pcie.py, sanitizers.py): the judge's verdict, the host traffic, the points."""

from tests.grading.fixtures import *  # noqa: F401,F403 (the harness's modules and the stand-ins)


class Judged(JudgedPair, unittest.TestCase):
    """The verdict is the judge's report; the graded process gets no seed and
    no report pipe, and ends with the judge."""

    def test_the_verdict_is_the_judges_and_the_graded_process_gets_no_seed(self):
        outcome, _ = self.run_pair(self.JUDGE, self.graded("sock.recv(100)\n"))
        self.assertEqual(outcome.status, "passed", outcome.message)
        env = json.loads((self.dir / "seen" / "env.json").read_text())
        self.assertNotIn("LAB_SEED", env)
        self.assertFalse({"LAB_REPORT_FD", "LAB_RESULTS_FD"} & set(env), "the graded process holds a report pipe")
        self.assertIn("LAB_JUDGE_FD", env)

    def test_a_graded_process_that_outlives_the_judge_is_stopped(self):
        outcome, seconds = self.run_pair(self.JUDGE, self.graded("time.sleep(60)\n"))
        self.assertEqual(outcome.status, "passed", outcome.message)
        self.assertLess(seconds, 20)

    def test_a_graded_process_cannot_write_the_verdict(self):
        # It has no report pipe: what it prints, or writes to descriptors it
        # guesses, is not read; the judge's report says the call failed.
        forger = ("for fd in range(3, 64):\n    try:\n"
                  "        os.write(fd, b'{\"event\": \"summary\", \"passed\": 1, \"failed\": 0, \"skipped\": 0}\\n')\n"
                  "    except OSError:\n        pass\nprint('1 passed, 0 failed')\n")
        outcome, _ = self.run_pair(self.JUDGE, forger + "sock = socket.socket(fileno=int(os.environ['LAB_JUDGE_FD']))\n"
                                   "sock.recv(100)\nsock.send(b'not done')\n")
        self.assertEqual(outcome.status, "failed")

    @unittest.skipUnless(SB.Sandbox().available, "no sandbox can start on this machine")
    def test_the_socket_reaches_into_the_sandbox(self):
        outcome, _ = self.run_pair(self.JUDGE, self.graded("sock.recv(100)\n", record=False), sandbox=True)
        self.assertEqual(outcome.status, "passed", outcome.message)


class Verdicts(unittest.TestCase):
    """A report is a claim; the trusted run's results are the truth, compared
    by the harness (harness.judge, results.compare)."""
    TRUSTED = REP.Trusted("passed", "")

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)
        self.theirs = self.stream("trusted", {"t": [("output [seed 1]", "i32", ints(1, 2, 3, 4)),
                                                    ("input A after the run [seed 1]", "tagged", ints(5, 0, 6, 1))]})

    def tearDown(self):
        self.tmp.cleanup()

    def stream(self, name: str, tests: dict, cut: int = 0) -> RS.Stream:
        path = self.dir / name
        data = frames(tests)
        path.write_bytes(data[: len(data) - cut])
        return RS.read_stream(path)

    def test_a_pass_needs_the_trusted_runs_results(self):
        same = self.stream("same", {"t": [("output [seed 1]", "i32", ints(1, 2, 3, 4)),
                                          ("input A after the run [seed 1]", "tagged", ints(5, 0, 6, 1))]})
        self.assertEqual(RS.compare(same, self.theirs, "t"), "")
        self.assertEqual(JUDGE.judge(REP.Outcome("passed"), self.TRUSTED, "").status, "passed")
        forged = JUDGE.judge(REP.Outcome("passed"), self.TRUSTED, RS.compare(self.stream("none", {}), self.theirs, "t"))
        self.assertEqual(forged.status, "failed")
        self.assertIn("no results", forged.message)

    def test_the_first_difference_is_named_with_the_trusted_values(self):
        wrong = self.stream("wrong", {"t": [("output [seed 1]", "i32", ints(1, 2, 9, 4)),
                                            ("input A after the run [seed 1]", "tagged", ints(5, 0, 6, 1))]})
        self.assertEqual(RS.compare(wrong, self.theirs, "t"),
                         "result 1 of 2 (output [seed 1]): at index 2 it read back 9, the trusted run 3")
        tags = self.stream("tags", {"t": [("output [seed 1]", "i32", ints(1, 2, 3, 4)),
                                          ("input A after the run [seed 1]", "tagged", ints(5, 0, 6, 7))]})
        self.assertIn("at index 1 it read back 6#7, the trusted run 6#1", RS.compare(tags, self.theirs, "t"))
        short = self.stream("short", {"t": [("output [seed 1]", "i32", ints(1, 2, 3))]})
        self.assertIn("it read back 3 values, the trusted run 4", RS.compare(short, self.theirs, "t"))
        other = self.stream("other", {"t": [("output [seed 2]", "i32", ints(1, 2, 3, 4))]})
        self.assertIn("handed over 'output [seed 2]' in its place", RS.compare(other, self.theirs, "t"))

    def test_a_stream_cut_short_or_malformed_fails(self):
        one = self.stream("one", {"t": [("output [seed 1]", "i32", ints(1, 2, 3, 4))]})
        self.assertIn("handed over 1 results where the trusted run handed over 2", RS.compare(one, self.theirs, "t"))
        cut = self.stream("cut", {"t": [("output [seed 1]", "i32", ints(1, 2, 3, 4)),
                                        ("input A after the run [seed 1]", "tagged", ints(5, 0, 6, 1))]}, cut=3)
        self.assertIn("ends inside a result", cut.problem)
        self.assertNotEqual(RS.compare(cut, self.theirs, "t"), "")
        (self.dir / "junk").write_bytes(b"Sxyz")
        self.assertIn("malformed", RS.read_stream(self.dir / "junk").problem)
        unended = self.stream("unended", {"t": [("output [seed 1]", "i32", ints(1, 2, 3, 4)),
                                                ("input A after the run [seed 1]", "tagged", ints(5, 0, 6, 1))]}, cut=1)
        self.assertEqual(RS.compare(unended, self.theirs, "t"), "its results end before the test case did")

    def test_the_collector_keeps_a_pipe_up_to_its_cap(self):
        data = frames({"t": [("output [seed 1]", "i32", ints(*range(1000)))]})
        for cap, whole in ((1 << 20, True), (100, False)):
            read_end, write_end = os.pipe()
            c = RS.Collector(read_end, self.dir / f"pipe{cap}", cap)
            os.write(write_end, data)
            os.close(write_end)
            s = c.finish()
            self.assertEqual(bool(s.tests.get("t")) and not s.problem, whole)

    def test_the_trusted_run_decides_what_is_not_graded(self):
        skipped = REP.Trusted("skipped", "not graded here: needs 17 GiB of device memory")
        self.assertEqual(JUDGE.judge(REP.Outcome("passed"), skipped, "").status, "not-graded")
        # the student's process said "no memory" where the trusted one had it
        claim = REP.Outcome("not-graded", "not graded here: needs 17 GiB")
        self.assertEqual(JUDGE.judge(claim, self.TRUSTED, "").status, "failed")
        self.assertEqual(JUDGE.judge(REP.Outcome("failed", "index 3"), self.TRUSTED, "").message, "index 3")
        self.assertEqual(JUDGE.judge(REP.Outcome("passed"), None, "").status, "not-graded")

    def test_the_trusted_report_is_read_per_test(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "r.jsonl"
            path.write_text('{"event":"start","test":"a"}\n'
                            '{"event":"end","test":"a","status":"passed","reason":"","failure":""}\n'
                            '{"event":"end","test":"b","status":"skipped","reason":"not graded here"}\n'
                            'garbage\n')
            got = REP.read_report_ends(path)
        self.assertEqual(got["a"], REP.Trusted("passed", ""))
        self.assertEqual((got["b"].status, got["b"].message), ("skipped", "not graded here"))

    def test_the_traces_objections_fail_a_passing_report(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "r.jsonl"
            path.write_text('{"event":"start","test":"t"}\n{"event":"end","test":"t","status":"passed",'
                            '"trace":"it called cudaMemPoolCreate"}\n'
                            '{"event":"summary","passed":1,"failed":0,"skipped":0}\n')
            o = REP.read_report(path, "t", PROC.Run(0, 1, ""), 5)
        self.assertEqual(o.status, "failed")
        self.assertIn("cudaMemPoolCreate", o.message)

    def test_a_report_that_says_passed_but_exits_non_zero_fails(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "r.jsonl"
            path.write_text('{"event":"start","test":"t"}\n{"event":"end","test":"t","status":"passed"}\n'
                            '{"event":"summary","passed":1,"failed":0,"skipped":0}\n')
            self.assertEqual(REP.read_report(path, "t", PROC.Run(0, 1, ""), 5).status, "passed")
            self.assertEqual(REP.read_report(path, "t", PROC.Run(3, 1, ""), 5).status, "failed")


class CallTraffic(JudgedPair, unittest.TestCase):
    """Each judged call's PCIe bytes, metered by the judge (tests/judge/pcie.hpp)
    and judged by the harness (pcie.py): the stand-in judge writes its lines
    as the real one does, from the figures measured on an H200."""

    HONEST = "mergeSmall<int>\t29000\t1\t49000\t0.001\n"  # a launch and its synchronisation
    ON_HOST = "mergeSmallMany<int>\t5649664\t1\t6300000\t0.004\n"  # its arrays down and back

    def judge(self, *runs):
        """A judge whose n-th run (counted in a file) writes runs[n]'s lines."""
        count = self.dir / "runs"
        return (f"n = len(open({str(count)!r}).read()) if os.path.exists({str(count)!r}) else 0\n"
                f"open({str(count)!r}, 'a').write('x')\n"
                f"open(os.environ['LAB_PCIE_LOG'], 'a').write({list(runs)!r}[min(n, {len(runs) - 1})])\n" + self.JUDGE)

    def test_honest_calls_pass_without_a_note(self):
        outcome, _ = self.run_pair(self.judge(self.HONEST * 50), self.graded("sock.recv(100)\n"), metered=True)
        self.assertEqual(outcome.status, "passed", outcome.message)
        self.assertEqual(self.notes, [])

    def test_calls_done_on_the_host_fail_the_case_when_they_do_so_twice(self):
        outcome, _ = self.run_pair(self.judge(self.ON_HOST), self.graded("sock.recv(100)\n"), metered=True)
        self.assertEqual(outcome.status, "failed")
        self.assertIn("over PCIe", outcome.message)
        self.assertTrue(any("(twice)" in n for n in self.notes), self.notes)
        self.assertEqual((self.dir / "runs").read_text(), "xx")

    def test_a_burst_seen_once_costs_nothing(self):
        outcome, _ = self.run_pair(self.judge(self.ON_HOST, self.HONEST), self.graded("sock.recv(100)\n"),
                                   metered=True)
        self.assertEqual(outcome.status, "passed", outcome.message)
        self.assertTrue(any("not in a second" in n for n in self.notes), self.notes)

    def test_the_rule_adds_small_calls_up_and_leaves_tiny_cases_alone(self):
        from tests.grading.harness import pcie
        honest = [pcie.Call("mergeSmall<int>", 29000, 1, 49000, 0.001)] * 6000
        on_host = [pcie.Call(c.name, c.arrays, c.launches, c.moved + int(1.1 * c.arrays), c.seconds) for c in honest]
        self.assertEqual(pcie.traffic(honest).verdict(), "")
        self.assertIn("work done on the host", pcie.traffic(on_host).verdict())
        self.assertEqual(pcie.traffic(on_host[:10]).verdict(), "")  # 290 KB of arrays: under the floor
        launches = [pcie.Call("oddEvenSort<int>", 24000, 4097, 9_215_900, 0.038)]  # measured, the most launches
        self.assertEqual(pcie.traffic(launches).verdict(), "")


class HostTraffic(unittest.TestCase):
    """The test phase's PCIe bytes, read outside every graded process (pcie.py)."""

    def test_the_meter_adds_up_steps_of_counters_that_wrap_at_32_bits(self):
        from tests.grading.harness import pcie
        readings = iter([(4294967000, 10), (100, 20), (300, 4294967290), (400, 5)])
        with mock.patch.object(pcie, "_counters", lambda uuid: next(readings, (400, 5))), \
                mock.patch.object(pcie, "SAMPLE", 3600):
            with pcie.Meter("GPU-x") as m:
                m._step()
                m._step()
        self.assertEqual(m.bytes, (396 + 10) + (200 + 4294967270) + (100 + 11))

    def test_the_bytes_go_to_the_log_and_decide_nothing(self):
        from tests.grading.harness import pipeline
        with tempfile.TemporaryDirectory() as tmp:
            log = Path(tmp) / "pcie.tsv"
            pipeline.log_host_traffic(log, 900 << 20, 1000 << 20)
            self.assertEqual(log.read_text(), f"tests\t{900 << 20}\ntrusted runs\t{1000 << 20}\n")
            log.unlink()
            pipeline.log_host_traffic(log, None, 1000)  # no NVML: nothing written
            self.assertFalse(log.exists())


class SlowSanitizedRun(unittest.TestCase):
    """A sanitized run well past what its graded runs predict is a note for a
    person, and an honest one is not (sanitizers.py), on the H200's figures."""

    def notes_for(self, took: float, graded: float) -> list[str]:
        with tempfile.TemporaryDirectory() as tmp:
            g = mock.Mock(seconds={"a": graded}, logs=Path(tmp), notes=[])
            g.budget.left.return_value = 1e6
            g.binary_intact.return_value = True
            runs = mock.Mock(groups={"Q1": ["a"]}, limits={"Q1": 1000.0}, binaries={"Q1": Path("x")})
            clock = iter([0.0, took])
            with mock.patch.object(SAN, "sanitized_run", lambda *a: 0), \
                    mock.patch.object(SAN, "time", mock.Mock(monotonic=lambda: next(clock))):
                SAN.sanitize_one(g, runs, "Q1", "racecheck")
            return g.notes

    def test_the_stall_is_noted_and_honest_runs_are_not(self):
        # graded 7 s: 28.5 s expected. Q2 under racecheck took 31 s honestly;
        # stalled 40 s under the sanitizer, 42-46 s.
        self.assertEqual(self.notes_for(31.0, 7.0), [])
        self.assertIn(SAN.SLOW_RUN_NOTE, " ".join(self.notes_for(42.0, 7.0)))
        self.assertEqual(self.notes_for(37.0, 7.0), [], "1.3 times, but under 10 s over")
        # a long run (225 s expected): 35 s over is still within a quarter
        self.assertEqual(self.notes_for(260.0, 400.0), [])
        self.assertIn(SAN.SLOW_RUN_NOTE, " ".join(self.notes_for(290.0, 400.0)))


class Scoring(unittest.TestCase):
    def question(self, weights, points=6.0):
        q = question("Q1", "part1", points, 60, 0.5, "Merge")
        for name, w in weights.items():
            q.tests.append(case(name))
            q.weights[name] = w
        return q

    def test_points_split_by_weight_and_weight_zero_gives_nothing(self):
        q = self.question({"a": 1, "b": 2, "refuses": 0})
        r = JUDGE.QuestionResult(q, {"a": REP.Outcome("passed"), "b": REP.Outcome("failed", "x"),
                                 "refuses": REP.Outcome("passed")})
        self.assertAlmostEqual(r.score, 2.0)
        self.assertEqual(r.counts(), (1, 2))
        self.assertEqual(r.first_failure, "b: x")

    def test_a_not_graded_test_leaves_the_split(self):
        q = self.question({"a": 1, "large": 1})
        r = JUDGE.QuestionResult(q, {"a": REP.Outcome("passed"), "large": REP.Outcome("not-graded", "needs memory")})
        self.assertAlmostEqual(r.score, 6.0)
        self.assertEqual(r.counts(), (1, 1))

    def test_a_test_that_never_ran_scores_nothing(self):
        r = JUDGE.QuestionResult(self.question({"a": 1}), {})
        self.assertEqual(r.score, 0)

    def test_sanitizer_errors_cost_the_penalty(self):
        q = self.question({"a": 1})
        r = JUDGE.QuestionResult(q, {"a": REP.Outcome("passed")}, sanitizer="memcheck reported 2 errors")
        self.assertAlmostEqual(r.score, 3.0)

    def test_results_json_table_and_gradebook(self):
        q = self.question({"a": 1, "b": 1, "zero": 0})
        r = JUDGE.QuestionResult(q, {"a": REP.Outcome("passed"), "b": REP.Outcome("failed", 'bad "quote"')})
        data = OUT.results_json([r], ["missing: x"], 42)
        self.assertEqual(data["score"], 3.0)
        self.assertEqual([t["name"] for t in data["tests"]], ["Q1 a", "Q1 b"])
        self.assertEqual({k for t in data["tests"] for k in t},
                         {"name", "score", "max_score", "output", "visibility", "status"})
        self.assertEqual([t["status"] for t in data["tests"]], ["passed", "failed"])
        self.assertIn("LAB_SEED=42", data["output"])
        self.assertIn("3/6", OUT.table([r]))
        line = OUT.gradebook_line('a "b"', [r], 42, ['note "x"'])
        self.assertEqual(line, '"a ""b""",3,6,3,"no report handed in",42,"note ""x"""')
        line = OUT.gradebook_line("c", [r], 1, [], report="report.md and 2 figures")
        self.assertIn('"to be graded by a person: report.md and 2 figures"', line)

    def test_refusing_writes_score_zero_and_the_reason(self):
        with tempfile.TemporaryDirectory() as tmp:
            OUT.refuse(Path(tmp), "alice", "no GPU: no NVIDIA driver", 7)
            data = json.loads((Path(tmp) / "results.json").read_text())
            self.assertEqual(data["score"], 0)
            self.assertIn("NOT GRADED: no GPU", data["output"])
            self.assertIn(f'"alice",0,{TOTAL},', (Path(tmp) / "gradebook.csv").read_text())


class ExactPoints(unittest.TestCase):
    def test_shares_add_up_to_the_points_exactly(self):
        self.assertEqual(JUDGE.split_cents(6, {str(i): 1 for i in range(7)}),
                         {"0": 86, "1": 86, "2": 86, "3": 86, "4": 86, "5": 85, "6": 85})
        self.assertEqual(JUDGE.split_cents(3, {"skeleton passes": 0, "a": 1, "b": 2}),
                         {"skeleton passes": 0, "a": 100, "b": 200})
        self.assertEqual(JUDGE.split_cents(1, {}), {})
        for q in CT.all_questions(CT.LAB).values():
            shares = JUDGE.QuestionResult(q, {}).test_cents()
            self.assertEqual(sum(share for _, share in shares.values()), round(q.points * 100), q.qid)
            total = sum(q.weights.values())
            for name, (_, share) in shares.items():  # each within a hundredth of its exact share
                self.assertLess(abs(share - 100 * q.points * q.weights[name] / total), 1, name)

    def test_a_graded_results_json_for_gradescope(self):
        # The GPU path's writer, on a made-up grading: some tests passed, one
        # failed, one not graded, a sanitizer error, a part that does not build.
        questions = CT.all_questions(CT.LAB)
        results = [JUDGE.QuestionResult(q, {}) for q in questions.values()]
        q1, q2, q5 = (results[list(questions).index(qid)] for qid in ("Q1", "Q2", "Q5"))
        names = [c.name for c in q1.question.tests if q1.question.weights[c.name]]
        q1.outcomes = {n: REP.Outcome("passed") for n in names}
        q1.outcomes[names[-1]] = REP.Outcome("failed", "wrong results: index 3")
        q2.outcomes = {c.name: REP.Outcome("passed") for c in q2.question.tests}
        large = next(c.name for c in q2.question.tests if c.large)
        q2.outcomes[large] = REP.Outcome("not-graded", "not graded: the [large] tier is off (NO_LARGE=1)")
        q2.sanitizer = "racecheck reported 1 error in Q2's tests (logs/Q2-racecheck.log)"
        q5.build_error = "student.cu:3: error: expected ';'"
        data = OUT.results_json(results, ["a note"], 7, report="report.md and 1 figure", seconds=75.4)
        gradescope_fields(self, data)
        self.assertEqual(data["execution_time"], 75)
        rows = {row["name"]: row for row in data["tests"]}
        self.assertEqual(rows[f"Q1 {names[0]}"]["status"], "passed")
        self.assertEqual(rows[f"Q1 {names[-1]}"]["status"], "failed")
        self.assertNotIn("status", rows[f"Q2 {large}"])  # neither passed nor failed
        self.assertEqual(rows["Q2 compute-sanitizer"]["status"], "failed")
        self.assertTrue(all(row["status"] == "failed" and "does not compile" in row["output"]
                            for name, row in rows.items() if name.startswith("Q5 ")))
        asked = ", ".join(q for q, question in questions.items() if question.report_points)
        report = rows[f"Report ({asked}): graded by a person, not here"]
        self.assertEqual((report["status"], report["max_score"]), ("passed", 0))
        self.assertIn("report.md and 1 figure", report["output"])
        # the rows of a question add up to its score, exactly
        self.assertEqual(sum(Fraction(str(row["score"])) for n, row in rows.items() if n.startswith("Q1 ")),
                         Fraction(str(q1.score)))
        self.assertEqual(data["score"], round(sum(r.score for r in results), 4))
        none = OUT.results_json(results, [], 7)
        self.assertEqual(none["tests"][-1]["status"], "failed")
        self.assertIn("none handed in", none["tests"][-1]["output"])
