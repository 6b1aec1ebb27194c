"""The instructor's command: `grader validate`."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.markup import escape

from grader.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from grader.course.exercise import find_exercise, find_root, load_course
from grader.errors import ConfigError
from grader.inert import inert


def cmd_validate(args: argparse.Namespace, console: Console) -> int:
    from grader.sandbox import zygote

    with zygote.held():  # started first, as for a run: it imports torch on another core while this process does
        return _validated(args, console)


def _validated(args: argparse.Namespace, console: Console) -> int:
    from grader.instructor.validate import validate_exercise
    from grader.report.validation import render_validation

    root = find_root()
    exercises = [find_exercise(root, args.exercise)] if args.exercise else load_course(root)
    ok, found, broken = True, [], False
    for exercise in exercises:
        try:
            result = validate_exercise(exercise, progress=lambda line: console.print(f"[muted]{escape(line)}[/]"),
                                       use_cache=not args.fresh)
        except ConfigError as error:  # an error in the course's files: as every command says it, and the next one
            console.print(f"error: {inert(str(error))}", markup=False, highlight=False)
            broken = True
            continue
        render_validation(result, console)
        found.append(result.to_json())
        ok = ok and result.ok
    if args.json and found:
        import json

        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(found[0] if len(found) == 1 else found, indent=2) + "\n", encoding="utf-8")
    return EXIT_USAGE if broken else EXIT_OK if ok else EXIT_FAILED
