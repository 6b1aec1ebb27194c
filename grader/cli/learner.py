"""The learner's commands: list, show, run, submit, watch, hint, status, reset, history, restore, repro."""

from __future__ import annotations

import argparse
import os
import shlex
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from grader.cli import EXIT_FAILED, EXIT_INTERNAL, EXIT_OK
from grader.cli.common import exercise_from_args, exercise_word, learner_state, next_step
from grader.course.exercise import (
    Exercise,
    check_exists,
    find_exercise,
    find_root,
    learner_file,
    load_course,
    load_course_leniently,
    match_exercise,
)
from grader.errors import GraderError, UsageError, did_you_mean
from grader.files import RefusedFile, read_regular
from grader.inert import inert
from grader.learner.state import LearnerState, StateError, snapshot
from grader.report.markdown import print_markdown
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
    exercise = exercise_from_args(args)
    text = check_exists(exercise.statement, "the statement").read_text(encoding="utf-8")
    print_markdown(console, text)
    word = escape(exercise_word(exercise))
    console.print(f"\n[muted]Your file: {exercise.stub.relative_to(exercise.root)}. "
                  f"Next: grader run{word}, grader hint{word}, grader submit{word}.[/]", soft_wrap=False)
    return EXIT_OK


def cmd_run(args: argparse.Namespace, console: Console) -> int:
    return _grade(args, console, "run")


def cmd_submit(args: argparse.Namespace, console: Console) -> int:
    return _grade(args, console, "submit")


def _grade(args: argparse.Namespace, console: Console, mode: str) -> int:
    from grader.sandbox import zygote

    # The exercise and the file first: a typo or a wrong path is said at once, before torch is imported anywhere.
    args.exercise = exercise_from_args(args).name
    if args.file:
        learner_file(args.file)
    with zygote.held():  # started first: it imports torch on another core while this process imports it too
        return _graded(args, console, mode)


def _graded(args: argparse.Namespace, console: Console, mode: str) -> int:
    from grader.report.terminal import TerminalRenderer

    group = next(((option, value) for option in ("ranks", "ring") if (value := getattr(args, option, None)) is not None),
                 None)
    exercise = exercise_from_args(args)
    # A learner bundle holds the examples alone: its submit runs them, then archives the file for the course.
    archive = mode == "submit" and exercise.precomputed is not None
    mode = "run" if archive else mode
    file = learner_file(args.file) if args.file else exercise.stub  # a README or a folder: one line, not a run
    # What is kept with a submission is what was graded: read now, before the learner can save again.
    source = snapshot(file) if mode == "submit" and not args.no_record else None
    renderer = TerminalRenderer(console, stub_hint=str(exercise.stub.relative_to(exercise.root)),
                                verbose=getattr(args, "verbose", False), exercise_word=exercise_word(exercise))
    from grader.sandbox.machine import containment

    renderer.header(exercise.name, mode, str(args.file or exercise.stub.relative_to(exercise.root)), containment)
    renderer.announce()  # before torch is imported here: the learner sees what is being graded at once
    from grader.course.examples import select
    from grader.grading.pipeline import grade
    from grader.report.gradescope_json import report_to_json, write_json

    only = select(exercise, args.pattern) if getattr(args, "pattern", None) else None  # run -k
    with renderer.live():  # a progress bar on a terminal, gone before the summary
        report = grade(exercise, file, mode, args.device, on_result=renderer.case, on_start=renderer.start,
                       time_limit=args.time_limit, memory_limit_mb=args.memory_limit_mb,
                       group=group, time_budget=args.time_budget, only=only)
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
        if report.mode == "submit" and report.status == "passed":
            renderer.next_step = next_step(exercise)
        if saved:
            report.notes.append(f"Submission {saved.number} recorded in "
                                f"{saved.results.parent.relative_to(exercise.root)}/ (grader history lists them).")
    renderer.finish(report)
    if archive:
        _archive(exercise, file, console)
    if report.not_graded:
        return EXIT_INTERNAL  # this machine's failure, not the learner's
    return EXIT_OK if report.status == "passed" else EXIT_FAILED


def _archive(exercise: Exercise, file: Path, console: Console) -> None:
    """Write the learner's file, under the stub's name, to a verified archive in submissions/, and say where."""
    from grader.course.exercise import hand_in
    from grader.staff.archive import write_submission

    try:
        content = read_regular(file)  # what was graded: never a link, a pipe or a file over the bound
    except RefusedFile as error:
        raise UsageError(f"{file}: could not be read to archive it ({error.reason})") from None
    written = write_submission(exercise.root / "submissions", exercise.name, {exercise.stub.name: content})
    console.print(f"Wrote {escape(str(written.path.relative_to(exercise.root)))} (your file and its manifest, "
                  f"verified): {show(hand_in(exercise.root).rstrip('.'))}.")


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


def cmd_status(args: argparse.Namespace, console: Console) -> int:
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
        console.print(escape(_hints_line(exercise, state)))
    return EXIT_OK


def _hints_line(exercise: Exercise, state: dict) -> str:
    """'Hints opened: 1 of 3 (merge_chunk_stats 1 of 1, ...)', per function where the hints name functions."""
    from grader.course.hints import about, functions_with_hints, load_hints
    from grader.learner.state import opened_hints

    try:
        hints = load_hints(exercise)
    except (OSError, GraderError):  # a broken hint file: `grader hint` says which; the count alone here
        return f"Hints opened: {state.get('hints_opened', 0)} of {len(exercise.hint_files())}"
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
