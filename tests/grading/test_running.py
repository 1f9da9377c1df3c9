"""The harness's tests of running a test case (harness/running.py, sandbox.py,
processes.py): isolation, the sandbox and its limits, the environment, one
process per case."""

from tests.grading.fixtures import *  # noqa: F401,F403 (the harness's modules and the stand-ins)


class Isolation(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def grading(self, sandbox: bool) -> RUN.Grading:
        ns = argparse.Namespace(timeout=None, timeout_scale=None, build_timeout=None, sanitize="0", no_large=None,
                                  arch=None, parts=None, seed="5", out=str(self.dir / "out"), base=None, timing=None,
                                  sandbox="1" if sandbox else "0", work_root=str(self.dir), judge="0")
        # JUDGE=0: a graded process that runs the graders itself, whose plumbing
        # (pipes, limits, exits) the judge's runs share (class Judged).
        return RUN.Grading(self.dir, self.dir, OPT.Options(ns), dict(os.environ), lambda m: None, "tester")

    def outcome(self, body, timeout=20.0, sandbox=False, grading=None, tools=None):
        g = grading or self.grading(sandbox)
        if tools:
            g.opts.sandbox = SB.Sandbox(hidden=(CT.LAB,), tools=tools)
        binary = fake_binary(self.dir, body)
        g.opts.sandbox.own(self.dir)  # as the harness hands a submission's copy to the sandbox
        g.remember(binary)  # after the build, as grading does
        return g.run_case(binary, case(), self.dir / "log", timeout)[0]

    def test_sanitized_runs_are_the_graded_runs_under_the_sanitizer(self):
        # A stand-in compute-sanitizer runs its target and writes a summary:
        # two errors for the test named "bad". The target records what it saw.
        tools = self.dir / "tools"
        tools.mkdir()
        seen = self.dir / "seen"
        fake = tools / "compute-sanitizer"
        fake.write_text("#!" + PYTHON + "\nimport subprocess, sys\n"
                        "args = sys.argv[1:]\nlog = args[args.index('--log-file') + 1]\n"
                        "target = args[args.index('256') + 1:]\nsubprocess.run(target)\n"
                        "n = 2 if 'bad' in target[-1].split(',') else 0\n"
                        "open(log, 'w').write('========= RACECHECK SUMMARY: %d hazards displayed (%d errors, 0 "
                        "warnings)\\n' % (n, n) if 'racecheck' in args else '========= ERROR SUMMARY: %d errors\\n' % n)\n")
        fake.chmod(0o755)
        g = self.grading(False)
        g.env = {**g.env, "PATH": f"{tools}:{os.environ['PATH']}"}
        binary = fake_binary(self.dir, f"open({str(seen)!r}, 'a').write(json.dumps([sys.argv[1:], "
                                       "{k: v for k, v in os.environ.items() if k != 'LAB_REPORT'}]) + '\\n')\n")
        g.remember(binary)
        # One run per question and tool holds all of the question's ordinary
        # cases (Q2 shares "bad" with Q1, whose run holds it).
        q1 = question("Q1", "part1", 6, 20, 0.5, "t", [case("good"), case("bad")])
        q2 = question("Q2", "part1", 3, 20, 0.5, "t", [case("bad"), case("fine")])
        q3 = question("Q3", "part1", 3, 20, 0.5, "t", [case("fine2")])
        r1, r2, r3 = JUDGE.QuestionResult(q1, {}), JUDGE.QuestionResult(q2, {}), JUDGE.QuestionResult(q3, {})
        SAN.sanitize(g, [(binary, [r1, r2, r3])])
        for r in (r1, r2):
            for tool in SAN.SANITIZER_TOOLS:  # synccheck too
                self.assertIn(f"{tool} reported 2 errors in Q1's tests", r.sanitizer)
        self.assertEqual(SAN.SANITIZER_TOOLS, ("memcheck", "racecheck", "synccheck"))
        self.assertEqual(r3.sanitizer, "")
        g.run_case(binary, case("good"), self.dir / "log", 20)
        runs = [json.loads(line) for line in seen.read_text().splitlines()]
        graded = runs[-1]
        self.assertEqual(sorted(run[0] for run in runs[:-1]),
                         sorted([["fine"], ["fine2"], ["good,bad"]] * len(SAN.SANITIZER_TOOLS)))
        pipes = {"LAB_RESULTS_FD": "?", "LAB_REPORT_FD": "?"}  # each run has pipes of its own
        for run in runs[:-1]:  # the graded run's environment
            self.assertEqual({**run[1], **pipes}, {**graded[1], **pipes})
            self.assertTrue(set(pipes) <= set(run[1]))

    def test_results_are_compared_as_the_test_ends_kept_within_twice_the_trusted_runs(self):
        trusted = self.dir / "trusted.results"
        trusted.write_bytes(frames({"a test": [("merged", "i32", ints(1, 2, 3))]}))
        expected = RS.read_stream(trusted)
        cap = RUN.results_cap(expected, "a test")
        self.assertLess(cap, (1 << 20) + 1024)
        self.assertEqual(RUN.results_cap(None, "a test"), RUN.RESULTS_CAP)
        g = self.grading(False)
        for handed, differs in ((ints(1, 2, 3), ""), (ints(1, 2, 4), "at index 2"),
                                (ints(1) * (cap // 4), "more than 1 MiB of results")):
            body = (f"os.write(int(os.environ['LAB_RESULTS_FD']), {frames({'a test': [('merged', 'i32', handed)]})!r})\n"
                    + PASSING)
            binary = fake_binary(self.dir, body)
            g.remember(binary)
            outcome, said = g.run_case(binary, case(), self.dir / "log", 20, expected)
            self.assertEqual(outcome.status, "passed", outcome.message)
            self.assertIn(differs, said) if differs else self.assertEqual(said, "")
            self.assertEqual(list(g.private.iterdir()), [], "results kept after their comparison")

    def limited(self, **changes):
        """run_case with the test limits changed (restored at the test's end)."""
        saved = SB.TEST
        SB.TEST = dataclasses.replace(saved, **changes)
        self.addCleanup(setattr, SB, "TEST", saved)

    def test_a_test_is_stopped_at_its_file_size_limit(self):
        self.limited(file_size=1 << 20)
        big = self.dir / "big"
        o = self.outcome(f"line(event='start', test=name)\nopen({str(big)!r}, 'wb').write(b'x' * (2 << 20))\n"
                         + PASSING.split("\n", 1)[1])
        self.assertEqual(o.status, "failed")
        self.assertRegex(o.message, "SIGXFSZ|File too large")  # Python ignores the signal: its write fails
        self.assertLessEqual(big.stat().st_size, 1 << 20)

    def test_a_test_is_stopped_at_its_memory_limit(self):
        self.limited(memory=256 << 20)
        o = self.outcome("line(event='start', test=name)\nheld = bytearray(512 << 20)\n" + PASSING.split("\n", 1)[1])
        self.assertEqual(o.status, "failed")
        # The allocation fails (the rlimit on its data, as large as the
        # cgroup's limit), or the cgroup kills it and says so.
        self.assertRegex(o.message, "MemoryError|ran out of its 256 MiB of host memory")

    @unittest.skipUnless(SB.Cgroups().root, "no cgroup v2 subtree can be made here (the limits are rlimits)")
    def test_a_test_is_stopped_at_its_process_and_thread_limit(self):
        self.limited(tasks=16)
        o = self.outcome("import threading, time\nline(event='start', test=name)\n"
                         "for _ in range(64):\n    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
                         + PASSING.split("\n", 1)[1])
        self.assertEqual(o.status, "failed")
        self.assertIn("its limit of 16 processes and threads", o.message)

    def test_a_complete_report_passes(self):
        o = self.outcome(PASSING)
        self.assertEqual(o.status, "passed")

    def test_the_report_is_a_pipe_no_test_can_replace(self):
        # The report goes to a pipe the harness holds: there is no file whose
        # place a named pipe or a link could take.
        o = self.outcome("assert 'LAB_REPORT' not in os.environ and 'LAB_REPORT_FD' in os.environ\n" + PASSING)
        self.assertEqual(o.status, "passed", o.message)

    def test_a_left_file_that_is_a_pipe_or_a_link_is_refused_at_once(self):
        # What a sanitized run leaves (its log) is read so: a named pipe in its
        # place would block a plain open() forever; a link would have the
        # harness read whatever it points to.
        pipe, link = self.dir / "pipe", self.dir / "link"
        os.mkfifo(pipe)
        os.symlink("/etc/hostname", link)
        started = time.monotonic()
        with self.assertRaisesRegex(PROC.LeftFileError, "not a regular file"):
            PROC.read_left_file(pipe)
        with self.assertRaisesRegex(PROC.LeftFileError, "symbolic link"):
            PROC.read_left_file(link)
        self.assertLess(time.monotonic() - started, 5)
        self.assertEqual(SAN.sanitizer_errors(pipe), None)

    def test_a_left_file_is_read_only_up_to_its_cap(self):
        big = self.dir / "big"
        big.write_bytes(b"x" * 2000)
        self.assertEqual(len(PROC.read_left_file(big, cap=4096)), 2000)
        with self.assertRaises(PROC.LeftFileError):
            PROC.read_left_file(big, cap=1000)

    def test_exit_zero_in_the_middle_of_a_test_fails(self):
        o = self.outcome("line(event='start', test=name)\nsys.exit(0)\n")
        self.assertEqual(o.status, "failed")
        self.assertIn("exit status 0 during the test", o.message)

    def test_a_forged_summary_on_stdout_fails(self):
        o = self.outcome("line(event='start', test=name)\nprint('11 passed, 0 failed', flush=True)\nos._exit(0)\n")
        self.assertEqual(o.status, "failed")
        self.assertIn("11 passed", o.message)  # quoted as the last output, not believed

    def test_a_crash_is_named(self):
        o = self.outcome("line(event='start', test=name)\nos.kill(os.getpid(), signal.SIGSEGV)\n")
        self.assertIn("crashed (SIGSEGV)", o.message)

    def test_a_hang_is_killed_at_the_timeout_with_its_children(self):
        marker = self.dir / "child-alive"
        o = self.outcome(f"line(event='start', test=name)\n"
                         f"import subprocess\n"
                         f"subprocess.Popen(['sh', '-c', 'sleep 3; touch {marker}'])\n"
                         f"time.sleep(60)\n", timeout=1)
        self.assertIn("timed out after 1 s", o.message)
        import time
        time.sleep(3.5)
        self.assertFalse(marker.exists(), "the hung test's child outlived the kill")

    def test_a_skip_is_never_a_pass_but_a_large_test_without_memory_is_not_graded(self):
        end = ("line(event='start', test=name); line(event='end', test=name, status='skipped', reason=%r)\n"
               "line(event='summary', passed=0, failed=0, skipped=1)\n")
        self.assertEqual(self.outcome(end % "no GPU").status, "failed")
        self.assertEqual(self.outcome(end % "not graded here: needs 17 GiB").status, "not-graded")

    def test_a_report_about_another_test_or_a_wrong_summary_fails(self):
        other = self.outcome("line(event='start', test='other'); line(event='end', test='other', status='passed')\n"
                             "line(event='summary', passed=1, failed=0, skipped=0)\n")
        self.assertEqual(other.status, "failed")
        wrong = self.outcome("line(event='start', test=name); line(event='end', test=name, status='passed')\n"
                             "line(event='summary', passed=5, failed=0, skipped=0)\n")
        self.assertEqual(wrong.status, "failed")
        garbage = self.outcome("report.write('{not json\\n'); report.flush()\n")
        self.assertIn("malformed", garbage.message)

    def test_a_failure_keeps_its_message(self):
        o = self.outcome("line(event='start', test=name)\n"
                         "line(event='end', test=name, status='failed', failure='index 7: got 3, expected 4')\n"
                         "line(event='summary', passed=0, failed=1, skipped=0)\n")
        self.assertEqual((o.status, o.message), ("failed", "index 7: got 3, expected 4"))

    def test_sanitizer_logs_are_read_for_their_error_counts(self):
        log = self.dir / "s.log"
        log.write_text("========= Invalid __global__ read\n========= ERROR SUMMARY: 3 errors\n")
        self.assertEqual(SAN.sanitizer_errors(log), 3)
        log.write_text("========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)\n")
        self.assertEqual(SAN.sanitizer_errors(log, "racecheck"), 1)
        log.write_text("========= ERROR SUMMARY: 0 errors\n")
        self.assertEqual(SAN.sanitizer_errors(log), 0)
        self.assertIsNone(SAN.sanitizer_errors(self.dir / "missing.log"))
        # Lines the code under test wrote into the log (its descriptor is
        # inherited) come before the sanitizer's own summary, written last;
        # and a memcheck log is read for memcheck's summary only.
        log.write_text("========= ERROR SUMMARY: 0 errors\n========= RACECHECK SUMMARY: 0 hazards displayed "
                       "(0 errors, 0 warnings)\n========= Invalid __global__ read\n========= ERROR SUMMARY: 1 error\n")
        self.assertEqual(SAN.sanitizer_errors(log), 1)


    def test_without_a_sandbox_a_daemon_is_still_ended(self):
        PROC.become_subreaper()  # as grade.py's main does: orphans come to the harness
        marker = self.dir / "daemon-alive"
        self.outcome(f"import subprocess\nsubprocess.Popen(['setsid', 'sh', '-c', 'sleep 2; touch {marker}'])\n"
                     "line(event='start', test=name)\n")
        time.sleep(3)
        self.assertFalse(marker.exists(), "a process the test left behind outlived it")

    def test_a_test_waits_for_a_gpu_place_and_the_wait_is_not_its_time(self):
        import threading
        g = self.grading(False)
        g.opts.gpu_jobs, g.gpu_place = 1, f"gpu-harness-test-{os.getpid()}"
        marker = self.dir / "started"
        held, release = threading.Event(), threading.Event()

        def other_grading():  # another grading's process holds the GPU's only place
            with GPUS.place(g.gpu_place, 1):
                held.set()
                release.wait()

        def test_run():
            outcomes.append(self.outcome(f"open({str(marker)!r}, 'w').close()\nline(event='start', test=name)\n"
                                         "line(event='end', test=name, status='passed')\n", grading=g))

        outcomes: list = []
        holder = threading.Thread(target=other_grading, daemon=True)
        runner = threading.Thread(target=test_run, daemon=True)
        holder.start()
        held.wait()
        runner.start()
        try:
            time.sleep(0.5)
            self.assertFalse(marker.exists(), "the test started while another process held the GPU's only place")
        finally:
            released = time.monotonic()
            release.set()
            holder.join()
            runner.join()
        self.assertTrue(marker.exists())
        self.assertNotIn("timed out", outcomes[0].message)
        # Its time counts from its start, after the place came free.
        self.assertLessEqual(g.seconds[case().name], time.monotonic() - released)

    def test_a_tool_the_harness_runs_itself_is_no_orphan(self):
        # nm and readelf run beside the graded processes (symbols.py): the
        # reaping after another run's end once killed them ("nm exited -9").
        PROC.become_subreaper()
        tool = subprocess.Popen(["sleep", "30"])
        try:
            PROC.reap_orphans()
            PROC.run(["true"], self.dir, 5)  # reaps at its end, as every run does
            self.assertIsNone(tool.poll(), "reap_orphans killed a process of the harness's own")
        finally:
            tool.kill()
            tool.wait()

    def test_a_test_binary_changed_after_the_build_does_not_run(self):
        g = self.grading(False)
        binary = fake_binary(self.dir, "line(event='start', test=name)\n")
        g.remember(binary)
        binary.write_bytes(binary.read_bytes())  # the same bytes, written again: a new change time
        o = g.run_case(binary, case(), self.dir / "log", 5)[0]
        self.assertIn("changed after it was built", o.message)

    def test_a_spent_budget_fails_the_tests_left(self):
        g = self.grading(False)
        g.budget.seconds = 0
        o = self.outcome("line(event='start', test=name)\n", grading=g)
        self.assertIn("time budget", o.message)

    def test_logs_are_capped(self):
        self.outcome("sys.stdout.write('x' * (3 << 20)); sys.stdout.flush()\n")
        log = (self.dir / "log").read_bytes()
        self.assertLess(len(log), PROC.LOG_CAP_BYTES + 200)
        self.assertIn(b"log cut", log)


class Environment(unittest.TestCase):
    def test_a_submission_sees_an_allowlist_of_the_harness_environment(self):
        saved = dict(os.environ)
        try:
            os.environ.update({"MAKEFLAGS": "-j4 -- GRADES=/secret/grades", "GRADE_TOKEN": "t0ken", "PWD": "/secret"})
            env = PROC.test_env(plain_options("0"), {"CUDA_VISIBLE_DEVICES": "1"})
        finally:
            os.environ.clear()
            os.environ.update(saved)
        self.assertEqual(env["CUDA_VISIBLE_DEVICES"], "1")
        self.assertIn("PATH", env)
        for name in ("MAKEFLAGS", "GRADE_TOKEN", "PWD"):
            self.assertNotIn(name, env)
        self.assertEqual(set(env) - set(PROC.ENV_KEPT), {"LAB_SEED", "LAB_TRACE", "LAB_CONFINE", "LAB_LARGE", "NO_COLOR"})


class Unsandboxed(unittest.TestCase):
    def test_nothing_is_graded_without_a_sandbox_said_or_not(self):
        # Outside a sandbox a test can end the harness and write results.json
        # itself: where none can start, and with SANDBOX=0, grading refuses in one line.
        opts = plain_options(None)
        opts.sandbox = SB.Sandbox(tools=())  # as where no namespace can be made
        for why in (opts.unsandboxed(), plain_options("0").unsandboxed()):
            self.assertIn("not graded without a sandbox", why)
            self.assertIn("results.json", why)
            self.assertNotIn("\n", why)

    def test_make_grade_sandbox_0_refuses_and_writes_no_grade(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "out"
            args = argparse.Namespace(submission=str(CT.LAB), out=str(out), student=None, base=str(Path(tmp) / "base"))
            with mock.patch.object(LOCAL, "prepare_base", lambda base, opts, say: base), \
                    mock.patch.object(LOCAL, "lease", side_effect=AssertionError("no GPU is held to refuse")):
                status = LOCAL.cmd_grade(args, plain_options("0"))
            data = json.loads((out / "results.json").read_text())
        self.assertEqual(status, 2)
        self.assertIn("NOT GRADED: not graded without a sandbox", data["output"])


class Confinement(unittest.TestCase):
    """Each graded test case is one process (tests/confine.cpp)."""

    def test_a_confined_test_program_starts_threads_but_no_process(self):
        binary = CT.LAB / "build" / "test_common"
        if not binary.exists():
            self.skipTest("build/test_common is not built (make tests)")
        r = subprocess.run([str(binary), "[confine]"], capture_output=True, text=True, timeout=60,
                           env={**os.environ, "LAB_CONFINE": "1"})
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("1 passed, 0 failed", r.stdout)


@unittest.skipUnless(SB.Sandbox().available, "no sandbox can start on this machine: " + SB.Sandbox().why)
class Sandbox(unittest.TestCase):
    """What a sandboxed test process can and cannot do (sandbox.py), with the
    first tool that starts here; SandboxBwrap repeats it with bubblewrap. Each
    check would fail without a sandbox."""
    TOOLS = ("unshare", "bwrap")

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)
        self.iso = Isolation()
        self.iso.dir = self.dir

    def tearDown(self):
        self.tmp.cleanup()

    def passes(self, body):
        return self.iso.outcome("line(event='start', test=name)\n" + body +
                                "line(event='end', test=name, status='passed')\n"
                                "line(event='summary', passed=1, failed=0, skipped=0)\n", sandbox=True,
                                tools=self.TOOLS)

    def test_a_passing_report_still_comes_through(self):
        self.assertEqual(self.passes("").status, "passed")

    def test_it_cannot_write_outside_its_scratch_folder_nor_see_the_lab(self):
        victim = self.dir / "results.json"
        victim.write_text("true results")
        with tempfile.NamedTemporaryFile(prefix="lab-outside-") as outside:  # in the machine's /tmp
            o = self.passes(f"assert not os.path.exists({str(CT.LAB / 'Makefile')!r})\n"
                            f"assert not os.path.exists({outside.name!r})\n"
                            f"try:\n    open({str(victim)!r}, 'w').write('forged')\nexcept OSError:\n    pass\n")
        self.assertEqual(o.status, "passed", o.message)
        self.assertEqual(victim.read_text(), "true results")

    def test_the_cuda_toolkit_in_use_is_shown_read_only_and_nothing_beside_it(self):
        # A toolkit outside the system's folders (unpacked without root, or
        # PyPI's wheels): a build inside must find it, and see nothing more.
        from unittest import mock
        with tempfile.TemporaryDirectory() as kit_dir:
            kit = fake_toolkit(Path(kit_dir))
            (Path(kit_dir) / "beside.txt").write_text("not the toolkit's")
            nvcc, beside = str(kit / "bin" / "nvcc"), str(Path(kit_dir) / "beside.txt")
            with mock.patch.dict(os.environ, {"NVCC": nvcc}):
                o = self.passes(f"assert os.path.exists({nvcc!r})\n"
                                f"assert not os.path.exists({beside!r})\n"
                                f"try:\n    open({nvcc!r}, 'w').write('forged')\nexcept OSError:\n    pass\n")
            self.assertEqual(o.status, "passed", o.message)
            self.assertEqual((kit / "bin" / "nvcc").read_text(), "#!/bin/sh\n")

    def test_a_daemon_it_leaves_is_killed_with_it(self):
        marker = self.dir / "out" / "daemon-alive"
        marker.parent.mkdir()
        os.chmod(marker.parent, 0o777)
        self.passes(f"import subprocess\nsubprocess.Popen(['setsid', 'sh', '-c', 'sleep 2; touch {marker}'])\n")
        import time
        time.sleep(3)
        self.assertFalse(marker.exists(), "a process the test left behind outlived it")

    def test_its_first_process_names_nothing_of_the_grading(self):
        # Its own command is its to see; the sandbox's mounts and the lab are not.
        o = self.passes("first = open('/proc/1/cmdline', 'rb').read().decode(errors='replace')\n"
                        f"assert {str(CT.LAB)!r} not in first, first\n"
                        "assert 'bind' not in first and 'mount' not in first, first\n")
        self.assertEqual(o.status, "passed", o.message)

    def test_every_mount_under_sys_is_read_only_so_a_test_cannot_raise_its_limits(self):
        # /sys/fs/cgroup (and any other mount below /sys) read-only too, as /sys
        # is: a test cannot write its cgroup's memory.max or pids.max.
        o = self.passes("mounts = [l.split() for l in open('/proc/self/mountinfo')]\n"
                        "under = [(m[4], m[5]) for m in mounts if m[4] == '/sys' or m[4].startswith('/sys/')]\n"
                        "assert under, mounts\n"
                        "assert all('ro' in opts.split(',') for _, opts in under), under\n"
                        "import glob\n"
                        "for limit in glob.glob('/sys/fs/cgroup/**/memory.max', recursive=True)[:20]:\n"
                        "    try:\n        open(limit, 'w').write('max')\n        raise SystemExit('wrote ' + limit)\n"
                        "    except OSError:\n        pass\n")
        self.assertEqual(o.status, "passed", o.message)

    def test_a_harness_leaves_no_sandbox_folder_behind(self):
        # Each harness makes a mount point for its sandboxes in the system's
        # temporary folder; it is removed when the harness ends.
        code = ("from tests.grading.harness import sandbox as SB\n"
                "box = SB.Sandbox(tools=%r)\nprint(box.root_dir if box.available else '')\n") % (self.TOOLS,)
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=CT.LAB)
        self.assertEqual(r.returncode, 0, r.stderr)
        root = r.stdout.strip()
        if root:  # the unshare sandbox makes one; bwrap's needs none
            self.assertFalse(Path(root).exists(), f"{root} outlived the harness")

    def test_its_tmp_and_shm_are_small(self):
        o = self.passes("import shutil\n"
                        "assert shutil.disk_usage('/tmp').total <= 512 << 20, shutil.disk_usage('/tmp')\n"
                        "assert shutil.disk_usage('/dev/shm').total <= 256 << 20, shutil.disk_usage('/dev/shm')\n")
        self.assertEqual(o.status, "passed", o.message)

    def test_a_build_sees_no_gpu_and_a_test_the_graded_one_only(self):
        box = SB.Sandbox(tools=self.TOOLS)
        listing = "import os\nprint(sorted(n for n in os.listdir('/dev') if n.startswith('nvidia')))"
        seen = {}
        for limits, gpu in ((SB.BUILD, None), (SB.TEST, ["nvidiactl"])):
            r = PROC.run(box.wrap([PYTHON, "-c", listing], Path("/"), limits, gpu=gpu), self.dir, 30, sandboxed=True)
            seen[limits.what] = r.output.strip()
        self.assertEqual(seen["build"], "[]")
        if Path("/dev/nvidiactl").exists():
            self.assertEqual(seen["test"], "['nvidiactl']")

    def test_a_log_it_names_goes_to_the_harness_through_a_pipe(self):
        # As the sanitizer's log and the demos' CSV: "{log}" names a pipe's end.
        g = self.iso.grading(True)
        g.opts.sandbox = SB.Sandbox(hidden=(CT.LAB,), tools=self.TOOLS)
        g.opts.sandbox.own(self.dir)
        r, results, report, log = g.sandboxed_with_pipes(["/bin/sh", "-c", 'echo written > "$1"', "sh", "{log}"],
                                                         SB.TEST, 30, self.dir / "out.log", self.dir / "stem", 0, 0,
                                                         log_cap=1 << 20)
        results.wait()
        report.wait()
        self.assertEqual((r.returncode, log.wait().read_text()), (0, "written\n"), r.output)

    def test_it_has_no_network(self):
        import socket
        with socket.socket() as server:  # a server on this machine's loopback, which a sandbox cannot reach
            server.bind(("127.0.0.1", 0))
            server.listen(1)
            port = server.getsockname()[1]
            o = self.passes(f"import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
                            "    reached = True\nexcept OSError:\n    reached = False\nassert not reached\n")
        self.assertEqual(o.status, "passed", o.message)


@unittest.skipUnless(SB.Sandbox(tools=("bwrap",)).available, "bubblewrap cannot start a sandbox here")
class SandboxBwrap(Sandbox):
    TOOLS = ("bwrap",)


class LimitsTable(unittest.TestCase):
    @unittest.skipUnless((CT.LAB / "part1_merge_path" / "reference.cu").exists(),
                         "a student copy has no INSTRUCTORS.md")
    def test_the_readmes_limits_are_the_sandboxs(self):
        readme = (CT.LAB / "INSTRUCTORS.md").read_text()
        rows = {}
        for line in readme.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if line.strip().startswith("|") and len(cells) == 4:
                rows[cells[0]] = cells[1:]
        kinds = (SB.BUILD, SB.TEST, SB.SANITIZED)
        self.assertEqual(rows["host memory, its `/tmp` and `/dev/shm` included"],
                         [SB.describe_bytes(k.memory) for k in kinds])
        self.assertEqual(rows["processes and threads"], [str(k.tasks) for k in kinds])
        self.assertEqual(rows["largest file it writes"], [SB.describe_bytes(k.file_size) for k in kinds])
        self.assertEqual(rows["private `/tmp`"], [k.tmp for k in kinds])
        self.assertEqual(rows["private `/dev/shm`"], [k.shm for k in kinds])
        prose = " ".join(readme.split())
        self.assertIn(f"{SB.NPROC_WITHOUT_CGROUP} processes per user", prose)
        self.assertIn(f"program of more than {BUILD.BINARY_CAP >> 20} MiB", prose)
        self.assertIn(f"at most `GPU_JOBS` processes (default {OPT.GPU_JOBS})", prose)
        slowest = "mergeSmall merges every size from 0 to 1024 at several splits"
        q1 = CT.read_points(CT.LAB, "part1")["Q1"]
        self.assertIn(f'"{slowest}", has {q1.timeouts[slowest]:g} s for', prose)
