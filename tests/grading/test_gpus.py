"""The harness's tests of the GPU (harness/gpus.py, trusted.py): no GPU, the
lease, the trusted runs' places, the nodes a sandbox sees."""

from tests.grading.fixtures import *  # noqa: F401,F403 (the harness's modules and the stand-ins)


class NoGpu(unittest.TestCase):
    def test_make_grade_without_a_gpu_refuses_before_building_anything(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "out"
            args = argparse.Namespace(submission=str(CT.LAB), out=str(out), student=None, base=str(Path(tmp) / "base"))
            with mock.patch.object(LOCAL, "gpu_listed", lambda: (False, "nvidia-smi lists no GPU")), \
                    mock.patch.object(LOCAL, "prepare_base", side_effect=AssertionError("built without a GPU")), \
                    mock.patch.object(LOCAL, "lease", side_effect=AssertionError("no GPU is held to refuse")):
                opts = plain_options(None)
                opts.unsandboxed = lambda: ""  # as where a sandbox starts
                status = LOCAL.cmd_grade(args, opts)
            data = json.loads((out / "results.json").read_text())
        self.assertEqual(status, 1)
        self.assertEqual(data["score"], 0)
        self.assertIn("NOT GRADED: no GPU: nvidia-smi lists no GPU", data["output"])

    def test_grade_all_without_a_gpu_refuses_before_building_and_records_nobody(self):
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "class" / "alice").mkdir(parents=True)
            grades = Path(tmp) / "grades"
            args = argparse.Namespace(submissions=str(Path(tmp) / "class"), out=str(grades), seed=None, base=None,
                                      scheduler=None)
            with mock.patch.object(LOCAL, "gpu_listed", lambda: (False, "nvidia-smi lists no GPU")), \
                    mock.patch.object(LOCAL, "prepare_base", side_effect=AssertionError("built without a GPU")):
                status = LOCAL.cmd_grade_all(args, plain_options(None))
            self.assertEqual(status, 1)
            self.assertEqual(sorted(p.name for p in grades.iterdir()), ["seed"])


class GpuLease(unittest.TestCase):
    """A grading holds its GPU alone, machine-wide (gpus.lease): no classmate's
    process runs on it meanwhile; a wait or a probe that fails for what the
    submission did not take is a lab error, never a score."""

    GPUS = [("0", "GPU-lease-test-a"), ("1", "GPU-lease-test-b")]

    def test_one_grading_at_a_time_holds_a_gpu(self):
        self.assertEqual(most_at_once(lambda: GPUS.lease(self.GPUS[:1], 30), 4, 0.2), 1)

    def test_a_grading_takes_a_gpu_no_other_holds(self):
        with GPUS.lease(self.GPUS[:1], 5) as first:
            self.assertEqual(first, {"CUDA_VISIBLE_DEVICES": "0"})
            with GPUS.lease(self.GPUS, 5) as second:
                self.assertEqual(second, {"CUDA_VISIBLE_DEVICES": "1"})

    def test_a_gpu_held_too_long_by_others_is_a_lab_error(self):
        said = []
        with GPUS.lease(self.GPUS[:1], 5):
            with self.assertRaisesRegex(GPUS.LabError, "other gradings held"):
                with GPUS.lease(self.GPUS[:1], 0.3, said.append):
                    self.fail("leased twice")
        with self.assertRaisesRegex(GPUS.LabError, "a place of"):
            with GPUS.place("lease-test", 1), GPUS.place("lease-test", 1, wait=0.3):
                self.fail("placed twice")

    def test_the_visible_gpus_are_named_by_uuid(self):
        with tempfile.TemporaryDirectory() as tmp:
            smi = Path(tmp) / "nvidia-smi"
            smi.write_text("#!/bin/sh\necho '0, GPU-aaaa-1111'\necho '1, GPU-bbbb-2222'\n")
            smi.chmod(0o755)
            env = {"PATH": f"{tmp}:{os.environ['PATH']}"}
            with mock.patch.dict(os.environ, {**env, "CUDA_VISIBLE_DEVICES": ""}):
                self.assertEqual(GPUS.visible_gpus(), [("GPU-aaaa-1111", "GPU-aaaa-1111"),
                                                       ("GPU-bbbb-2222", "GPU-bbbb-2222")])
            with mock.patch.dict(os.environ, {**env, "CUDA_VISIBLE_DEVICES": "1"}):
                self.assertEqual(GPUS.visible_gpus(), [("1", "GPU-bbbb-2222")])
            with mock.patch.dict(os.environ, {**env, "CUDA_VISIBLE_DEVICES": "GPU-aaaa"}):
                self.assertEqual(GPUS.visible_gpus(), [("GPU-aaaa", "GPU-aaaa-1111")])

    def test_a_probe_that_fails_on_a_listed_gpu_is_a_lab_error_not_no_gpu(self):
        calls = []

        def probe(base, env, opts):
            calls.append(env)
            return False, "no GPU: crashed (SIGABRT)", 0

        with mock.patch.object(GPUS, "probe_gpu", probe), mock.patch.object(GPUS, "PROBE_PAUSE", 0), \
                mock.patch.object(GPUS, "gpu_listed", lambda: (True, "GPU 0: a GPU")):
            with self.assertRaisesRegex(GPUS.LabError, "probe failed 3 times"):
                GPUS.probe_held(Path("/nonexistent"), {"CUDA_VISIBLE_DEVICES": "0"}, None)
        self.assertEqual(len(calls), GPUS.PROBE_TRIES)
        with mock.patch.object(GPUS, "probe_gpu", probe), \
                mock.patch.object(GPUS, "gpu_listed", lambda: (False, "nvidia-smi lists no GPU")):
            self.assertFalse(GPUS.probe_held(Path("/nonexistent"), {}, None)[0])  # no GPU at all: as before

    def test_a_lab_error_writes_no_score_and_says_grade_again(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "out"
            status = LOCAL.lab_error(CT.LAB, out, plain_options(None), "tester", "the probe failed")
            data = json.loads((out / "results.json").read_text())
        self.assertEqual(status, 3)
        self.assertIn("a lab error, not the submission's", data["output"])
        self.assertIn("grade it again", data["output"])


class TrustedParts(unittest.TestCase):
    def test_shared_trusted_runs_cover_their_own_parts_whoever_asks_first(self):
        # The selftest grades faults of one part each against one trusted run:
        # a first caller grading Part 1 alone must not leave Parts 2-4 without
        # trusted results (each of their questions then scored 0, measured).
        from tests.grading.harness import trusted as TR
        with tempfile.TemporaryDirectory() as tmp:
            runs = TR.TrustedRuns(Path(tmp), plain_options(None), Path(tmp) / "logs")
            seen = []
            with mock.patch.object(TR.TrustedRuns, "_run_all", lambda self, parts, env: seen.append(list(parts))):
                runs.run_all({"CUDA_VISIBLE_DEVICES": "0"})
                runs.part("part2", False, {"CUDA_VISIBLE_DEVICES": "0"})
            runs.close()
        self.assertEqual(seen, [[p for p, _ in CT.PARTS]])


class TrustedLargeSlots(unittest.TestCase):
    def test_trusted_large_processes_take_turns_machine_wide(self):
        self.assertEqual(most_at_once(lambda: GPUS.place("test", 2), 5, 0.3), 2)
        self.assertEqual(GPUS.large_jobs(143771, 4), min(4, (os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") >> 20)
                                                    // GPUS.LARGE_PROCESS_MIB) or 1)
        self.assertEqual(GPUS.large_jobs(16000, 4), 1)


class GpuNodes(unittest.TestCase):
    def test_a_sandbox_is_shown_the_graded_gpu_node_only(self):
        with tempfile.TemporaryDirectory() as tmp:
            driver, dev = Path(tmp) / "gpus", Path(tmp) / "dev"
            dev.mkdir()
            for name in ("nvidia0", "nvidia1", "nvidia3", "nvidiactl", "nvidia-uvm", "nvidia-caps", "null"):
                (dev / name).touch()
            for bus, minor, uuid in (("0000:07:00.0", 0, "GPU-aaaa"), ("0000:0f:00.0", 3, "GPU-bbbb")):
                (driver / bus).mkdir(parents=True)
                (driver / bus / "information").write_text(f"Model: \t\t NVIDIA H200\nGPU UUID: \t {uuid}\n"
                                                           f"Device Minor: \t {minor}\n")
            self.assertEqual(SB.gpu_nodes("GPU-bbbb", driver, dev), ["nvidia-caps", "nvidia-uvm", "nvidiactl",
                                                                      "nvidia3"])
            self.assertIsNone(SB.gpu_nodes("GPU-cccc", driver, dev))  # not the driver's: every node, said so


class GpuListed(unittest.TestCase):
    def listed(self, script: str):
        with tempfile.TemporaryDirectory() as tmp:
            smi = Path(tmp) / "nvidia-smi"
            smi.write_text("#!/bin/sh\n" + script)
            smi.chmod(0o755)
            with mock.patch.dict(os.environ, {"PATH": f"{tmp}:{os.environ['PATH']}"}):
                return GPUS.gpu_listed()

    def test_nvidia_smi_is_asked_before_anything_is_built(self):
        self.assertEqual(self.listed("echo 'GPU 0: NVIDIA H200 (UUID: GPU-aaaa)'"),
                         (True, "GPU 0: NVIDIA H200 (UUID: GPU-aaaa)"))
        ok, why = self.listed("echo 'NVIDIA-SMI has failed because it could not communicate with the driver' >&2\n"
                              "exit 9")
        self.assertFalse(ok)
        self.assertIn("could not communicate with the driver", why)
        with mock.patch.object(shutil, "which", return_value=None):
            self.assertEqual(GPUS.gpu_listed(), (False, "no NVIDIA driver: nvidia-smi is not installed"))
