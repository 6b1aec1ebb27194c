"""Exercise 07's scores far below any finite sentinel: a running max started at one fails, every correct design passes."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch
from conftest import ring_checker, ring_exercise

from grader.course import mistakes
from grader.grading import compare
from grader.grading.diagnosis import _describe
from grader.grading.pipeline import grade, load_trusted
from grader.grading.request import Run

FAR_BELOW = {"ring-scores-near-minus-1e30", "ring-scores-near-minus-1e300", "ring-float32-scores-near-minus-1e38"}


def started_at(sentinel: str, tmp_path: Path) -> Path:
    """The reference with its running max started at `sentinel` instead of the first chunk's max."""
    exercise = ring_exercise()
    path = tmp_path / "ring_attention.py"
    path.write_text(mistakes.compose(exercise.mistakes / "finite_sentinel_max.py", exercise.solution)
                    .replace("-1e4)", f"{sentinel})"))
    assert f"new_full((*batch_rows, 1), {sentinel})" in path.read_text()
    return path


def far_below(path: Path) -> dict:
    report = grade(Run(ring_exercise(), path, "submit", "cpu", only=FAR_BELOW, diagnose=False))
    assert {result.name for result in report.results} == FAR_BELOW
    return {result.name: result for result in report.results}


def test_the_cases_are_in_the_hidden_suite():
    names = {case.name for case in load_trusted(ring_exercise(), "submit").cases if case.hidden}
    assert FAR_BELOW <= names


@pytest.mark.parametrize("sentinel", ["-1e4", "-1e10"])
def test_a_running_max_started_at_a_finite_sentinel_fails_them(sentinel, tmp_path):
    results = far_below(started_at(sentinel, tmp_path))
    assert all(result.outcome.counts_as_failure for result in results.values()), \
        {name: result.outcome for name, result in results.items()}


def test_the_reference_passes_them_in_the_sandbox():
    results = far_below(ring_exercise().solution)
    assert all(result.passed for result in results.values()), {name: r.message for name, r in results.items()}


def test_every_correct_variant_passes_them():
    """In the grader's own process, as the diagnosis runs a catalogue: each variant on each case."""
    exercise, checker = ring_exercise(), ring_checker()
    cases = [case for case in load_trusted(exercise, "submit").cases if case.name in FAR_BELOW]
    variants = sorted(exercise.variants.glob("*.py"))
    assert len(cases) == 3 and variants
    for path in variants:
        spec = importlib.util.spec_from_file_location(f"variant_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for case in cases:
            inputs = checker.build_inputs(case.function, case.params)
            expected = checker.expected(case.function, inputs)
            copies = [[tensor.clone() for tensor in arg] if isinstance(arg, list) else arg.clone()
                      for arg in inputs.args]
            with torch.no_grad():
                value = module.ring_attention(*copies)
            verdict = compare.compare_outputs(_describe(value), ("output",), expected,
                                              compare.OutputType(inputs.output_dtype(), "cpu"), None, checker.tolerance)
            assert verdict.passed, (path.stem, case.name, verdict.message)
