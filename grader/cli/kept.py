"""The learner's commands about what is kept in .grader/: reset, history, restore."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.markup import escape

from grader.cli import EXIT_FAILED, EXIT_OK
from grader.cli.common import exercise_from_args, learner_state
from grader.course.exercise import Exercise, check_exists, find_exercise, find_root, load_course, match_exercise
from grader.errors import UsageError
from grader.inert import inert
from grader.learner.state import LearnerState
from grader.report.layout import say


def cmd_reset(args: argparse.Namespace, console: Console) -> int:
    named = args.exercise is not None
    exercise = exercise_from_args(args)
    starter = check_exists(exercise.starter, "the pristine starter file")
    shown = f"{exercise.stub.relative_to(exercise.root)} ({exercise.name})"
    backup = None
    if exercise.stub.exists():
        if exercise.stub.read_bytes() == starter.read_bytes():
            console.print(f"{escape(shown)} is already the original stub.")
            return EXIT_OK
        # The exercise was chosen for the learner (the current folder, the first not accepted): ask first.
        if not named and not args.yes and not _confirmed(console, exercise, shown):
            console.print(f"Nothing was changed: {escape(shown)} is as it was.")
            return EXIT_FAILED
        backup = LearnerState(exercise.root).backup(exercise.name, exercise.stub)
    exercise.stub.write_bytes(starter.read_bytes())
    console.print(f"Restored {escape(shown)} to the original stub.")
    if backup:
        console.print(f"Your previous file is kept in {backup.source.relative_to(exercise.root)} "
                      f"(grader restore {exercise.name} backup-{backup.number} brings it back).")
    return EXIT_OK


def _confirmed(console: Console, exercise: Exercise, shown: str) -> bool:
    """Whether the learner, asked on the terminal, agrees to reset `shown`; without a terminal, a usage error."""
    import sys

    if not (sys.stdin is not None and sys.stdin.isatty()):
        raise UsageError(f"grader reset would replace {shown}, which differs from the stub, and there is no "
                         f"terminal to ask: name the exercise (grader reset {exercise.name}) or add --yes "
                         f"(your file is backed up first either way)")
    try:
        answer = console.input(f"Replace {escape(shown)} with the original stub? Your file is backed up first. "
                               f"\\[y/N] ")
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


def cmd_history(args: argparse.Namespace, console: Console) -> int:
    from grader.learner import history

    root = find_root()
    exercises = [find_exercise(root, args.exercise)] if args.exercise else load_course(root)
    state = learner_state(root, console)
    listed = False
    for exercise in exercises:
        found = history.items(exercise, state)
        listed = listed or bool(found)
        # File names and times are read back from .grader/state.json, which anyone can edit: shown inert.
        for line in history.render(exercise, found):
            # Wrapped at the width (or COLUMNS), a long line's rest under its own item.
            say(console, escape(inert(line)), rest=" " * (len(line) - len(line.lstrip()) + 4))
    if listed:
        say(console, f"[muted]{escape(history.HOW_TO_RESTORE)}[/]")
    return EXIT_OK


def cmd_restore(args: argparse.Namespace, console: Console) -> int:
    from grader.learner import history

    exercise, which = _restore_words(args)
    state = learner_state(exercise.root, console)
    if which is None:
        raise UsageError(history.which_to_restore(exercise, state))
    line = history.restore(exercise, which, state)
    console.print(inert(line), markup=False, highlight=False)
    return EXIT_OK


def _restore_words(args: argparse.Namespace) -> tuple[Exercise, str | None]:
    """`restore`'s words: [EX] N, or N EX. A word that names an exercise (`01`) is read as the exercise, never as
    a submission's number, so that nothing is written into another exercise's file."""
    words = list(args.words)
    if len(words) > 2:
        raise UsageError(f"restore takes an exercise and what to restore (grader restore 01 3), not {len(words)} "
                         f"words")
    exercises = load_course(find_root())
    if match_exercise(exercises, words[0]) is not None:
        args.exercise = words[0]
        return exercise_from_args(args), (words[1] if len(words) > 1 else None)
    args.exercise = words[1] if len(words) > 1 else None
    return exercise_from_args(args), words[0]
