"""The learner's hint command: the hints opened so far and the next, all of them or those about one function."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.markup import escape

from grader.cli import EXIT_OK
from grader.cli.common import exercise_from_args, learner_state
from grader.course.exercise import Exercise, find_exercise, find_root, load_course, match_exercise
from grader.errors import GraderError, UsageError, did_you_mean
from grader.report.markdown import print_markdown
from grader.results.learner_state import ExerciseState


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
    state = learner_state(exercise.root, console)
    order = [hint.name for hint in hints]
    already = opened_hints(state.exercise(exercise.name), order)
    if number is not None:
        shown = [pool[number - 1]]
    else:
        fresh = next((hint for hint in pool if hint.name not in already), None)
        shown = [hint for hint in pool if hint.name in already or hint is fresh]
    opened = state.open_hints(exercise.name, order, [hint.name for hint in shown])
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
