"""Every exercise's catalogue against its cases: every correct variant accepted, every known mistake caught and named.

Parametrized over the exercises of the live course, so adding an exercise adds its tests and
removing one removes them.
"""

from __future__ import annotations

import shutil
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from grader.course.cases import load_exercise_cases
from grader.course.checker import load_checker
from grader.course.exercise import load_course
from grader.grading.diagnosis import catalogue
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
    """Every mistake and variant of one exercise graded once on every case (the slow part of this file). Where
    exercise.yaml declares a distributed suite, every variant, and every mistake no ordinary case catches, is
    graded on the suite's cases too (`grader validate` grades them all there)."""
    exercise = EXERCISES[name]
    checker = load_checker(exercise.checker)
    cases = load_exercise_cases(exercise, checker)
    verdicts = VerdictCache(exercise, enabled=False)
    mistakes, variants = grade_catalogue(exercise, cases, lambda line: None, verdicts)
    if exercise.distributed is not None:
        _grade_distributed(exercise, checker, variants + [item for item in mistakes if not item.catchers], verdicts)
    return {item.path.name: item for item in mistakes + variants}


def _grade_distributed(exercise, checker, items: list[Graded], verdicts: VerdictCache) -> None:
    from grader.course import mistakes
    from grader.grading.pipeline import load_reference
    from grader.instructor.verdicts import grade_group

    suite = next(iter(checker.suites().values()))
    reference, folder = load_reference(exercise), mistakes.temporary_folder()
    try:
        for item in items:
            runnable = item.path if item.path.parent == exercise.variants else \
                mistakes.as_submission(item.path, exercise.solution, folder)
            item.results += grade_group(exercise, suite, suite.all_cases(), reference, runnable, verdicts)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


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
    ordinary = {case.name for case in load_exercise_cases(EXERCISES[name], load_checker(EXERCISES[name].checker))}
    if not set(item.catchers) & ordinary:
        # Caught by the distributed suite alone, where the diagnosis names no mistake: it must be caught there by
        # the rule it says it breaks, or by wrong values (never by a crash or an error of its own).
        violates = next(m.violates for m in catalogue(EXERCISES[name]).mistakes if m.stem == path.stem)
        caught = [r for r in item.results if r.outcome.counts_as_failure]
        assert all(r.outcome.value == "failed" and r.extra.get("violates", "") == violates for r in caught), \
            [(r.name, r.outcome.value, r.message[:100]) for r in caught]
        return
    (row,) = [row for row in matrix(name).rows if row.stem == path.stem]
    # An all-NaN answer is diagnosed as an overflow, whichever mistake caused it: the rest must name this one.
    named = Counter(stem for stem in row.named.values() if stem and stem != "non-finite")
    assert named, f"{path.stem} was never diagnosed"
    # Several mistakes can agree on one case; over the whole suite none may be named more often than this one.
    assert named[path.stem] == max(named.values()), named.most_common(3)


