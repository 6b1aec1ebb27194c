"""What the command handlers share: the exercise a command is about, and the learner's state."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from rich.console import Console

from grader.course.exercise import Exercise, exercise_at, find_exercise, find_root, load_course
from grader.errors import GraderError
from grader.learner.state import LearnerState, accepted


def process_started() -> float:
    """When this process began, on time.monotonic()'s clock: a command's duration counts Python's own start and
    every import, not only the grading. Where /proc cannot say, when the grader's command line was loaded."""
    try:
        with open("/proc/self/stat", "rb") as stat, open("/proc/uptime", "rb") as uptime:
            ticks = int(stat.read().rsplit(b")", 1)[1].split()[19])  # field 22, starttime, in clock ticks after boot
            age = float(uptime.read().split()[0]) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return LOADED
    return time.monotonic() - max(age, 0.0)


LOADED = time.monotonic()


def learner_state(root: Path, console: Console) -> LearnerState:
    """The learner's progress, read now, so that a state file it had to move aside is said first."""
    progress = LearnerState(root)
    progress.check()
    say_notes(progress, console)
    return progress


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


def accepted_names(root: Path, exercises: list[Exercise]) -> set[str]:
    """The exercises accepted so far; none where the progress cannot be read (the command itself says why)."""
    progress = LearnerState(root)
    try:
        progress.check()
        return {e.name for e in exercises if accepted(progress.exercise(e.name))}
    except Exception:  # noqa: BLE001  (unreadable progress: the note about it is printed by the command itself)
        return set()


def next_exercise(root: Path, current: Exercise) -> Exercise | None:
    """After `current` is accepted: the next exercise of the course not yet accepted (after it, else before it)."""
    try:
        exercises = load_course(root)
    except GraderError:
        return None
    done = accepted_names(root, exercises) | {current.name}
    names = [e.name for e in exercises]
    at = names.index(current.name) + 1 if current.name in names else 0
    return next((e for e in exercises[at:] + exercises[:at] if e.name not in done), None)


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


def next_step(exercise: Exercise) -> str:
    """After `exercise` is accepted: the next exercise to do and the command that starts it, or that none is left."""
    following = next_exercise(exercise.root, exercise)
    if following is None:
        return "Every exercise of the course is accepted."
    return (f"Next: {following.name}, {following.title}: grader show {following.name} reads its statement "
            f"(its file: {following.stub.relative_to(following.root)}).")


def say_notes(progress: LearnerState, console: Console) -> None:
    """Print what LearnerState noted (a state file moved aside), once."""
    for note in progress.notes:
        console.print(note, markup=False, highlight=False)
    progress.notes.clear()
