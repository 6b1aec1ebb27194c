"""What the command handlers share: the exercise a command is about, and the learner's state."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from rich.console import Console

from grader.course.exercise import Exercise, find_exercise, find_root, load_course
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
    """The exercise named on the command line; without a name, the course's first one not yet accepted."""
    root = find_root()
    if args.exercise is not None:
        return find_exercise(root, args.exercise)
    exercises = load_course(root)
    if len(exercises) == 1:
        return exercises[0]
    progress = LearnerState(root)
    try:
        progress.check()
        done = {e.name for e in exercises if accepted(progress.exercise(e.name))}
    except Exception:  # noqa: BLE001  (unreadable progress: the note about it is printed by the command itself)
        done = set()
    return next((e for e in exercises if e.name not in done), exercises[-1])


def say_notes(progress: LearnerState, console: Console) -> None:
    """Print what LearnerState noted (a state file moved aside), once."""
    for note in progress.notes:
        console.print(note, markup=False, highlight=False)
    progress.notes.clear()
