"""The learner's commands: list, show, run, submit, status, repro, watch (hint: hints.py; what is kept: kept.py)."""

from __future__ import annotations

import argparse
import os
import shlex

from rich.console import Console
from rich.markup import escape

from grader.cli import EXIT_OK
from grader.cli.common import (
    exercise_from_args,
    exercise_word,
    exit_status,
    learner_state,
    learner_view,
    process_started,
)
from grader.course.exercise import (
    Exercise,
    check_exists,
    find_exercise,
    find_root,
    learner_file,
    load_course,
    load_course_leniently,
)
from grader.inert import inert
from grader.report.layout import say
from grader.report.terminal import show


def cmd_list(args: argparse.Namespace, console: Console) -> int:
    from grader.learner.history import standing

    root = find_root()
    learner = learner_state(root, console)
    exercises, broken = load_course_leniently(root)
    width = max([len(exercise.name) for exercise in exercises] + [len(folder) for folder in broken] + [0]) + 2
    for exercise in exercises:
        state = standing(learner.exercise(exercise.name))
        say(console, f"{escape(exercise.title)} [muted]({state})[/]", escape(exercise.name.ljust(width)), " " * width)
    for folder, error in broken.items():
        say(console, f"[error]cannot be loaded:[/] {escape(str(error))}", escape(folder.ljust(width)), " " * width)
    return EXIT_OK


def cmd_show(args: argparse.Namespace, console: Console) -> int:
    from grader.report.markdown import page_markdown  # rich's Markdown, for this command only

    exercise = exercise_from_args(args)
    text = check_exists(exercise.statement, "the statement").read_text(encoding="utf-8")
    word = escape(exercise_word(exercise))
    page_markdown(console, text, after=["", f"[muted]Your file: {exercise.stub.relative_to(exercise.root)}. "
                                            f"Next: grader run{word}, grader hint{word}, grader submit{word}.[/]"])
    return EXIT_OK


def cmd_run(args: argparse.Namespace, console: Console) -> int:
    return _grade(args, console, "run")


def cmd_submit(args: argparse.Namespace, console: Console) -> int:
    return _grade(args, console, "submit")


def _grade(args: argparse.Namespace, console: Console, mode: str) -> int:
    # The exercise and the file first: a typo or a wrong path is said at once, before torch is imported anywhere.
    exercise = exercise_from_args(args)
    args.exercise = exercise.name
    if args.file:
        learner_file(args.file)
    return _graded(args, console, mode, process_started(), exercise)


def _graded(args: argparse.Namespace, console: Console, mode: str, started: float | None = None,
            exercise: Exercise | None = None) -> int:
    """Grade and show it (grader/learner/submit.py); `started`: when the command began, for its duration (a watch's
    run: now); `exercise`: the one already found from `args`."""
    from grader.learner.submit import Request, grade_learner

    exercise = exercise or exercise_from_args(args)
    view = learner_view(console, exercise, getattr(args, "verbose", False), started, not args.no_record)
    return exit_status(grade_learner(Request.from_args(args, mode, exercise), view).report)


def cmd_status(args: argparse.Namespace, console: Console) -> int:
    from grader.cli.hints import hints_line
    from grader.learner.history import acceptance_line, counts

    root = find_root()
    exercises = [find_exercise(root, args.exercise)] if args.exercise else load_course(root)
    learner = learner_state(root, console)
    for exercise in exercises:
        state = learner.exercise(exercise.name)
        say(console, f"[heading]{escape(exercise.name)}[/]: {escape(exercise.title)}")
        if not state.last_run and not state.last_submission:
            say(console, "No results yet")
            say(console, "Run your code to check it against the examples (grader run), "
                         "or submit to run every test (grader submit).")
        if acceptance_line(state):
            say(console, show(acceptance_line(state)))
        for entry, label, submitted in ((state.last_run, "Last run", False),
                                        (state.last_submission, "Last submission", True)):
            if entry:
                verdict = "accepted" if submitted and entry.status == "passed" else entry.status
                if entry.total and entry.not_attempted == entry.total:
                    verdict = "not attempted"  # the untouched stub, as `run` calls it
                if entry.only is not None:  # a `run -k`: some of the examples, not all of them
                    verdict += f"; only the examples matching -k {entry.only!r}"
                # Read back from .grader/state.json, which anyone can edit: shown inert.
                say(console, f"{label}: {show(entry.when)}: {show(counts(entry))} ({show(verdict)}), "
                             f"{show(entry.file)}")
        say(console, escape(hints_line(exercise, state)))
    return EXIT_OK


def cmd_repro(args: argparse.Namespace, console: Console) -> int:
    from grader.course.exercise import learner_file
    from grader.learner import repro

    exercise = exercise_from_args(args)
    script, data = repro.write(exercise, args.case, learner_file(args.file or exercise.stub))
    # Both commands as they work from here: this folder's path to the script, and the Python that has torch.
    shown, python = shlex.quote(os.path.relpath(script)), repro.python_command()
    console.print(inert(f"Wrote {shown}, with the example's inputs in {data.name}: {python} -i {shown} runs your "
                        f"function on them ({python} -m pdb {shown} steps into it)."), markup=False, highlight=False)
    return EXIT_OK


def cmd_watch(args: argparse.Namespace, console: Console) -> int:
    from grader.course.exercise import learner_file
    from grader.learner import watch
    from grader.sandbox import zygote

    watch.require()  # before anything starts
    exercise = exercise_from_args(args)
    args.exercise = exercise.name  # the same exercise all along, whatever a submission elsewhere accepts
    file = learner_file(args.file or exercise.stub)
    from grader.learner.submit import Request, answer_at_once

    answer_at_once(Request.from_args(args, "run", exercise))  # a typo is said at once, not on every save
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
    return EXIT_OK  # not reached: only a signal ends a watch, and grader/cli/__init__.py turns it into 130 or 143
