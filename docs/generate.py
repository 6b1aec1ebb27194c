"""Writes the pages made from the code: every course file's keys with grader.api, and every command with its options.

    python docs/generate.py          write docs/instructors/reference.md and docs/commands.md
    python docs/generate.py --check  exit 1 naming each page that differs from what the code gives

The keys come from the tables beside the parsers (grader/course/: each parser refuses a key its table lacks and
reads its defaults from it), the course's own case keys from its checkers, grader.api from its names and
docstrings, the commands from the parser `grader` itself uses. tests/test_docs.py fails on a page not current.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import io
import sys
import textwrap
import tokenize
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

WRITTEN = ("Written by `python docs/generate.py` from the code; do not edit it (tests/test_docs.py fails when it is "
           "stale).")
API_ORDER = ("Checker", "Function", "Inputs", "Tolerance", "DTYPES", "HALF_DTYPES", "Case", "load_case_file",
             "DistributedSuite", "DistributedInputs", "learner_function", "call_learner", "LearnerFailure",
             "ConfigError")


def cell(text: Any) -> str:
    """Text made safe for one cell of a Markdown table."""
    return " ".join(str(text).split()).replace("|", "\\|")


def row(*cells: Any) -> str:
    return "| " + " | ".join(cell(one) for one in cells) + " |"


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


def api_reference() -> list[str]:
    """Every name of grader.api: what it is, its signature, its docstring, its fields and methods."""
    import grader.api as api

    homes = {alias.name: node.module for node in ast.parse(inspect.getsource(api)).body
             if isinstance(node, ast.ImportFrom) for alias in node.names}
    names = [name for name in API_ORDER if name in api.__all__] + sorted(set(api.__all__) - set(API_ORDER))
    lines = ["## `grader.api`", "", inspect.getdoc(api) or "", ""]
    for name in names:
        value = getattr(api, name)
        if inspect.isclass(value):
            lines += described_class(name, value)
        elif callable(value):
            lines += [f"### `{name}{_signature(value)}`", "", inspect.getdoc(value) or "", ""]
        else:
            module = sys.modules[homes[name]]
            lines += [f"### `{name}`", "", comment_of(inspect.getsource(module), name), "", "```python",
                      f"{name} = {value!r}", "```", ""]
    return lines


def described_class(name: str, value: type) -> list[str]:
    """A class of the API: its docstring, its attributes (type, default, comment) and its own public methods."""
    bases = ", ".join(base.__name__ for base in value.__bases__ if base is not object)
    made = dataclasses.is_dataclass(value) or "__init__" in vars(value)
    lines = [f"### `{name}{_signature(value) if made else ''}`" + (f" ({bases})" if bases else ""), "",
             inspect.getdoc(value) or "", ""]
    fields = attributes(value)
    if fields:
        lines += [row("attribute", "type", "default", "meaning"), "| --- | --- | --- | --- |"]
        lines += [row(f"`{field}`", kind, default and f"`{default}`", comment) for field, kind, default, comment in
                  fields]
        lines.append("")
    for method, function in vars(value).items():
        if inspect.isfunction(function) and not method.startswith("_"):
            lines += [f"#### `{name}.{method}{_signature(function)}`", "", inspect.getdoc(function) or "", ""]
    return lines


def _signature(value: Callable) -> str:
    """A signature as the code writes it: annotations unquoted, defaults as written, no self."""
    parts = []
    factories = {field.name: field.default_factory for field in dataclasses.fields(value)} \
        if dataclasses.is_dataclass(value) else {}
    for parameter in inspect.signature(value).parameters.values():
        if parameter.name in ("self", "cls"):
            continue
        text = ("*" if parameter.kind is parameter.VAR_POSITIONAL else "") + parameter.name
        if parameter.annotation is not parameter.empty:
            annotation = parameter.annotation
            text += f": {annotation if isinstance(annotation, str) else getattr(annotation, '__name__', annotation)}"
        if parameter.default is not parameter.empty:
            made = factories.get(parameter.name, dataclasses.MISSING)
            text += f" = {_default(parameter.default if made is dataclasses.MISSING else made())}"
        parts.append(text)
    returned = inspect.signature(value).return_annotation
    shown = "" if returned is inspect.Signature.empty or inspect.isclass(value) else f" -> {returned}"
    return f"({', '.join(parts)}){shown.replace(chr(39), '')}"


def _default(value: Any) -> str:
    return repr(value).replace("'", '"')


def attributes(value: type) -> list[tuple[str, str, str, str]]:
    """Each public attribute a class body writes: its name, annotation, default and the comment beside or above it."""
    source = textwrap.dedent(inspect.getsource(value))
    comments, lines = _comments(source), source.splitlines()
    fields = {field.name: field for field in dataclasses.fields(value)} if dataclasses.is_dataclass(value) else {}
    defaults = {name: field.default if field.default is not dataclasses.MISSING else field.default_factory()
                for name, field in fields.items()
                if field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING}
    found = []
    for node in ast.parse(source).body[0].body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            name, kind = node.target.id, ast.unparse(node.annotation)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name, kind = node.targets[0].id, ""
        else:
            continue
        if name in defaults:
            default = _default(defaults[name])
        elif name in fields or node.value is None:
            default = ""
        else:
            default = ast.unparse(node.value).replace("'", '"')
        if not name.startswith("_"):
            found.append((name, kind, default, _comment_at(comments, lines, node)))
    return found


def comment_of(source: str, name: str) -> str:
    """The comment beside a module's assignment of `name`, or on the lines just above it."""
    comments, lines = _comments(source), source.splitlines()
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(isinstance(target, ast.Name) and target.id == name
                                                for target in node.targets):
            return _comment_at(comments, lines, node)
    return ""


def _comments(source: str) -> dict[int, tuple[int, str]]:
    """Line -> (column, text) of every comment in `source`."""
    return {token.start[0]: (token.start[1], token.string.lstrip("#").strip())
            for token in tokenize.generate_tokens(io.StringIO(source).readline) if token.type == tokenize.COMMENT}


def _comment_at(comments: dict[int, tuple[int, str]], lines: list[str], node: ast.stmt) -> str:
    """The comment ending a statement's last line, with the comment-only lines under it that continue it; else the
    comment-only lines just above it."""
    alone = lambda line: line in comments and lines[line - 1].lstrip().startswith("#")  # noqa: E731
    line = node.end_lineno
    if line in comments and not alone(line):
        text, start = [comments[line][1]], comments[line][0]
        while alone(line + 1) and comments[line + 1][0] == start:
            line += 1
            text.append(comments[line][1])
        return " ".join(text)
    above, line = [], node.lineno - 1
    while alone(line) and comments[line][0] == node.col_offset:
        above.insert(0, comments[line][1])
        line -= 1
    return " ".join(above)


def comment_of(source: str, name: str) -> str:
    """The comment beside a module's assignment of `name`, or on the lines just above it."""
    comments = _comments(source)
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(isinstance(target, ast.Name) and target.id == name
                                                for target in node.targets):
            above = []
            line = node.lineno - 1
            while line in comments and comments[line][0] == node.col_offset:
                above.insert(0, comments[line][1])
                line -= 1
            return " ".join(above) or _comment_from(comments, node.end_lineno, node.col_offset)
    return ""


def _comments(source: str) -> dict[int, tuple[int, str]]:
    """Line -> (column, text) of every comment in `source`."""
    return {token.start[0]: (token.start[1], token.string.lstrip("#").strip())
            for token in tokenize.generate_tokens(io.StringIO(source).readline) if token.type == tokenize.COMMENT}


def _comment_from(comments: dict[int, tuple[int, str]], line: int, column: int) -> str:
    """The comment ending `line`, with the comment lines under it that continue it (indented past `column`)."""
    if line not in comments:
        return ""
    text, start = [comments[line][1]], comments[line][0]
    while line + 1 in comments and comments[line + 1][0] == start and start > column:
        line += 1
        text.append(comments[line][1])
    return " ".join(text)


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
