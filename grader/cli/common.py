"""What the command handlers share: the exercise a command is about, and the learner's state."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from grader.course.exercise import Exercise, exercise_at, find_exercise, find_root, load_course
from grader.errors import GraderError
from grader.learner.history import accepted_names
from grader.learner.state import LearnerState

if TYPE_CHECKING:
    from grader.report.terminal import TerminalRenderer
    from grader.results import Report


def process_started() -> float:
    """When this process began, on time.monotonic()'s clock: a command's duration counts Python's own start and
    every import, not only the grading. Where /proc cannot say, or where this process ran other programs before
    it became the grader (`bash -c 'pip install ... && grader run'` execs the grader in the shell's own process,
    which began with the install), when the grader's command line was loaded."""
    if RAN_OTHERS:
        return LOADED
    try:
        with open("/proc/self/stat", "rb") as stat, open("/proc/uptime", "rb") as uptime:
            ticks = int(stat.read().rsplit(b")", 1)[1].split()[19])  # field 22, starttime, in clock ticks after boot
            age = float(uptime.read().split()[0]) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return LOADED
    return time.monotonic() - max(age, 0.0)


LOADED = time.monotonic()
# CPU time of children waited for, which an exec keeps: a process just forked has none, a shell that ran an install
# and then exec'd the grader has pip's.
RAN_OTHERS = sum(os.times()[2:4]) > 0


def learner_state(root: Path, console: Console) -> LearnerState:
    """The learner's state, read now, so that a state file it had to move aside is said first."""
    state = LearnerState(root)
    state.check()
    say_notes(state, console)
    return state


def exercise_from_args(args: argparse.Namespace) -> Exercise:
    """The exercise named on the command line; without a name, the one whose folder holds `--file` or the
    current folder; elsewhere, the course's first one not yet accepted."""
    root = find_root()
    if getattr(args, "exercise", None) is not None:
        return find_exercise(root, args.exercise)
    exercises = load_course(root)
    if len(exercises) == 1:
        return exercises[0]
    file = getattr(args, "file", None)
    here = exercise_at(exercises, file.parent if file is not None else Path.cwd())
    if here is None and file is not None:
        here = exercise_at(exercises, Path.cwd())
    return here or first_not_accepted(root, exercises)


def first_not_accepted(root: Path, exercises: list[Exercise]) -> Exercise:
    """The course's first exercise not yet accepted (the last one once every one is)."""
    done = accepted_names(root, exercises)
    return next((e for e in exercises if e.name not in done), exercises[-1])


def exercise_word(exercise: Exercise) -> str:
    """What a suggested command needs after its verb to mean `exercise`: nothing where the current folder already
    chooses it (or the course has no other), else ' NAME'."""
    try:
        exercises = load_course(exercise.root)
    except GraderError:
        exercises = []
    if len(exercises) <= 1 or exercise_at(exercises, Path.cwd()) == exercise:
        return ""
    return f" {exercise.name}"


def learner_view(console: Console, exercise: Exercise, verbose: bool = False,
                 started: float | None = None, remember: bool = True) -> TerminalRenderer:
    """How a learner's run or submit of `exercise` is shown on `console`; `started`: when the command began, for its
    duration (None: now); `remember`: whether what it shows once may be remembered in .grader/ (not: --no-record)."""
    from grader.report.terminal import TerminalRenderer

    view = TerminalRenderer(console, stub_hint=str(exercise.stub.relative_to(exercise.root)), verbose=verbose,
                            started=time.monotonic() if started is None else started,
                            exercise_word=exercise_word(exercise))
    # What confines the learner's code is said once per machine (and with --verbose): the same lines every run are
    # lines nobody reads.
    state = LearnerState(exercise.root)
    view.first_sight = lambda said: state.first_sight(said, remember)
    return view


def exit_status(report: Report) -> int:
    """A learner's run or submit as its command's exit status: passed, failed, or not graded (this machine's fault)."""
    from grader.cli import EXIT_FAILED, EXIT_INTERNAL, EXIT_OK

    if report.not_graded:
        return EXIT_INTERNAL  # this machine's failure, not the learner's
    return EXIT_OK if report.status == "passed" else EXIT_FAILED


def say_notes(state: LearnerState, console: Console) -> None:
    """Print what LearnerState noted (a state file moved aside), once."""
    for note in state.notes:
        console.print(note, markup=False, highlight=False)
    state.notes.clear()
