"""The learner's commands: list, show, run, submit, status, repro, watch (hints and what is kept: kept.py)."""

from __future__ import annotations

import argparse
import os
import shlex
import time
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from grader.cli import EXIT_FAILED, EXIT_INTERNAL, EXIT_OK
from grader.cli.common import exercise_from_args, exercise_word, learner_state, next_step, process_started
from grader.course.exercise import (
    Exercise,
    check_exists,
    find_exercise,
    find_root,
    learner_file,
    load_course,
    load_course_leniently,
)
from grader.errors import UsageError
from grader.files import RefusedFile, read_regular
from grader.inert import inert
from grader.learner.state import LearnerState, StateError, snapshot
from grader.report.terminal import show


def cmd_list(args: argparse.Namespace, console: Console) -> int:
    from grader.learner.history import standing

    root = find_root()
    progress = learner_state(root, console)
    exercises, broken = load_course_leniently(root)
    for exercise in exercises:
        state = standing(progress.exercise(exercise.name))
        console.print(f"{escape(exercise.name):<24} {escape(exercise.title)} [muted]({state})[/]")
    for folder, error in broken.items():
        console.print(f"{escape(folder):<24} [error]cannot be loaded:[/] {escape(str(error))}")
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
    from grader.sandbox import zygote

    # The exercise and the file first: a typo or a wrong path is said at once, before torch is imported anywhere.
    exercise = exercise_from_args(args)
    args.exercise = exercise.name
    if args.file:
        learner_file(args.file)
    with zygote.held():  # started first: it imports torch on another core while this process imports it too
        return _graded(args, console, mode, process_started(), exercise)


def _graded(args: argparse.Namespace, console: Console, mode: str, started: float | None = None,
            exercise: Exercise | None = None) -> int:
    """Grade and show it; `started`: when the command began, for its duration (a watch's run: now); `exercise`:
    the one already found from `args`."""
    from grader.report.terminal import TerminalRenderer

    group = next(((option, value) for option in ("ranks", "ring") if (value := getattr(args, option, None)) is not None),
                 None)
    exercise = exercise or exercise_from_args(args)
    # A learner bundle holds the examples alone: its submit runs them, then archives the file for the course.
    archive = mode == "submit" and exercise.precomputed is not None
    mode = "run" if archive else mode
    file = learner_file(args.file) if args.file else exercise.stub  # a README or a folder: one line, not a run
    # What is kept with a submission is what was graded: read now, before the learner can save again.
    source = snapshot(file) if mode == "submit" and not args.no_record else None
    renderer = TerminalRenderer(console, stub_hint=str(exercise.stub.relative_to(exercise.root)),
                                verbose=getattr(args, "verbose", False),
                                started=time.monotonic() if started is None else started,
                                exercise_word=exercise_word(exercise))
    from grader.sandbox.machine import containment

    renderer.header(exercise.name, mode, str(args.file or exercise.stub.relative_to(exercise.root)), containment)
    if console.is_terminal:
        # At once, before torch is imported here: the learner sees what is being graded. Piped, the header waits
        # for the first result as before, so that an error before any case stays one line for scripts.
        renderer.announce()
    from grader.course.examples import select
    from grader.grading.pipeline import grade
    from grader.grading.request import Limits, Run
    from grader.report.gradescope_json import report_to_json, write_json

    only = select(exercise, args.pattern, group) if getattr(args, "pattern", None) else None  # run -k
    limits = Limits(args.time_limit, args.memory_limit_mb, args.time_budget)
    with renderer.live():  # a progress bar on a terminal, gone before the summary
        report = grade(Run(limits.on(exercise), file, mode, args.device, group, only), renderer)
    if only is not None:
        report.selection = args.pattern
        report.notes.append(f"Only the examples matching -k {args.pattern!r} ran ({len(only)}).")
    if args.json:
        write_json(report, args.json)
    if not args.no_record:
        progress = LearnerState(exercise.root)
        try:
            saved = progress.record(report, report_to_json(report), source, file.suffix)
        except StateError as error:
            # The grading itself went fine: show it, and say in one line what was not kept.
            saved = None
            progress.notes.append(f"note: this {mode} was not recorded: {error}")
        # Printed with the report's notes, so that the count line stays the last line.
        report.notes.extend(progress.notes)
        if saved:
            report.notes.append(f"Submission {saved.number} recorded in "
                                f"{saved.results.parent.relative_to(exercise.root)}/ (grader history lists them).")
    if report.mode == "submit" and report.status == "passed":
        renderer.next_step = next_step(exercise)  # read after the acceptance was recorded
    renderer.finish(report)
    if archive:
        _archive(exercise, file, console)
    if report.not_graded:
        return EXIT_INTERNAL  # this machine's failure, not the learner's
    return EXIT_OK if report.status == "passed" else EXIT_FAILED


def _archive(exercise: Exercise, file: Path, console: Console) -> None:
    """Write the learner's file, under the stub's name, to a verified archive in submissions/, and say where."""
    from grader.course.exercise import hand_in
    from grader.results.archive import write_submission

    try:
        content = read_regular(file)  # what was graded: never a link, a pipe or a file over the bound
    except RefusedFile as error:
        raise UsageError(f"{file}: could not be read to archive it ({error.reason})") from None
    written = write_submission(exercise.root / "submissions", exercise.name, {exercise.stub.name: content})
    console.print(f"Wrote {escape(str(written.path.relative_to(exercise.root)))} (your file and its manifest, "
                  f"verified): {show(hand_in(exercise.root).rstrip('.'))}.")


def cmd_status(args: argparse.Namespace, console: Console) -> int:
    from grader.cli.kept import hints_line
    from grader.learner.history import acceptance_line

    root = find_root()
    exercises = [find_exercise(root, args.exercise)] if args.exercise else load_course(root)
    progress = learner_state(root, console)
    for exercise in exercises:
        state = progress.exercise(exercise.name)
        console.print(f"[heading]{escape(exercise.name)}[/]: {escape(exercise.title)}")
        if not state.get("last_run") and not state.get("last_submission"):
            console.print("No results yet")
            console.print("Run your code to check it against the examples (grader run), "
                          "or submit to run every test (grader submit).")
        if acceptance_line(state):
            console.print(show(acceptance_line(state)))
        for key, label in (("last_run", "Last run"), ("last_submission", "Last submission")):
            entry = state.get(key)
            if entry:
                verdict = "accepted" if key == "last_submission" and entry["status"] == "passed" else entry["status"]
                if isinstance(entry.get("only"), str):  # a `run -k`: some of the examples, not all of them
                    verdict += f"; only the examples matching -k {entry['only']!r}"
                # Read back from .grader/state.json, which anyone can edit: shown inert.
                console.print(f"{label}: {show(entry['when'])}: {entry['passed']} passed, {entry['failed']} "
                              f"failed of {entry['total']} ({show(verdict)}), {show(entry['file'])}")
        console.print(escape(hints_line(exercise, state)))
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
