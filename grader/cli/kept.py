"""The learner's commands about what is kept: hint (by function), reset, history, restore."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.markup import escape

from grader.cli import EXIT_FAILED, EXIT_OK
from grader.cli.common import exercise_from_args, learner_state
from grader.course.exercise import Exercise, check_exists, find_exercise, find_root, load_course, match_exercise
from grader.errors import GraderError, UsageError, did_you_mean
from grader.inert import inert
from grader.learner.state import LearnerState
from grader.results.learner_state import ExerciseState
from grader.report.markdown import print_markdown


def cmd_hint(args: argparse.Namespace, console: Console) -> int:
    from grader.course.hints import about, functions_with_hints, load_hints
    from grader.learner.state import opened_hints

    exercise, function, number = _hint_words(args)
    hints = load_hints(exercise)
    if not hints:
        console.print(f"{escape(exercise.name)} has no hints.")
        return EXIT_OK
    names = functions_with_hints(hints)
    if function is not None and function not in names:
        raise UsageError(f"{exercise.name} has no hints about {function!r}{did_you_mean(function, names)}; "
                         + (f"its hints are about: {', '.join(names)}" if names else "its hints are about the "
                            "exercise as a whole: grader hint " + exercise.name))
    pool = about(hints, function)
    what = f" about {function}" if function else ""
    if number is not None and not 1 <= number <= len(pool):
        raise UsageError(f"{exercise.name} has {len(pool)} hint{'s' if len(pool) != 1 else ''}{what}, "
                         f"so there is no hint {number}")
    progress = learner_state(exercise.root, console)
    order = [hint.name for hint in hints]
    already = opened_hints(progress.exercise(exercise.name), order)
    if number is not None:
        shown = [pool[number - 1]]
    else:
        fresh = next((hint for hint in pool if hint.name not in already), None)
        shown = [hint for hint in pool if hint.name in already or hint is fresh]
    opened = progress.open_hints(exercise.name, order, [hint.name for hint in shown])
    for hint in shown:
        new = " (new)" if hint.name not in already else ""
        console.print(f"[heading]Hint {pool.index(hint) + 1} of {len(pool)}{escape(what)}{new}[/]")
        print_markdown(console, hint.text)
        console.print()
    left = [hint for hint in pool if hint.name not in opened]
    if number is None and not left and all(hint.name in already for hint in shown):
        console.print(f"That was the last hint{escape(what)}: all {len(pool)} are open.")
    elif left:
        console.print(f"[muted]{len(left)} more{escape(what)}; each gives away more than the last.[/]")
    if function is None and len(names) > 1:
        counts = ", ".join(f"{name} ({len(about(hints, name))})" for name in names)
        console.print(f"[muted]Hints by function: {escape(counts)}; grader hint {escape(exercise.name)} FUNCTION "
                      f"opens only those about FUNCTION.[/]")
    return EXIT_OK


def _hint_words(args: argparse.Namespace) -> tuple[Exercise, str | None, int | None]:
    """`hint`'s words, in any order: an exercise (a name or unique prefix such as 01), a function, a hint's number
    (`grader hint 2` is hint 2, not an exercise). A word that names an exercise is the exercise."""
    exercise = function = number = None
    exercises = load_course(find_root())
    for word in args.words:
        found = match_exercise(exercises, word) if exercise is None else None
        if found is not None:
            exercise = found
        elif word.isdigit() and number is None:
            number = int(word)
        elif function is None and (not word.isdigit()):
            function = word
        else:
            raise UsageError(f"hint takes an exercise, a function and a hint's number (grader hint 07 "
                             f"merge_chunk_stats 1); {word!r} is one too many")
    if exercise is None:
        args.exercise = None
        if function is not None and match_exercise(exercises, function) is None and not function.isidentifier():
            find_exercise(find_root(), function)  # a mistyped exercise: said as such, with its nearest name
        exercise = exercise_from_args(args)
    return exercise, function, number


def hints_line(exercise: Exercise, state: ExerciseState) -> str:
    """'Hints opened: 1 of 3 (merge_chunk_stats 1 of 1, ...)', per function where the hints name functions."""
    from grader.course.hints import about, functions_with_hints, load_hints
    from grader.learner.state import opened_hints

    try:
        hints = load_hints(exercise)
    except (OSError, GraderError):  # a broken hint file: `grader hint` says which; the count alone here
        return f"Hints opened: {state.hints_opened or 0} of {len(exercise.hint_files())}"
    seen = set(opened_hints(state, [hint.name for hint in hints]))
    line = f"Hints opened: {sum(hint.name in seen for hint in hints)} of {len(hints)}"
    names = functions_with_hints(hints)
    if names:
        line += " (" + ", ".join(f"{name} {sum(hint.name in seen for hint in about(hints, name))} of "
                                 f"{len(about(hints, name))}" for name in names) + ")"
    return line


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
    progress = learner_state(root, console)
    listed = False
    for exercise in exercises:
        found = history.items(exercise, progress)
        listed = listed or bool(found)
        # File names and times are read back from .grader/state.json, which anyone can edit: shown inert.
        for line in history.render(exercise, found):
            console.print(inert(line), markup=False, highlight=False)
    if listed:
        console.print(history.HOW_TO_RESTORE, style="muted", markup=False, highlight=False)
    return EXIT_OK


def cmd_restore(args: argparse.Namespace, console: Console) -> int:
    from grader.learner import history

    exercise, which = _restore_words(args)
    progress = learner_state(exercise.root, console)
    if which is None:
        raise UsageError(history.which_to_restore(exercise, progress))
    line = history.restore(exercise, which, progress)
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
