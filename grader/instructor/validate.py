"""The instructor's check: cases load, the reference passes all, the starter is not attempted, hints exist, and
what the catalogue of mistakes and variants says about the cases (grader/instructor/matrix.py)."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any, Callable

from grader.course.blame import course_frame, where
from grader.course.cases import load_exercise_cases
from grader.course.checker import load_checker
from grader.course.exercise import Exercise, check_forbidden
from grader.errors import ConfigError, GraderError
from grader.grading.case import Judge
from grader.grading.pipeline import grade, load_reference
from grader.grading.request import Run
from grader.instructor import matrix, record, verdicts
from grader.instructor.declared import coverage_check, liveness_checks
from grader.results import Outcome
from grader.results.validation import Check, Validation


@dataclass
class Loaded:
    """What validate loaded of an exercise before grading anything: its checker, its cases, and its distributed
    suites with every case of each (by option name)."""

    exercise: Exercise
    checker: Any
    cases: list
    suites: dict
    extra: dict

    @property
    def distributed(self) -> tuple[Any, list] | None:
        """The first distributed suite that has cases, with its cases; None where none has."""
        return next(((suite, self.extra[name]) for name, suite in self.suites.items() if self.extra[name]), None)


def validate_exercise(exercise: Exercise, progress: Callable[[str], None] = lambda line: None,
                      use_cache: bool = True) -> Validation:
    """Run every authoring check for one exercise."""
    from grader.grading.case import keep_audited_inputs
    from grader.sandbox import zygote

    keep_audited_inputs()  # every file is graded on the same cases: each case built once
    with zygote.held():  # every grade below forks its workers from one preloaded process
        return _validate(exercise, progress, use_cache)


def _validate(exercise: Exercise, progress: Callable[[str], None], use_cache: bool) -> Validation:
    started = time.monotonic()
    validation = Validation(exercise.name)
    add = validation.checks.append
    for path, what in ((exercise.statement, "statement"), (exercise.stub, "learner stub"),
                       (exercise.starter, "starter copy of the stub"), (exercise.solution, "reference solution")):
        add(Check(f"{what} exists", path.is_file(), str(path.relative_to(exercise.root))))
    hints = exercise.hint_files()
    empty = [path.name for path in hints if not path.read_text(encoding="utf-8").strip()]
    add(Check("hints present", len(hints) >= 1 and not empty,
              f"{len(hints)} hint files" + (f"; empty: {', '.join(empty)}" if empty else "")))
    problems = _hint_problems(exercise)
    add(Check("hints numbered 1, 2, 3, ... and written in .md", not problems, "; ".join(problems)))
    unknown = _hint_functions_unknown(exercise)
    add(Check("hints name functions of the stub", not unknown, "; ".join(unknown)))
    if exercise.stub.is_file() and exercise.starter.is_file():
        same = exercise.stub.read_bytes() == exercise.starter.read_bytes()
        add(Check("learner stub is its starter copy", same, "" if same else
                  f"{exercise.stub.relative_to(exercise.root)} differs from {exercise.starter.relative_to(exercise.root)}"
                  f": grader reset would give learners another file"))
    # An error in the course's files (a key, an operator, a case) is raised, as every command says it: one line,
    # `error: PATH:LINE: ...`, exit 2.
    checker = load_checker(exercise.checker)
    check_forbidden(exercise)
    cases = load_exercise_cases(exercise, checker)
    counts = {suite: sum(case.suite == suite for case in cases) for suite in ("examples", "hidden")}
    suites = checker.suites()
    extra = {name: suite.all_cases() for name, suite in suites.items()}
    add(Check("case files load", True, f"{counts['examples']} examples, {counts['hidden']} hidden"
              + "".join(f", {len(found)} in --{name}" for name, found in extra.items())))
    if not (exercise.solution.is_file() and exercise.starter.is_file()):
        return validation
    try:
        _grade_checks(Loaded(exercise, checker, cases, suites, extra), validation, progress, use_cache)
    except ConfigError:  # the reference does not load: an error in the course's files, as everywhere
        raise
    except GraderError as error:  # the checker or a rank program raised, or answered what no one can be judged by
        add(Check("the course's own code runs", False, str(error)))
    except Exception as error:  # a distributed suite's own code raised while building a case
        if course_frame(error, exercise.root) is None:
            raise
        add(Check("the course's own code runs", False, f"the course is broken: {where(error, exercise.root)}"))
    validation.timing["seconds"] = round(time.monotonic() - started, 1)
    return validation


def _grade_checks(loaded: Loaded, validation: Validation, progress: Callable[[str], None], use_cache: bool) -> None:
    """The reference, the starter, the distributed suites and the catalogue, graded on every case."""
    exercise, cases, suites, extra = loaded.exercise, loaded.cases, loaded.suites, loaded.extra
    add = validation.checks.append
    cache = verdicts.VerdictCache(exercise, enabled=use_cache)
    progress("grading the reference solution and the starter stub on every case ...")
    reference, starter = verdicts.grade_files(
        exercise, [(exercise.solution, exercise.solution), (exercise.starter, exercise.starter)], cases, progress, cache)
    failed = [r for r in reference.results if r.outcome.counts_as_failure]
    if not failed and _cuda():
        failed = [r for r in grade(Run(exercise, exercise.solution, "submit", "cuda", numbers=True)).results
                  if r.outcome.counts_as_failure]
    add(Check("reference passes every case", not failed, _failures(failed) or f"{len(reference.results)} cases"))
    not_attempted = [r for r in starter.results if r.outcome is not Outcome.NOT_ATTEMPTED]
    add(Check("starter fails every case as not attempted", not not_attempted,
              _failures(not_attempted) if not_attempted else ""))
    for name, suite in suites.items():
        if extra[name]:
            progress(f"running the reference solution in the --{name} suite ...")
            add(_check_distributed(exercise, suite, extra[name], cache))
    _check_catalogue(loaded, validation, progress, cache)


def _hint_functions_unknown(exercise: Exercise) -> list[str]:
    """Each hint whose front matter names a function the stub does not define (or whose front matter is broken)."""
    import ast

    from grader.course.hints import read_hint

    try:
        tree = ast.parse(exercise.starter.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return []  # the starter's own check says what is wrong with it
    defined = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    problems = []
    for path in exercise.hint_files():
        try:
            hint = read_hint(path)  # a front matter that cannot be read is an error in the course's files: raised
        except OSError as error:
            problems.append(str(error))
            continue
        problems += [f"{path.name} is about {name}, which {exercise.starter.name} does not define"
                     for name in hint.functions if name not in defined]
    return problems


def _hint_problems(exercise: Exercise) -> list[str]:
    """What is wrong with the hints folder: a file a learner never sees (not .md), a number missing or repeated,
    or numbers that file-name order would open out of turn (10- before 2-)."""
    if not exercise.hints.is_dir():
        return []
    problems = [f"{path.name} is not a .md file: it is never shown" for path in sorted(exercise.hints.iterdir())
                if path.is_file() and path.suffix != ".md" and not path.name.startswith(".")]
    hints = exercise.hint_files()
    numbers = [int(found.group()) if (found := re.match(r"\d+", path.name)) else None for path in hints]
    unnumbered = [path.name for path, number in zip(hints, numbers) if number is None]
    if unnumbered:
        problems.append(f"not numbered: {', '.join(unnumbered)} (name each N-what-it-says.md)")
    given = [number for number in numbers if number is not None]
    if given and sorted(given) != list(range(1, len(given) + 1)):
        missing = sorted(set(range(1, max(given) + 1)) - set(given))
        repeated = sorted({number for number in given if given.count(number) > 1})
        problems.append("hint numbers " + ", ".join(map(str, sorted(given))) + ": "
                        + "; ".join(([f"no {', '.join(map(str, missing))}"] if missing else [])
                                    + ([f"{', '.join(map(str, repeated))} twice"] if repeated else [])
                                    + ([] if missing or repeated else ["they must start at 1"])))
    elif given != sorted(given):
        problems.append("hints open in file-name order, which puts " + " before ".join(
            path.name for path in hints[:2]) + "...: pad the numbers (01-, 02-, ...)")
    return problems


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def _check_distributed(exercise: Exercise, suite: Any, distributed_cases: list, cache: Any) -> Check:
    """The reference solution passes a distributed suite's every case (each at its own world size)."""
    results = verdicts.grade_distributed(exercise, suite, distributed_cases, load_reference(exercise), exercise.solution, cache)
    failed = [f"{result.name}: {result.outcome.value}: {result.message}" for result in results if not result.passed]
    worlds = ", ".join(map(str, sorted({suite.world_of(case) for case in distributed_cases})))
    return Check(f"reference passes the --{suite.option} suite", not failed,
                 "; ".join(failed[:3]) or f"{len(distributed_cases)} cases on {worlds} ranks")


def _check_catalogue(loaded: Loaded, validation: Validation, progress: Callable[[str], None], cache: Any) -> None:
    """Every catalogued mistake is caught by some case (a distributed suite's included); every correct variant passes
    every case."""
    exercise, checker, cases, suite = loaded.exercise, loaded.checker, loaded.cases, loaded.distributed
    broken = verdicts.broken_files(exercise)
    validation.checks.append(Check("mistakes and variants load", not broken, "; ".join(broken.values())))
    warm = matrix.WarmUp(exercise, checker, load_reference(exercise), cases, cache)
    try:
        mistakes, variants = verdicts.grade_catalogue(exercise, cases, progress, cache,
                                                      (*suite, load_reference(exercise)) if suite else None,
                                                      skip=set(broken))
    except BaseException:
        warm.finish(stop=True)  # an interrupted validate: the thread ends after its current case
        raise
    warm.finish()
    cache.save()
    validation.timing.update(verdicts_graded=cache.misses, verdicts_remembered=cache.hits)
    add = validation.checks.append
    if not mistakes:
        add(Check("catalogue of mistakes", True, f"no mistakes in {exercise.mistakes.relative_to(exercise.root)}: "
                  f"nothing checks that the cases catch anything, and failures get no diagnosis", warning=True))
    else:
        incomplete = [f"{m.path.name}: {text}" for m in mistakes
                      if (text := verdicts.missing_constants(m.path, exercise))]
        add(Check("mistakes have TITLE, RATIONALE and HELP", not incomplete, "; ".join(incomplete)
                  or f"{len(mistakes)} mistakes"))
        uncaught = [m.path.stem for m in mistakes if not m.catchers]
        add(Check("every mistake is caught by a case", not uncaught,
                  f"not caught: {', '.join(uncaught)}" if uncaught else f"{len(mistakes)} mistakes"))
    rejected = [f"{v.path.stem}: {', '.join(v.catchers[:2])}" for v in variants if not v.passed]
    add(Check("every correct variant passes every case", not rejected,
              "; ".join(rejected) or f"{len(variants)} variants"))
    progress("working out what the diagnosis names on each case ...")
    judge = Judge(exercise, checker, "", load_reference(exercise))
    validation.matrix = matrix.build(judge, cases, mistakes, variants, cache, suite)
    cache.save()
    validation.checks.extend(liveness_checks(judge, cases, mistakes))  # rules no case fails, entries no mistake calls
    covered = coverage_check(judge, cases)  # the ranges the statement promises, each held by a case
    if covered is not None:
        validation.checks.append(covered)
    distributed = {case.name for case in suite[1]} if suite else set()
    twins = {stem for pair in validation.matrix.indistinguishable() for stem in pair}  # said apart, just above
    unnamed = [row.stem for row in validation.matrix.rows if row.caught_by
               and row.stem not in twins and not any(stem == row.stem for stem in row.named.values())]
    add(Check("every mistake is named by the diagnosis where it is caught", not unnamed,
              f"never named: {', '.join(unnamed)}" if unnamed else f"{len(validation.matrix.rows)} mistakes"))
    if validation.ok:
        validation.recorded = str(record.write(exercise, validation.matrix, distributed).relative_to(exercise.root))


def _failures(failed: list, limit: int = 5) -> str:
    text = "; ".join(f"{r.name} [{r.device}]: {r.outcome.value}: {r.message}" for r in failed[:limit])
    return text + (f"; and {len(failed) - limit} more" if len(failed) > limit else "")


