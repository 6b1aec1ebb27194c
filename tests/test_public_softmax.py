"""Public softmax code, shimmed to exercise 01's contract (tests/fixtures/public/): the max-subtracted ones (Triton's
fused-softmax tutorial, SciPy's, candle's) are accepted; llm.c's, whose running max starts at -10000, and the same
with a -1e6 or -5e4 seed, are refused on slices whose every score lies below the seed, named by the catalogue."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO, make_course

from grader.course.exercise import find_exercise
from grader.grading.pipeline import grade
from grader.grading.request import Run

EXERCISE = "01-stable-softmax"
PUBLIC = FIXTURES / "public"
SENTINEL = "Starts the max at a finite sentinel (-10000)"


@pytest.fixture(scope="module")
def softmax_exercise(tmp_path_factory: pytest.TempPathFactory):
    if not (REPO / "exercises" / EXERCISE).is_dir():
        pytest.skip(f"the repository has no exercise {EXERCISE}")
    root = make_course(tmp_path_factory.mktemp("public") / "course", [EXERCISE])
    return find_exercise(root, EXERCISE)


@pytest.mark.parametrize("name", ["triton_fused_softmax.py", "scipy_special_softmax.py",
                                  "candle_softmax_last_dim.py"])
def test_a_max_subtracted_softmax_is_accepted(softmax_exercise, name):
    report = grade(Run(softmax_exercise, PUBLIC / name, "submit", "cpu"))
    failed = [f"{r.name}: {r.message}" for r in report.results if r.outcome.counts_as_failure]
    assert report.status == "passed" and not failed, failed


@pytest.mark.parametrize("seed, dtypes", [
    ("-10000.0", {"float64", "float32", "bfloat16", "float16"}),   # llm.c as it is
    ("-1.0e6", {"float64", "float32", "bfloat16"}),                 # float16 holds no -1e6: its seed is -inf there
    ("-5.0e4", {"float64", "float32", "bfloat16", "float16"}),
])
def test_a_finite_seed_of_the_max_is_refused_and_named(softmax_exercise, tmp_path: Path, seed, dtypes):
    shim = tmp_path / "softmax.py"
    shim.write_text((PUBLIC / "llmc_softmax_forward.py").read_text().replace("SEED = -10000.0", f"SEED = {seed}"))
    report = grade(Run(softmax_exercise, shim, "submit", "cpu"))
    failed = [r for r in report.results if r.outcome.counts_as_failure]
    assert report.status == "failed" and failed
    # Only slices far below zero catch it, in each dtype that holds scores below the seed; each failure is named.
    assert all("minus" in r.name for r in failed), [r.name for r in failed]
    assert {r.name.split("-")[0] for r in failed} == dtypes, [r.name for r in failed]
    named = Counter(r.diagnosis.title if r.diagnosis else None for r in failed)
    assert set(named) == {SENTINEL}, named
