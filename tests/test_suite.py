"""Every exercise's catalogue against its cases: every correct variant accepted, every known mistake caught and named.

Parametrized over the exercises of the live course, so adding an exercise adds its tests and
removing one removes them.
"""

from __future__ import annotations

from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from grader.catalogue_check import Graded, grade_catalogue, missing_constants
from grader.course import load_course

REPO = Path(__file__).resolve().parent.parent
EXERCISES = {exercise.name: exercise for exercise in load_course(REPO)}


def _files(kind: str) -> list:
    found = []
    for name, exercise in EXERCISES.items():
        folder = getattr(exercise, kind)
        found += [pytest.param(name, path, id=f"{name}/{path.stem}") for path in sorted(folder.glob("*.py"))
                  if not path.name.startswith("_")] if folder.is_dir() else []
    return found or [pytest.param(None, None, marks=pytest.mark.skip(reason=f"no {kind} in any catalogue"))]


@cache
def graded(name: str) -> dict[str, Graded]:
    """Every mistake and variant of one exercise graded once on every case (the slow part of this file)."""
    mistakes, variants = grade_catalogue(EXERCISES[name], lambda line: None)
    return {item.path.name: item for item in mistakes + variants}


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_hidden_suite_is_described_and_covers_every_function(name):
    from grader.cases import load_exercise_cases
    from grader.checker import load_checker

    exercise = EXERCISES[name]
    checker = load_checker(exercise.checker)
    hidden = [case for case in load_exercise_cases(exercise, checker) if case.hidden]
    assert hidden and all(case.about for case in hidden)
    assert {case.function for case in hidden} == set(checker.functions)


@pytest.mark.parametrize("name, path", _files("variants"))
def test_variant_is_accepted_on_every_case(name, path):
    report = graded(name)[path.name].report
    failed = [f"{r.name}: {r.message}" for r in report.results if r.outcome.counts_as_failure]
    assert report.status == "passed", report.load_error or failed[:5]


@pytest.mark.parametrize("name, path", _files("mistakes"))
def test_mistake_is_rejected_and_named(name, path):
    item = graded(name)[path.name]
    assert missing_constants(path) == ""
    assert item.report.status == "failed", f"{path.stem}: {item.report.load_error or 'passes every case'}"
    # An all-NaN answer is diagnosed as an overflow, whichever mistake caused it: the rest must name this one.
    named = Counter(r.diagnosis.mistake for r in item.report.results
                    if r.diagnosis and r.diagnosis.mistake != "non-finite")
    assert named, f"{path.stem} was never diagnosed"
    # Several mistakes can agree on one case; over the whole suite none may be named more often than this one.
    assert named[path.stem] == max(named.values()), named.most_common(3)


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_hidden_failures_show_no_inputs(name):
    items = [item for item in graded(name).values() if item.report.status == "failed"]
    hidden = [r for item in items[:1] for r in item.report.results if r.hidden and r.outcome.counts_as_failure]
    for result in hidden:
        assert not (result.inputs or result.details or result.traceback or result.stdout or result.stderr)
