"""Writes the pages made from the code: every course file's keys with grader.api, and every command with its options.

    python docs/generate.py          write docs/instructors/reference.md and docs/commands.md
    python docs/generate.py --check  exit 1 naming each page that differs from what the code gives

The keys come from the tables beside the parsers (grader/course/: each parser refuses a key its table lacks and
reads its defaults from it), the course's own case keys from its checkers, grader.api from its names and
docstrings, the commands from the parser `grader` itself uses. tests/test_docs.py fails on a page not current.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "docs")]

from api_reference import api_reference, cell, row  # noqa: E402  (docs/api_reference.py, beside this file)

WRITTEN = ("Written by `python docs/generate.py` from the code; do not edit it (tests/test_docs.py fails when it is "
           "stale).")


def key_table(table: Any, intro: str) -> list[str]:
    """One course file's keys: a heading, a line on where they are written, and a row per key."""
    lines = [f"### {table.where}", "", intro, "", row("key", "type", "default", "meaning"), "| --- | --- | --- | --- |"]
    lines += [row(f"`{key.name}`", key.type, key.written(), key.meaning) for key in table]
    return lines + [""]


def course_keys() -> list[str]:
    """The case keys each checker of this course declares, function by function, and its distributed suites."""
    from grader.course.checker import load_checker
    from grader.course.exercise import load_course

    lines = [row("exercise", "function", "its own case keys"), "| --- | --- | --- |"]
    for exercise in load_course(REPO):
        checker = load_checker(exercise.checker)
        for name, function in checker.functions.items():
            lines.append(row(exercise.name, f"`{name}`", ", ".join(f"`{key}`" for key in sorted(function.keys))))
        for option, suite in checker.suites().items():
            lines.append(row(exercise.name, f"`{suite.function}` (the {option} suite)",
                             "checked by the suite's own `validate`"))
    return lines + [""]


def reference() -> str:
    """docs/instructors/reference.md: every key of every course file, then grader.api."""
    from grader.course import cases, checker, exercise_keys, hints, mistakes, promises, scale_spec
    from grader.course.rules import settings

    lines = ["# Reference: the course's files and `grader.api`", "",
             "Every key of every file an instructor writes, with its type, its default and what it means, then every "
             "name of `grader.api`. " + WRITTEN, "", "## The course's files", ""]
    for table, intro in (
            (exercise_keys.COURSE, "The course file: the folder above `exercises/` is the course's root."),
            (exercise_keys.EXERCISE, "One per exercise folder. A key it lacks is refused in one line naming the file "
                                     "and the key's line; a path is read from the exercise's folder."),
            (settings.TABLE, "What the learner's call may not do, judged by the grader on every case."),
            (exercise_keys.DISTRIBUTED, "How every submission runs the exercise's distributed suite."),
            (scale_spec.SCALE, "What `grader scale` measures, at which growing sizes."),
            (promises.PROMISES, "The ranges of one input's values the statement promises; `grader validate` fails "
                                "unless a case covers each."),
            (promises.RANGE, "One promised range."),
            (cases.CASE_FILE, "A file of cases: the examples, each file of the hidden suite, a distributed suite's."),
            (cases.CASE, "Keys every case may have, whatever the exercise; every other key is the checker's (below)."),
            (checker.TOLERANCE, "A case's `tolerance`: each key within its limits, so that no case stops testing."),
            (hints.FRONT_MATTER, "The first lines of a hint, between two `---` lines; a hint without them is about "
                                 "the exercise as a whole."),
            (mistakes.CONSTANTS, "Module constants of a catalogued mistake, beside the functions it replaces.")):
        lines += key_table(table, intro)
    lines += ["### The course's own case keys", "",
              "The keys each function of this course's checkers takes (its `Function`'s `keys`), as they are now.",
              ""] + course_keys()
    return "\n".join(lines + api_reference()).rstrip() + "\n"


def commands() -> str:
    """docs/commands.md: every command by who types it, with its usage and each argument and option."""
    from grader.cli.parser import GROUPS, build_parser

    parser = build_parser()
    lines = ["# Commands", "",
             "Every command of `grader`, by who types it, with each argument and option and its default, as "
             "`grader COMMAND --help` gives them. " + WRITTEN, ""]
    choices, helps = _subcommands(parser), _helps(parser)
    for title, names in GROUPS:
        lines += [f"## {title[0].upper()}{title[1:]}", ""]
        for name in names:
            lines += command(f"grader {name}", choices[name], helps.get(name, ""))
    return "\n".join(lines).rstrip() + "\n"


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next((dict(action.choices) for action in parser._actions
                 if isinstance(action, argparse._SubParsersAction)), {})


def _helps(parser: argparse.ArgumentParser) -> dict[str, str]:
    return {choice.dest: choice.help or "" for action in parser._actions
            if isinstance(action, argparse._SubParsersAction) for choice in action._choices_actions}


def command(name: str, parser: argparse.ArgumentParser, help_text: str = "") -> list[str]:
    """One command: its help line, its usage, a row per argument and option; then each of its own subcommands."""
    helps = _helps(parser)
    lines = [f"### `{name}`", ""] + ([help_text, ""] if help_text else [])
    lines += ["```text", " ".join(parser.format_usage().split()).removeprefix("usage: "), "```", ""]
    rows = [_option(action) for action in parser._actions
            if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction))]
    if rows:
        lines += [row("argument or option", "meaning", "default"), "| --- | --- | --- |"] + rows + [""]
    for sub, subparser in _subcommands(parser).items():
        lines += command(f"{name} {sub}", subparser, helps.get(sub, ""))
    return lines


def _option(action: argparse.Action) -> str:
    spelled = ", ".join(f"`{flag}`" for flag in action.option_strings) or f"`{action.metavar or action.dest}`"
    if action.option_strings and action.nargs != 0:
        spelled += f" {action.metavar or action.dest.upper()}"
    meaning = (action.help or "").replace("%%", "%")
    if action.choices and not isinstance(action, argparse._SubParsersAction):
        meaning += f" (one of: {', '.join(map(str, action.choices))})"
    default = action.default if action.default not in (None, False, [], argparse.SUPPRESS) else ""
    return row(spelled, meaning, f"`{default}`" if default != "" else "")


PAGES: dict[str, Callable[[], str]] = {"instructors/reference.md": reference, "commands.md": commands}


def stale() -> list[str]:
    """The generated pages whose committed text differs from what the code gives now."""
    docs = REPO / "docs"
    return [page for page, make in PAGES.items()
            if not (docs / page).is_file() or (docs / page).read_text(encoding="utf-8") != make()]


def main(argv: list[str]) -> int:
    """Write every generated page (or, with --check, say which are stale)."""
    if "--check" in argv:
        found = stale()
        for page in found:
            print(f"docs/{page} is stale: run python docs/generate.py")
        return 1 if found else 0
    for page, make in PAGES.items():
        (REPO / "docs" / page).parent.mkdir(parents=True, exist_ok=True)
        (REPO / "docs" / page).write_text(make(), encoding="utf-8")
        print(f"wrote docs/{page}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
