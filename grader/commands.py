"""One function per CLI command: find the exercise, call the library, render what it returns."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from grader.course import (Exercise, check_exists, find_exercise, find_root, learner_file, load_course,
                           load_course_leniently)
from grader.errors import UsageError
from grader.progress import Progress, ProgressError, accepted, snapshot
from grader.render_markdown import print_markdown
from grader.render_terminal import show

EXIT_OK, EXIT_FAILED = 0, 1


def _progress(root: Path, console: Console) -> Progress:
    """The learner's progress, read now, so that a state file it had to move aside is said first."""
    progress = Progress(root)
    progress.check()
    _say_notes(progress, console)
    return progress


def _exercise(args: argparse.Namespace) -> Exercise:
    """The exercise named on the command line; without a name, the course's first one not yet accepted."""
    root = find_root()
    if args.exercise is not None:
        return find_exercise(root, args.exercise)
    exercises = load_course(root)
    if len(exercises) == 1:
        return exercises[0]
    progress = Progress(root)
    try:
        progress.check()
        done = {e.name for e in exercises if accepted(progress.exercise(e.name))}
    except Exception:  # noqa: BLE001  (unreadable progress: the note about it is printed by the command itself)
        done = set()
    return next((e for e in exercises if e.name not in done), exercises[-1])


def _say_notes(progress: Progress, console: Console) -> None:
    """Print what Progress noted (a state file moved aside), once."""
    for note in progress.notes:
        console.print(note, markup=False, highlight=False)
    progress.notes.clear()


def cmd_list(args: argparse.Namespace, console: Console) -> int:
    from grader.history import standing

    root = find_root()
    progress = _progress(root, console)
    exercises, broken = load_course_leniently(root)
    for exercise in exercises:
        state = standing(progress.exercise(exercise.name))
        console.print(f"{escape(exercise.name):<24} {escape(exercise.title)} [muted]({state})[/]")
    for folder, error in broken.items():
        console.print(f"{escape(folder):<24} [error]cannot be loaded:[/] {escape(str(error))}")
    return EXIT_OK


def cmd_show(args: argparse.Namespace, console: Console) -> int:
    exercise = _exercise(args)
    text = check_exists(exercise.statement, "the statement").read_text(encoding="utf-8")
    print_markdown(console, text)
    console.print(f"\n[muted]Your file: {exercise.stub.relative_to(exercise.root)}. "
                  f"Next: grader run, grader hint, grader submit.[/]", soft_wrap=False)
    return EXIT_OK


def cmd_run(args: argparse.Namespace, console: Console) -> int:
    return _grade(args, console, "run")


def cmd_submit(args: argparse.Namespace, console: Console) -> int:
    return _grade(args, console, "submit")


def _grade(args: argparse.Namespace, console: Console, mode: str) -> int:
    from grader import zygote

    with zygote.held():  # started first: it imports torch on another core while this process imports it too
        return _graded(args, console, mode)


def _graded(args: argparse.Namespace, console: Console, mode: str) -> int:
    from grader.examples import select
    from grader.grading import grade
    from grader.render_json import report_to_json, write_json
    from grader.render_terminal import TerminalRenderer

    ring = getattr(args, "ring", None)
    if ring is not None and ring < 2:
        raise UsageError(f"--ring needs at least 2 ranks, not {ring}")
    exercise = _exercise(args)
    # A learner bundle holds the examples alone: its submit runs them, then archives the file for the course.
    archive = mode == "submit" and exercise.precomputed is not None
    mode = "run" if archive else mode
    file = learner_file(args.file) if args.file else exercise.stub  # a README or a folder: one line, not a run
    # What is kept with a submission is what was graded: read now, before the learner can save again.
    source = snapshot(file) if mode == "submit" and not args.no_record else None
    renderer = TerminalRenderer(console, stub_hint=str(exercise.stub.relative_to(exercise.root)),
                                verbose=getattr(args, "verbose", False))
    from grader.sandbox import containment

    renderer.header(exercise.name, mode, str(args.file or exercise.stub.relative_to(exercise.root)), containment)
    only = select(exercise, args.pattern) if getattr(args, "pattern", None) else None  # run -k
    with renderer.live():  # a progress bar on a terminal, gone before the summary
        report = grade(exercise, file, mode, args.device, on_result=renderer.case, on_start=renderer.start,
                       time_limit=args.time_limit, memory_limit_mb=args.memory_limit_mb,
                       group=("ring", ring) if ring is not None else None, time_budget=args.time_budget, only=only)
    if only is not None:
        report.selection = args.pattern
        report.notes.append(f"Only the examples matching -k {args.pattern!r} ran ({len(only)}).")
    if args.json:
        write_json(report, args.json)
    if not args.no_record:
        progress = Progress(exercise.root)
        try:
            saved = progress.record(report, report_to_json(report), source, file.suffix)
        except ProgressError as error:
            # The grading itself went fine: show it, and say in one line what was not kept.
            saved = None
            progress.notes.append(f"note: this {mode} was not recorded: {error}")
        # Printed with the report's notes, so that the count line stays the last line.
        report.notes.extend(progress.notes)
        if saved:
            report.notes.append(f"Submission {saved.number} recorded in "
                                f"{saved.results.parent.relative_to(exercise.root)}/ (grader history lists them).")
    renderer.finish(report)
    if archive:
        _archive(exercise, file, console)
    return EXIT_OK if report.status == "passed" else EXIT_FAILED


def _archive(exercise: Exercise, file: Path, console: Console) -> None:
    """Write the learner's file, under the stub's name, to a verified archive in submissions/, and say where."""
    from grader.course import hand_in
    from grader.submission import write_submission

    try:
        content = file.read_bytes()
    except OSError as error:
        raise UsageError(f"{file}: could not be read to archive it ({error.strerror or error})") from None
    written = write_submission(exercise.root / "submissions", exercise.name, {exercise.stub.name: content})
    console.print(f"Wrote {escape(str(written.path.relative_to(exercise.root)))} (your file and its manifest, "
                  f"verified): {show(hand_in(exercise.root).rstrip('.'))}.")


def cmd_hint(args: argparse.Namespace, console: Console) -> int:
    exercise = _exercise(args)
    hints = exercise.hint_files()
    if not hints:
        console.print(f"{exercise.name} has no hints.")
        return EXIT_OK
    progress = _progress(exercise.root, console)
    already = progress.hints_opened(exercise.name)
    opened = progress.open_hint(exercise.name, len(hints))
    for number, path in enumerate(hints[:opened], start=1):
        fresh = " (new)" if number > already else ""
        console.print(f"[heading]Hint {number} of {len(hints)}{fresh}[/]")
        print_markdown(console, path.read_text(encoding="utf-8"))
        console.print()
    if already >= len(hints):
        console.print(f"That was the last hint: all {len(hints)} are open.")
    elif opened < len(hints):
        console.print(f"[muted]{len(hints) - opened} more; each gives away more than the last.[/]")
    return EXIT_OK


def cmd_status(args: argparse.Namespace, console: Console) -> int:
    from grader.history import acceptance_line

    root = find_root()
    exercises = [find_exercise(root, args.exercise)] if args.exercise else load_course(root)
    progress = _progress(root, console)
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
        console.print(f"Hints opened: {state.get('hints_opened', 0)} of {len(exercise.hint_files())}")
    return EXIT_OK


def cmd_reset(args: argparse.Namespace, console: Console) -> int:
    exercise = _exercise(args)
    starter = check_exists(exercise.starter, "the pristine starter file")
    backup = None
    if exercise.stub.exists():
        if exercise.stub.read_bytes() == starter.read_bytes():
            console.print(f"{exercise.stub.relative_to(exercise.root)} is already the original stub.")
            return EXIT_OK
        backup = Progress(exercise.root).backup(exercise.name, exercise.stub)
    exercise.stub.write_bytes(starter.read_bytes())
    console.print(f"Restored {exercise.stub.relative_to(exercise.root)} to the original stub.")
    if backup:
        console.print(f"Your previous file is kept in {backup.source.relative_to(exercise.root)} "
                      f"(grader restore backup-{backup.number} brings it back).")
    return EXIT_OK


def cmd_validate(args: argparse.Namespace, console: Console) -> int:
    from grader import zygote

    with zygote.held():  # started first, as for a run: it imports torch on another core while this process does
        return _validated(args, console)


def _validated(args: argparse.Namespace, console: Console) -> int:
    from grader.validate import render_validation, validate_exercise

    root = find_root()
    exercises = [find_exercise(root, args.exercise)] if args.exercise else load_course(root)
    ok, found = True, []
    for exercise in exercises:
        result = validate_exercise(exercise, progress=lambda line: console.print(f"[muted]{escape(line)}[/]"),
                                   use_cache=not args.fresh)
        render_validation(result, console)
        found.append(result.to_json())
        ok = ok and result.ok
    if args.json:
        import json

        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(found[0] if len(found) == 1 else found, indent=2) + "\n", encoding="utf-8")
    return EXIT_OK if ok else EXIT_FAILED


def cmd_export(args: argparse.Namespace, console: Console) -> int:
    """`grader export KIND`: one function per kind of export."""
    return {"gradescope": _export_gradescope, "learner": _export_learner}[args.kind](args, console)


def _export_gradescope(args: argparse.Namespace, console: Console) -> int:
    from grader import gradescope

    exercise = _exercise(args)
    path = gradescope.export(exercise, args.out)
    console.print(f"Wrote {escape(str(path))}: upload it as the autograder of {escape(exercise.name)} "
                  f"(setup.sh installs Python, torch and the sandbox; run_autograder grades each submission).")
    return EXIT_OK


def _export_learner(args: argparse.Namespace, console: Console) -> int:
    from grader.export_learner import export_learner

    exercises = export_learner(find_root(), args.exercise, args.out, args.hand_in)
    console.print(f"Wrote a learner bundle of {len(exercises)} exercise{'s' if len(exercises) != 1 else ''} "
                  f"({escape(', '.join(exercise.name for exercise in exercises))}) to {escape(str(args.out))}.")
    return EXIT_OK


def cmd_autograde(args: argparse.Namespace, console: Console) -> int:
    from grader import gradescope

    return gradescope.autograde(args.root)


def cmd_grade(args: argparse.Namespace, console: Console) -> int:
    from grader.budget import checked_seconds
    from grader.cohort import Options, grade_cohort, parse_shard
    from grader.render_cohort import CohortProgress, print_summary

    exercise = find_exercise(find_root(), args.exercise)
    options = Options(jobs=args.jobs, force=args.force, shard=parse_shard(args.shard) if args.shard else (1, 1),
                      device=args.device, time_limit=args.time_limit, memory_limit_mb=args.memory_limit_mb,
                      time_budget=checked_seconds(args.time_budget))
    run = grade_cohort(exercise, args.submissions, args.out, options, CohortProgress(console))
    print_summary(run, console)
    return EXIT_FAILED if run.summary.statuses.get("not graded") else EXIT_OK


def cmd_gradebook(args: argparse.Namespace, console: Console) -> int:
    from grader.cohort import CohortRun
    from grader.gradebook import merge
    from grader.render_cohort import print_summary

    summary = merge(args.folders, args.out)
    print_summary(CohortRun(summary, args.out), console)
    return EXIT_FAILED if summary.statuses.get("not graded") else EXIT_OK


# The learner's tools around grading live in a module of their own; dispatched by name from here.
from grader.learner_commands import cmd_history, cmd_repro, cmd_restore, cmd_watch  # noqa: E402,F401
