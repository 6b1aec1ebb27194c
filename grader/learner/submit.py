"""A learner's `run` and `submit`: the file kept as graded, graded, written as JSON, recorded, and archived in a bundle.

The learner's library entry point, as grader/staff/cohort.py is the course staff's and
grader/instructor/validate.py the instructor's: the terminal's commands (`grader run`, `grader
submit`, each run of `grader watch`) and the notebook's (`%grader run`) call it alike. What shows
the run is a View, handed in: it hears each result as the grading's Listener does, and is told when
the run begins and ends; nothing here prints.
"""

from __future__ import annotations

import argparse
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol

from grader.course.exercise import Exercise, hand_in, learner_file
from grader.errors import LearnerSyntaxError, UsageError
from grader.files import RefusedFile, read_regular
from grader.grading.request import Limits, Listener, Run, SuiteAsked, shown_path
from grader.learner.history import next_step
from grader.learner.state import Kept, LearnerState, StateError, snapshot
from grader.results import Report

if TYPE_CHECKING:
    from grader.results.archive import Archive


@dataclass(frozen=True)
class Request:
    """What a learner asked for: the examples (`run`) or every case (`submit`) of one exercise's file, and what to
    keep of it."""

    exercise: Exercise
    mode: str = "run"
    file: Path | None = None      # None: the exercise's stub
    device: str = "all"
    limits: Limits = Limits()     # the exercise's own, where the command line replaces none
    distributed: SuiteAsked | None = None    # `--ranks N`, `--ring N`: the distributed suite after the cases
    pattern: str | None = None    # `run -k PATTERN`: only the examples it matches
    json: Path | None = None      # `--json PATH`: a results file written there too
    record: bool = True           # kept in the learner's .grader/ (`--no-record`: not)
    numbers: bool = False         # hidden failures say their figures (`--verbose` where the course is readable)

    @classmethod
    def from_args(cls, args: argparse.Namespace, mode: str, exercise: Exercise) -> Request:
        """The request a `grader run`, `submit` or `watch` command line makes of `exercise`."""
        distributed = next((SuiteAsked(option, ranks) for option in ("ranks", "ring")
                      if (ranks := getattr(args, option, None)) is not None), None)
        limits = Limits(args.time_limit, args.memory_limit_mb, args.time_budget)
        from grader.course.trust import course_readable

        numbers = bool(getattr(args, "verbose", False)) and course_readable(exercise)
        return cls(exercise, mode, args.file, args.device, limits, distributed, getattr(args, "pattern", None), args.json,
                   not args.no_record, numbers)


class View(Listener, Protocol):
    """What shows a learner's run (grader/report/terminal.py's TerminalRenderer): told what is graded before anything
    slow, live while the cases run, each result as it is known, then the report once it is kept."""

    next_step: str  # after an acceptance: the next exercise, said with the report

    def begin(self, exercise: str, mode: str, file: str, containment: str | Callable[[], str] = "") -> None: ...

    def live(self) -> AbstractContextManager[Any]: ...

    def finish(self, report: Report) -> None: ...

    def archived(self, written: str, hand_in: str) -> None: ...


@dataclass
class Graded:
    """What a learner's run or submit left: its report, the submission kept in .grader/ (if one was), and the
    archive written for the course (a learner bundle's submit)."""

    report: Report
    kept: Kept | None = None
    archive: Archive | None = None


def grade_learner(request: Request, view: View) -> Graded:
    """Grade what `request` asks and show it in `view`: the file's bytes read first (what a submission keeps is
    what was graded), the report written as JSON and recorded in the learner's state, the next exercise named after
    an acceptance; in a learner bundle, whose submit runs the examples alone, the file archived for the course."""
    from grader.sandbox import zygote

    file = learner_file(request.file) if request.file else request.exercise.stub  # a folder: one line, not a run
    answer_at_once(request, file)
    with zygote.held():  # started first: it imports torch on another core while this process imports it too
        return _graded(request, file, view)


def answer_at_once(request: Request, file: Path | None = None) -> None:
    """The usage errors that can be told before torch is imported, raised now: a distributed suite of fewer than
    2 ranks, or in a learner bundle (which holds none), a `-k` pattern that matches no example, and for a `run`
    of `file` that keeps no results file, a syntax error in it (nothing would run: see syntax_error)."""
    from grader.course.examples import check_pattern_at_once

    exercise, distributed = request.exercise, request.distributed
    if distributed is not None and distributed.ranks < 2:
        raise UsageError(f"--{distributed.option} needs at least 2 ranks, not {distributed.ranks}")
    if distributed is not None and exercise.precomputed is not None:
        raise UsageError(f"--{distributed.option}: {exercise.name} has no distributed suite")
    if request.pattern:
        check_pattern_at_once(exercise, request.pattern, distributed)
    if file is not None and request.mode == "run" and request.json is None:
        problem = syntax_error(file, shown_path(file, exercise.root))
        if problem:
            raise LearnerSyntaxError(problem)


def syntax_error(file: Path, shown: str) -> str:
    """Where and why the learner's file is not Python, as the worker says it once it imports the file, else ''.
    The file is compiled here, never run; what the compiler cannot decide alone (a file it cannot read, one
    nested past its limits) is left to the worker, which imports it in the sandbox."""
    import warnings

    from grader.inert import fit

    try:
        source = read_regular(file)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a SyntaxWarning (an invalid escape) is the worker's to print
            compile(source, str(file), "exec", dont_inherit=True)
    except SyntaxError as error:
        line = f":{error.lineno}" if isinstance(error.lineno, int) and error.lineno > 0 else ""
        text = fit((error.text or "").strip(), 1000)
        code = f"\n    {text}" if text else ""
        return (f"{shown}{line}: your file could not be imported: SyntaxError: {fit(str(error.msg), 4000)}{code}"
                f"\nNothing ran, and nothing was recorded: fix it, then run again.")
    except Exception:  # noqa: BLE001  (a refused file, MemoryError, RecursionError, ValueError: the worker says)
        return ""
    return ""


def scale_step(exercise: Exercise, report: Report) -> str:
    """After a submission that broke a rule `grader scale` draws (07's memory, 06's traffic): the command that
    shows the learner's curve beside the reference's; '' where none does."""
    from grader.course.rules import DRAWN_AS

    spec = exercise.scale
    if spec is None:
        return ""
    broken = (DRAWN_AS.get(str(result.extra.get("violates", ""))) for result in report.results if not result.passed)
    measure = next((measure for measure in broken if measure in spec.measures), None)
    if measure is None:
        return ""
    from grader.report.scale_words import OWN_NAMES

    return (f"To see how your {OWN_NAMES[measure]} grows with the {spec.axis}, beside the reference's: "
            f"grader scale {exercise.name} (at most {spec.budget:g} s).")


def _graded(request: Request, file: Path, view: View) -> Graded:
    exercise = request.exercise
    # A learner bundle holds the examples alone: its submit runs them, then archives the file for the course.
    archive = request.mode == "submit" and exercise.precomputed is not None
    mode = "run" if archive else request.mode
    # What is kept with a submission is what was graded: read now, before the learner can save again.
    source = snapshot(file) if mode == "submit" and request.record else None
    from grader.sandbox.machine import containment

    view.begin(exercise.name, mode, str(request.file or exercise.stub.relative_to(exercise.root)), containment)
    from grader.course.examples import select
    from grader.grading.pipeline import grade
    from grader.report.gradescope_json import report_to_json, write_json

    only = select(exercise, request.pattern, request.distributed) if request.pattern else None  # run -k
    with view.live():  # a progress bar on a terminal, gone before the summary
        report = grade(Run(request.limits.on(exercise), file, mode, request.device, request.distributed, only,
                           numbers=request.numbers), view)
    if only is not None:
        report.selection = request.pattern
        report.notes.append(_selected(report, request.pattern))
    if request.json:
        write_json(report, request.json)
    kept = _recorded(exercise, report, report_to_json(report), source, file) if request.record else None
    if report.mode == "submit" and report.status == "passed":
        view.next_step = next_step(exercise)  # read after the acceptance was recorded
    elif report.mode == "submit":
        view.next_step = scale_step(exercise, report)
    view.finish(report)
    written = _archive(exercise, file) if archive else None
    if written is not None:
        view.archived(str(written.path.relative_to(exercise.root)), hand_in(exercise.root).rstrip("."))
    return Graded(report, kept, written)


def _selected(report: Report, pattern: str) -> str:
    """'Only the examples matching -k 'tiny' ran (1).', or, where a distributed suite's cases matched too, 'Only the
    cases matching -k 'ring*' ran (2 examples, 3 ring cases).'"""
    suites: dict[str, int] = {}
    for result in report.results:
        suites[result.suite] = suites.get(result.suite, 0) + 1
    if set(suites) <= {"examples"}:
        return f"Only the examples matching -k {pattern!r} ran ({suites.get('examples', 0)})."
    counted = [f"{count} {'example' if suite == 'examples' else f'{suite} case'}{'s' * (count != 1)}"
               for suite, count in suites.items()]
    return f"Only the cases matching -k {pattern!r} ran ({', '.join(counted)})."


def _recorded(exercise: Exercise, report: Report, results: dict[str, Any], source: bytes | None,
              file: Path) -> Kept | None:
    """The run kept in the learner's state, with `results` (its results file) and `source` (the bytes graded); the
    report's notes say what was kept, or in one line what was not."""
    progress = LearnerState(exercise.root)
    try:
        kept = progress.record(report, results, source, file.suffix)
    except StateError as error:
        # The grading itself went fine: show it, and say in one line what was not kept.
        kept = None
        progress.notes.append(f"note: this {report.mode} was not recorded: {error}")
    # Printed with the report's notes, so that the count line stays the last line.
    report.notes.extend(progress.notes)
    if kept:
        report.notes.append(f"Submission {kept.number} recorded in "
                            f"{kept.results.parent.relative_to(exercise.root)}/ (grader history lists them).")
    return kept


def _archive(exercise: Exercise, file: Path) -> Archive:
    """The learner's file, under the stub's name, in a verified archive in the course's submissions/."""
    from grader.results.archive import write_submission

    try:
        content = read_regular(file)  # what was graded: never a link, a pipe or a file over the bound
    except RefusedFile as error:
        raise UsageError(f"{file}: could not be read to archive it ({error.reason})") from None
    return write_submission(exercise.root / "submissions", exercise.name, {exercise.stub.name: content})
