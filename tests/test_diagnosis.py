"""Diagnosis: loaded before any learner code, silent when no catalogued mistake agrees, never for an overflow."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import ring_exercise
from grader.grading import grade

REPO = Path(__file__).resolve().parent.parent

def reference_text() -> str:
    return ring_exercise().solution.read_text(encoding="utf-8")


def test_the_catalogue_is_loaded_before_the_learners_file():
    """Trusted first: a module the grader would import after the learner's code ran could be the learner's."""
    code = ("import sys; from pathlib import Path; from grader.course import load_exercise; "
            "from grader import grading, supervisor; "
            "ex = load_exercise(Path('.'), Path('exercises/07-ring-attention')); "
            "ready = supervisor.Worker.wait_ready\n"
            "def check(self, limit):\n"
            "    if self.load_result is None:\n"
            "        d = sys.modules.get('grader.diagnosis')\n"
            "        print('catalogue' if d and d._CATALOGUES else 'none', 'diagnosis' if d else 'none')\n"
            "    return ready(self, limit)\n"
            "supervisor.Worker.wait_ready = check\n"
            "r = grading.grade(ex, ex.solution, 'run', 'cpu'); assert r.status == 'passed'")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["catalogue", "diagnosis"]


def test_an_all_nan_answer_gets_its_own_diagnosis(tmp_path):
    """Every output NaN says the arithmetic overflowed, not which catalogued mistake also overflows."""
    wrong = tmp_path / "nan.py"
    wrong.write_text(reference_text().replace("return output / total", "return output * float('nan')"), encoding="utf-8")
    report = grade(ring_exercise(), wrong, "run", "cpu")
    failed = [r for r in report.results if r.outcome.counts_as_failure]
    assert failed and {r.diagnosis.mistake for r in failed} == {"non-finite"}
    assert "NaN" in failed[0].diagnosis.title


def test_an_uncatalogued_mistake_gets_no_diagnosis(tmp_path):
    wrong = tmp_path / "doubled.py"
    # Twice the right output: wrong everywhere, and like no catalogued mistake.
    wrong.write_text(reference_text().replace("return output / total", "return 2 * output / total"), encoding="utf-8")
    report = grade(ring_exercise(), wrong, "run", "cpu")
    failed = [r for r in report.results if r.outcome.counts_as_failure]
    assert failed and all(r.function == "ring_attention" for r in failed)
    assert all(r.diagnosis is None for r in failed)


def test_a_catalogued_mistake_written_differently_is_named(tmp_path):
    if not (ring_exercise().mistakes / "add_without_rescale.py").is_file():
        import pytest

        pytest.skip("the catalogue has no add_without_rescale yet")
    wrong = tmp_path / "no_rescale.py"
    wrong.write_text(reference_text().replace("acc_scale = torch.exp(acc_max - new_max)", "acc_scale = 1.0")
                     .replace("chunk_scale = torch.exp(chunk_max - new_max)", "chunk_scale = 1.0"), encoding="utf-8")
    report = grade(ring_exercise(), wrong, "run", "cpu")
    names = {r.diagnosis.mistake for r in report.results if r.diagnosis}
    assert names == {"add_without_rescale"}
