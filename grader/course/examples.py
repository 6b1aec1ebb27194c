"""An exercise's visible examples by name: chosen with `run -k`, found for `repro`; hidden names are never read."""

from __future__ import annotations

import fnmatch

from grader.course.cases import Case, load_exercise_cases
from grader.course.checker import Checker, load_checker
from grader.course.exercise import Exercise
from grader.errors import UsageError, did_you_mean

GLOB = "*?["


def examples_checker(exercise: Exercise) -> Checker:
    """The checker that builds the examples: the exercise's own, or in a learner bundle the stored examples."""
    if exercise.precomputed is not None:
        from grader.course.precomputed import load_precomputed

        return load_precomputed(exercise.precomputed)
    return load_checker(exercise.checker)


def visible(exercise: Exercise, checker: Checker | None = None) -> list[Case]:
    """The examples, checked as grading checks them; the hidden suite's files are not even opened."""
    return load_exercise_cases(exercise, checker or examples_checker(exercise), include_hidden=False)


def matches(name: str, pattern: str) -> bool:
    """pytest's -k for a plain word (a part of the name, in any case); a pattern with * ? or [ matches the whole name."""
    name, pattern = name.lower(), pattern.lower()
    if any(character in pattern for character in GLOB):
        return fnmatch.fnmatchcase(name, pattern)
    return pattern in name


def select(exercise: Exercise, pattern: str, distributed: tuple[str, int] | None = None) -> set[str]:
    """The names of the examples `pattern` matches, and with `distributed` (`--ring 4`: an option and a world size) of
    that distributed suite's cases too; none is a usage error listing them."""
    cases = visible(exercise)
    if distributed is not None:
        cases += _suite_cases(exercise, *distributed)
    chosen = {case.name for case in cases if matches(case.name, pattern)}
    if not chosen:
        raise UsageError(f"-k {pattern!r} matches no example of {exercise.name}"
                         f"{did_you_mean(pattern, [case.name for case in cases])}; its examples: {_names(cases)}")
    return chosen


def _suite_cases(exercise: Exercise, option: str, world: int) -> list[Case]:
    """The cases `--ranks N` (the first suite) or `--OPTION N` runs; none where there is no such suite or size
    (grading says so, with the sizes there are)."""
    checker = examples_checker(exercise)
    suites = checker.suites() if hasattr(checker, "suites") else {}  # a learner bundle may hold no suite
    suite = next(iter(suites.values()), None) if option == "ranks" else suites.get(option)
    return suite.cases(world) if suite is not None else []


def find(exercise: Exercise, name: str, checker: Checker | None = None) -> Case:
    """The example called `name`. A hidden case's name gets the same answer as a made-up one: which names the
    hidden suite uses is not for this command to confirm."""
    cases = visible(exercise, checker)
    for case in cases:
        if case.name == name:
            return case
    raise UsageError(f"{exercise.name} has no example called {name!r}{did_you_mean(name, [c.name for c in cases])}; "
                     f"its examples: {_names(cases)}")


def _names(cases: list[Case]) -> str:
    return ", ".join(case.name for case in cases) or "none"
