"""Every exercise's catalogue against its cases: every correct variant accepted, every known mistake caught and named.

Parametrized over the exercises of the live course, so adding an exercise adds its tests and
removing one removes them.
"""

from __future__ import annotations

from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from grader.course.cases import load_exercise_cases
from grader.course.checker import load_checker
from grader.course.exercise import load_course
from grader.instructor.verdicts import Graded, VerdictCache, grade_catalogue, missing_constants

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
    exercise = EXERCISES[name]
    cases = load_exercise_cases(exercise, load_checker(exercise.checker))
    mistakes, variants = grade_catalogue(exercise, cases, lambda line: None, VerdictCache(exercise, enabled=False))
    return {item.path.name: item for item in mistakes + variants}


@cache
def matrix(name: str):
    """What the diagnosis names for each mistake on each case that catches it, as `grader validate` works it out."""
    from grader.grading.pipeline import load_reference
    from grader.instructor import matrix as catalogue_matrix

    exercise = EXERCISES[name]
    checker = load_checker(exercise.checker)
    found = graded(name)
    mistakes = [item for item in found.values() if item.path.parent == exercise.mistakes]
    variants = [item for item in found.values() if item.path.parent == exercise.variants]
    return catalogue_matrix.build(exercise, checker, load_reference(exercise), load_exercise_cases(exercise, checker),
                                  mistakes, variants)


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_hidden_suite_is_described_and_covers_every_function(name):
    from grader.course.cases import load_exercise_cases
    from grader.course.checker import load_checker

    exercise = EXERCISES[name]
    checker = load_checker(exercise.checker)
    hidden = [case for case in load_exercise_cases(exercise, checker) if case.hidden]
    assert hidden and all(case.about for case in hidden)
    assert {case.function for case in hidden} == set(checker.functions)


@pytest.mark.parametrize("name, path", _files("variants"))
def test_variant_is_accepted_on_every_case(name, path):
    item = graded(name)[path.name]
    assert item.passed, [f"{r.name}: {r.message}" for r in item.results if r.outcome.counts_as_failure][:5]


@pytest.mark.parametrize("name, path", _files("mistakes"))
def test_mistake_is_rejected_and_named(name, path):
    item = graded(name)[path.name]
    assert missing_constants(path, EXERCISES[name]) == ""
    assert item.catchers, f"{path.stem} passes every case"
    (row,) = [row for row in matrix(name).rows if row.stem == path.stem]
    # An all-NaN answer is diagnosed as an overflow, whichever mistake caused it: the rest must name this one.
    named = Counter(stem for stem in row.named.values() if stem and stem != "non-finite")
    assert named, f"{path.stem} was never diagnosed"
    # Several mistakes can agree on one case; over the whole suite none may be named more often than this one.
    assert named[path.stem] == max(named.values()), named.most_common(3)


