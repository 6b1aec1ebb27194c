"""The live course's catalogues, held to what their last valid `grader validate` recorded, and spot-checked here.

`grader validate EX` grades every mistake and variant on every case (remembered across runs) and, when
the exercise is valid, writes solutions/EX/validated.json. Here, for every exercise of the live course:
the record stands for the exercise as it is (a change not validated again fails, naming the command), it
says every mistake is caught and named and every variant accepted, and the grader as it is now agrees on
a sample: each mistake on a case that names it, each variant on a spread of cases. The whole catalogue
machinery is tested on a small fixture course (tests/test_validate.py), so this file does not grow with
the course: one case per mistake, a dozen per variant.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.course.cases import load_exercise_cases
from grader.course.checker import load_checker
from grader.course.exercise import load_course
from grader.course.mistakes import as_submission
from grader.grading.pipeline import grade, load_reference, load_trusted
from grader.grading.request import Run
from grader.grading.diagnosis import catalogue
from grader.instructor import record
from grader.instructor.verdicts import catalogue_files, missing_constants

REPO = Path(__file__).resolve().parent.parent
EXERCISES = {exercise.name: exercise for exercise in load_course(REPO)}
SAMPLE = 12  # cases a variant is graded on here, spread over the suite (validate grades it on every one)


def _files(kind: str) -> list:
    found = [pytest.param(name, path, id=f"{name}/{path.stem}") for name, exercise in EXERCISES.items()
             for path in catalogue_files(getattr(exercise, kind))]
    return found or [pytest.param(None, None, marks=pytest.mark.skip(reason=f"no {kind} in any catalogue"))]


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_the_record_of_the_last_validate_stands_for_the_exercise_as_it_is(name):
    exercise = EXERCISES[name]
    assert record.stale(exercise) == ""
    found = record.read(exercise)
    assert sorted(found.mistakes) == [path.stem for path in catalogue_files(exercise.mistakes)]
    assert found.variants == [path.stem for path in catalogue_files(exercise.variants)]


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_hidden_suite_is_described_and_covers_every_function(name):
    exercise = EXERCISES[name]
    checker = load_checker(exercise.checker)
    hidden = [case for case in load_exercise_cases(exercise, checker) if case.hidden]
    assert hidden and all(case.about for case in hidden)
    assert {case.function for case in hidden} == set(checker.functions)


@pytest.mark.parametrize("name, path", _files("mistakes"))
def test_mistake_is_caught_and_named_as_recorded(name, path, tmp_path):
    exercise = EXERCISES[name]
    assert missing_constants(path, exercise) == ""
    entry = record.read(exercise).mistakes[path.stem]
    assert entry.caught_by, f"{path.stem} passes every case"
    runnable = as_submission(path, exercise.solution, tmp_path)
    # Several mistakes can agree on one case; over the whole suite none may be named more often than this one.
    assert entry.named_on and entry.named_most, entry
    if entry.only_distributed:  # caught by the distributed suite alone: named there, as a grade names it
        from grader.grading.distributed import DistributedRun, run_case

        suite = next(iter(load_trusted(exercise, "submit", True).suites.values()))
        case = next(case for case in suite.all_cases() if case.name == entry.named_on[0])
        result = run_case(Run(exercise, runnable, "submit", "cpu"),
                          DistributedRun(suite, suite.world_of(case), load_reference(exercise)), case)
        # Caught by the rule the mistake says it breaks, or by wrong values: never by a crash or an error of its own.
        violates = next(m.violates for m in catalogue(exercise).mistakes if m.stem == path.stem)
        assert result.outcome.value == "failed" and result.extra.get("violates", "") == violates, (
            result.outcome, result.message[:200])
        assert result.diagnosis and result.diagnosis.mistake == path.stem, (result.message, result.diagnosis)
        return
    case = entry.named_on[0]
    (result,) = [r for r in grade(Run(exercise, runnable, "submit", "cpu", only={case})).results if r.name == case]
    assert result.outcome.counts_as_failure and result.diagnosis and result.diagnosis.mistake == path.stem, (
        result.outcome, result.message, result.diagnosis)


@pytest.mark.parametrize("name, path", _files("variants"))
def test_variant_is_accepted_on_a_spread_of_cases(name, path):
    exercise = EXERCISES[name]
    assert path.stem in record.read(exercise).variants
    cases = load_exercise_cases(exercise, load_checker(exercise.checker))
    step = max(1, len(cases) // SAMPLE)
    sample = {case.name for case in cases[::step]}
    report = grade(Run(exercise, path, "submit", "cpu", only=sample, diagnose=False))
    failed = [f"{r.name}: {r.message}" for r in report.results if r.name in sample and r.outcome.counts_as_failure]
    assert not failed and {r.name for r in report.results} >= sample, failed[:5]


def test_a_changed_exercise_makes_its_record_stale(course):
    exercise = next(exercise for exercise in load_course(course) if record.read(exercise))
    assert record.stale(exercise) == ""
    mistake = catalogue_files(exercise.mistakes)[0]
    mistake.write_text(mistake.read_text() + "\n# changed\n")
    assert "changed since its last valid validate" in record.stale(exercise)
    record.path_of(exercise).unlink()
    assert record.stale(exercise).startswith("no solutions/")

