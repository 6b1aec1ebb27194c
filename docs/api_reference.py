"""grader.api as the reference shows it: each name with its signature, its docstring, its fields and its methods.

The names are grader.api's `__all__`, in API_ORDER first; a constant's words are the comment beside it (or above
it) where its module assigns it, a field's the comment beside it in its class. docs/generate.py writes the page.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import io
import sys
import textwrap
import tokenize
from typing import Any, Callable

API_ORDER = ("Checker", "Function", "Inputs", "Tolerance", "DTYPES", "HALF_DTYPES", "Case", "load_case_file",
             "DistributedSuite", "DistributedInputs", "learner_function", "call_learner", "LearnerFailure",
             "ConfigError")


def cell(text: Any) -> str:
    """Text made safe for one cell of a Markdown table."""
    return " ".join(str(text).split()).replace("|", "\\|")


def row(*cells: Any) -> str:
    return "| " + " | ".join(cell(one) for one in cells) + " |"


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
