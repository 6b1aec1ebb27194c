"""The instructor's check: cases load, the reference passes all, the starter is not attempted, hints exist."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from rich.console import Console
from rich.markup import escape

from grader.cases import load_exercise_cases
from grader.checker import load_checker
from grader.course import Exercise
from grader.errors import GraderError
from grader.grading import grade
from grader.results import Outcome, Report


@dataclass
class Check:
    """One line of the validation: what was checked, whether it held, and why not."""

    name: str
    ok: bool
    detail: str = ""


@dataclass
class Validation:
    """Every check for one exercise, plus any tables later checks add."""

    exercise: str
    checks: list[Check] = field(default_factory=list)
    tables: list[list[str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.checks)


def validate_exercise(exercise: Exercise, progress: Callable[[str], None] = lambda line: None) -> Validation:
    """Run every authoring check for one exercise."""
    validation = Validation(exercise.name)
    add = validation.checks.append
    for path, what in ((exercise.statement, "statement"), (exercise.stub, "learner stub"),
                       (exercise.starter, "starter copy of the stub"), (exercise.solution, "reference solution")):
        add(Check(f"{what} exists", path.is_file(), str(path.relative_to(exercise.root))))
    hints = exercise.hint_files()
    empty = [path.name for path in hints if not path.read_text(encoding="utf-8").strip()]
    add(Check("hints present", len(hints) >= 1 and not empty,
              f"{len(hints)} hint files" + (f"; empty: {', '.join(empty)}" if empty else "")))
    try:
        checker = load_checker(exercise.checker)
        cases = load_exercise_cases(exercise, checker)
        counts = {suite: sum(case.suite == suite for case in cases) for suite in ("examples", "hidden")}
        suites = checker.suites()
        extra = {name: suite.all_cases() for name, suite in suites.items()}
        add(Check("case files load", True, f"{counts['examples']} examples, {counts['hidden']} hidden"
                  + "".join(f", {len(found)} in --{name}" for name, found in extra.items())))
    except GraderError as error:
        add(Check("case files load", False, str(error)))
        return validation
    if not (exercise.solution.is_file() and exercise.starter.is_file()):
        return validation
    progress("grading the reference solution on every case ...")
    reference = grade(exercise, exercise.solution, "submit", "all")
    add(Check("reference passes every case", reference.status == "passed", _failures(reference)))
    progress("grading the starter stub on every case ...")
    starter = grade(exercise, exercise.starter, "submit", "cpu")
    not_attempted = [r for r in starter.results if r.outcome is not Outcome.NOT_ATTEMPTED]
    add(Check("starter fails every case as not attempted", not not_attempted and not starter.load_error,
              starter.load_error.splitlines()[0] if starter.load_error else
              ", ".join(f"{r.name}: {r.outcome.value}" for r in not_attempted[:5])))
    for name, suite in suites.items():
        if extra[name]:
            progress(f"running the reference solution in the --{name} suite ...")
            add(_check_group(exercise, suite, sorted({suite.world_of(case) for case in extra[name]})))
    _check_catalogue(exercise, validation, progress)
    return validation


def _check_group(exercise: Exercise, suite, worlds: list[int]) -> Check:
    """The reference solution passes a group suite at every world size its cases use."""
    from grader.grading import load_reference
    from grader.group_run import run_group_suite

    solution = load_reference(exercise)
    report = Report(exercise.name, "submit", str(exercise.solution))
    for world in worlds:
        run_group_suite(exercise, suite, exercise.solution, world, "cpu", report, lambda result: None, solution)
    sizes = ", ".join(map(str, worlds))
    return Check(f"reference passes the --{suite.option} suite", report.status == "passed",
                 _failures(report) if report.failed else f"{len(report.results)} cases on {sizes} ranks")


def _check_catalogue(exercise: Exercise, validation: Validation, progress: Callable[[str], None]) -> None:
    """Every catalogued mistake is caught by some case; every correct variant passes every case."""
    from grader import catalogue_check

    mistakes, variants = catalogue_check.grade_catalogue(exercise, progress)
    add = validation.checks.append
    incomplete = [f"{m.path.name}: {text}" for m in mistakes if (text := catalogue_check.missing_constants(m.path))]
    add(Check("mistakes have TITLE, RATIONALE and HELP", not incomplete, "; ".join(incomplete)
              or f"{len(mistakes)} mistakes"))
    uncaught = [m.path.stem for m in mistakes if not m.catchers]
    add(Check("every mistake is caught by a case", bool(mistakes) and not uncaught,
              f"not caught: {', '.join(uncaught)}" if uncaught else f"{len(mistakes)} mistakes"))
    rejected = [f"{v.path.stem}: {_failures(v.report, 2)}" for v in variants if v.report.status != "passed"]
    add(Check("every correct variant passes every case", not rejected,
              "; ".join(rejected) or f"{len(variants)} variants"))
    validation.tables.append(catalogue_check.matrix(mistakes, variants))


def _failures(report: Report, limit: int = 5) -> str:
    if report.load_error:
        return report.load_error.splitlines()[0]
    failed = [r for r in report.results if r.outcome.counts_as_failure]
    text = "; ".join(f"{r.name} [{r.device}]: {r.outcome.value}: {r.message}" for r in failed[:limit])
    more = f"; and {len(failed) - limit} more" if len(failed) > limit else ""
    return (text + more) if failed else f"{report.passed} cases"


def render_validation(validation: Validation, console: Console) -> None:
    """One line per check, any tables, then a verdict."""
    console.print(f"[heading]validate {escape(validation.exercise)}[/]")
    for check in validation.checks:
        style, label = ("passed", "ok  ") if check.ok else ("failed", "FAIL")
        console.print(f"[{style}]{label}[/] {escape(check.name)}" + (f" [muted]({escape(check.detail)})[/]"
                                                                     if check.detail else ""))
    for table in validation.tables:
        for line in table:
            console.print(escape(line))
    verdict = "valid" if validation.ok else "NOT valid"
    console.print(f"{validation.exercise} is {verdict}: {sum(c.ok for c in validation.checks)} passed, "
                  f"{sum(not c.ok for c in validation.checks)} failed", markup=False)
