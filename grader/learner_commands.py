"""The learner's tools around grading: `history`, `restore`, `repro` and `watch`, each calling one library function."""

from __future__ import annotations

import argparse

from rich.console import Console

from grader.course import find_exercise, find_root, load_course
from grader.text import inert

EXIT_OK = 0


def cmd_history(args: argparse.Namespace, console: Console) -> int:
    from grader import history
    from grader.commands import _progress

    root = find_root()
    exercises = [find_exercise(root, args.exercise)] if args.exercise else load_course(root)
    progress = _progress(root, console)
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
    from grader import history
    from grader.commands import _exercise, _progress

    exercise = _exercise(args)
    line = history.restore(exercise, args.which, _progress(exercise.root, console))
    console.print(inert(line), markup=False, highlight=False)
    return EXIT_OK


def cmd_repro(args: argparse.Namespace, console: Console) -> int:
    from grader import repro
    from grader.commands import _exercise
    from grader.course import learner_file

    exercise = _exercise(args)
    script, data = repro.write(exercise, args.case, learner_file(args.file or exercise.stub))
    shown = script.relative_to(exercise.root)
    console.print(inert(f"Wrote {shown}, with the example's inputs in {data.name}: python -i {shown} runs your "
                        f"function on them (python -m pdb {shown} steps into it)."), markup=False, highlight=False)
    return EXIT_OK


def cmd_watch(args: argparse.Namespace, console: Console) -> int:
    from grader import watch, zygote
    from grader.commands import _exercise, _graded
    from grader.course import learner_file

    watch.require()  # before anything starts
    exercise = _exercise(args)
    args.exercise = exercise.name  # the same exercise all along, whatever a submission elsewhere accepts
    file = learner_file(args.file or exercise.stub)
    shown = str(args.file) if args.file else str(exercise.stub.relative_to(exercise.root))

    runs = 0

    def clear() -> None:
        nonlocal runs
        if console.is_terminal:
            console.clear()
        elif runs:  # a log or a pipe keeps every run, a blank line apart
            console.print()
        runs += 1

    def say(line: str) -> None:
        console.print(inert(line), markup=False, highlight=False)

    # One zygote for every run: torch is imported once, not on each save. It holds nothing of the course,
    # and it stops, with every sandbox it started, when the watch ends.
    with zygote.held():
        watch.watch(file, shown, lambda: _graded(args, console, "run"), clear, say)
    return EXIT_OK  # not reached: only a signal ends a watch, and grader/cli.py turns it into 130 or 143
