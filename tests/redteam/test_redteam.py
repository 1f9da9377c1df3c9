"""Tests of the planted faults and the attacks (tests/redteam/):
every edit still applies, every attack still builds its files."""

from tests.grading.fixtures import *  # noqa: F401,F403 (the harness's modules and the stand-ins)


class Faults(unittest.TestCase):
    @unittest.skipUnless((CT.LAB / "part1_merge_path" / "reference.cu").exists(), "a student copy has no reference")
    def test_every_planted_fault_applies_to_the_reference(self):
        from tests.redteam import faults as F

        reference = F.reference_submission(CT.LAB)
        self.assertEqual(sorted(reference), sorted(MANIFEST))
        self.assertNotIn("reference_search.cuh", "".join(reference.values()))
        self.assertNotRegex("".join(reference.values()), r'#include "[^"]*reference')  # headers inlined
        questions = CT.all_questions(CT.LAB)
        for fault in F.FAULTS:
            files = F.apply(fault, reference)
            self.assertNotEqual(files, reference, fault.name)
            self.assertTrue(set(fault.expect) <= set(questions), fault.name)
            self.assertTrue(any(v != "full" for v in fault.expect.values()), fault.name)

    @unittest.skipUnless((CT.LAB / "part1_merge_path" / "reference.cu").exists(), "a student copy has no reference")
    def test_every_hostile_submission_hands_in_the_manifest_files(self):
        from tests.redteam import faults as F
        from tests.redteam import attacks as A

        skeleton, reference = F.skeleton_submission(CT.LAB), F.reference_submission(CT.LAB)
        for attack in A.ATTACKS:
            files = attack.make(CT.LAB, skeleton, reference)
            self.assertEqual(sorted(files), sorted(MANIFEST), attack.name)
            self.assertNotEqual(files, reference, attack.name)
