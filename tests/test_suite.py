"""The hidden suite against the catalogue: every correct variant accepted, every known mistake caught and named."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from grader.catalogue_check import Graded, grade_catalogue, missing_constants
from grader.course import load_course

REPO = Path(__file__).resolve().parent.parent
EXERCISE = load_course(REPO)[0]
MISTAKES = sorted(EXERCISE.mistakes.glob("*.py")) if EXERCISE.mistakes.is_dir() else []
VARIANTS = sorted(EXERCISE.variants.glob("*.py")) if EXERCISE.variants.is_dir() else []


def _params(paths: list[Path], what: str) -> list:
    if not paths:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"no {what} in the catalogue yet"))]
    return [pytest.param(path, id=path.stem) for path in paths]


@pytest.fixture(scope="module")
def graded() -> dict[str, Graded]:
    """Every mistake and variant graded once on every case, two at a time (the slow part of this file)."""
    mistakes, variants = grade_catalogue(EXERCISE, lambda line: None)
    return {item.path.name: item for item in mistakes + variants}


def test_hidden_suite_is_large_and_described():
    from grader.cases import load_suites
    from grader.checkers import get_checker

    checker = get_checker(EXERCISE.checker)
    cases = load_suites(EXERCISE.examples, EXERCISE.hidden_files(), checker.FUNCTIONS, checker.validate, True)
    hidden = [case for case in cases if case.hidden]
    assert len(hidden) >= 150
    assert all(case.about for case in hidden)
    assert {case.function for case in hidden} == set(checker.FUNCTIONS)


def test_at_least_eight_variants():
    if not VARIANTS:
        pytest.skip("no variants in the catalogue yet")
    assert len(VARIANTS) >= 8


@pytest.mark.parametrize("path", _params(VARIANTS, "variants"))
def test_variant_is_accepted_on_every_case(graded, path):
    report = graded[path.name].report
    failed = [f"{r.name}: {r.message}" for r in report.results if r.outcome.counts_as_failure]
    assert report.status == "passed", report.load_error or failed[:5]


@pytest.mark.parametrize("path", _params(MISTAKES, "mistakes"))
def test_mistake_is_rejected_and_named(graded, path):
    item = graded[path.name]
    assert missing_constants(path) == ""
    assert item.report.status == "failed", f"{path.stem}: {item.report.load_error or 'passes every case'}"
    # An all-NaN answer is diagnosed as an overflow, whichever mistake caused it: the rest must name this one.
    named = Counter(r.diagnosis.mistake for r in item.report.results if r.diagnosis and r.diagnosis.mistake != "non-finite")
    assert named, f"{path.stem} was never diagnosed"
    # Several mistakes can agree on one case; over the whole suite none may be named more often than this one.
    assert named[path.stem] == max(named.values()), named.most_common(3)


@pytest.mark.parametrize("path", _params(MISTAKES[:1], "mistakes"))
def test_hidden_failures_show_no_inputs(graded, path):
    hidden = [r for r in graded[path.name].report.results if r.hidden and r.outcome.counts_as_failure]
    assert hidden
    for result in hidden:
        assert not (result.inputs or result.details or result.traceback or result.stdout or result.stderr)
