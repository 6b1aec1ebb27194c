"""exercise.yaml's `promises`: the ranges of values the statement promises to handle, which validate holds the cases to.

    promises:
      values: softmax.x              # FUNCTION.ARGUMENT: the input whose values every range is about
      ranges:
        - about: every score of a slice far below zero
          range: [-1.0e308, -1.0e4]  # low, high: covered by a case whose every value of x lies in it
        - about: scores near the most negative float16
          range: [-65504, -5.0e4]
          dtypes: [float16]          # in these dtypes (by default every dtype that can hold part of the range)

A range is asked of each dtype clipped to what that dtype holds: [-1e308, -1e4] in float16 is
[-65504, -1e4]; one the dtype cannot hold at all ([-1e308, -1e30] in float16) is not asked of it.
Only the structure is read here, with the line of each key; the function and argument are checked
against the checker where validate runs (`check_names`), since that needs the checker loaded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.course.yamlfile import Key, KeyTable, line_of, line_of_key
from grader.errors import ConfigError

DTYPE_NAMES = ("float64", "float32", "bfloat16", "float16")  # grader/course/checker.py's DTYPES, by name
PROMISES = KeyTable("exercise.yaml: promises", (
    Key("values", "FUNCTION.ARGUMENT", "the input every range is about: a function of the checker and one of its "
        "arguments (softmax.x)"),
    Key("ranges", "list of ranges (exercise.yaml: promises: ranges)", "the ranges of its values the statement "
        "promises to handle"),
))
RANGE = KeyTable("exercise.yaml: promises: ranges", (
    Key("about", "string", "the range in the statement's words: validate names it where no case covers it"),
    Key("range", "[LOW, HIGH], two finite numbers, rising", "covered by a case whose every value of the input lies "
        "within it"),
    Key("dtypes", f"list of {', '.join(DTYPE_NAMES)}", "the dtypes it is asked in", [],
        "every dtype that holds part of the range (clipped to what it holds)"),
))
KEYS, RANGE_KEYS = PROMISES.names, RANGE.names


@dataclass(frozen=True)
class Promise:
    """One promised range: what it is in the statement's words, its bounds, the dtypes asked, its line."""

    about: str
    low: float
    high: float
    dtypes: tuple[str, ...] = ()  # empty: every dtype that can hold part of the range
    line: int | None = None


@dataclass(frozen=True)
class Promises:
    """Every promised range of one exercise, about the values of one argument of one function."""

    function: str
    argument: str
    ranges: tuple[Promise, ...]
    path: Path
    line: int | None = None  # where `values` is written

    def check_names(self, functions: dict[str, Any]) -> None:
        """ConfigError at `values`' line unless it names a function of the checker and one of its arguments."""
        if self.function not in functions:
            raise ConfigError(f"promises: values: {self.function!r} is none of the checker's functions "
                              f"({', '.join(functions)})", self.path, self.line)
        arguments = functions[self.function].arguments
        if self.argument not in arguments:
            raise ConfigError(f"promises: values: {self.function} has no argument {self.argument!r} (its "
                              f"arguments: {', '.join(arguments)})", self.path, self.line)


def parse_promises(value: Any, path: Path, line: int | None) -> Promises | None:
    """The `promises` section, checked key by key; None where the exercise has none."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ConfigError("promises must be a mapping of values (FUNCTION.ARGUMENT) and ranges", path, line)
    unknown = PROMISES.unknown(value)
    if unknown:
        raise ConfigError(f"promises: unknown key {unknown[0]!r} (known: {', '.join(KEYS)})", path,
                          line_of_key(value, unknown[0]))
    at = lambda key: line_of_key(value, key) if key in value else line  # noqa: E731
    named = value.get("values")
    if not isinstance(named, str) or named.count(".") != 1 or not all(named.split(".")):
        raise ConfigError(f"promises: values must name FUNCTION.ARGUMENT, such as softmax.x, not {named!r}", path,
                          at("values"))
    ranges = value.get("ranges")
    if not isinstance(ranges, list) or not ranges:
        raise ConfigError("promises: ranges must list one or more {about, range} entries", path, at("ranges"))
    lines = getattr(ranges, "item_lines", []) or [line_of(ranges)] * len(ranges)
    found = tuple(_promise(entry, path, where) for entry, where in zip(ranges, lines))
    function, argument = named.split(".")
    return Promises(function, argument, found, path, at("values"))


def _promise(entry: Any, path: Path, line: int | None) -> Promise:
    if not isinstance(entry, dict):
        raise ConfigError(f"promises: ranges: each entry is a mapping of {', '.join(RANGE_KEYS)}, not {entry!r}",
                          path, line)
    at = lambda key: line_of_key(entry, key) if key in entry else line  # noqa: E731
    unknown = RANGE.unknown(entry)
    if unknown:
        raise ConfigError(f"promises: ranges: unknown key {unknown[0]!r} (known: {', '.join(RANGE_KEYS)})", path,
                          at(unknown[0]))
    about = entry.get("about")
    if not isinstance(about, str) or not about.strip():
        raise ConfigError("promises: ranges: about must say in words what the range is", path, at("about"))
    bounds = entry.get("range")
    if not (isinstance(bounds, list) and len(bounds) == 2 and all(_number(bound) for bound in bounds)):
        raise ConfigError(f"promises: ranges: range must be [LOW, HIGH], two finite numbers, not {bounds!r}", path,
                          at("range"))
    low, high = (float(bound) for bound in bounds)
    if not low < high:
        raise ConfigError(f"promises: ranges: range must rise: {bounds[0]!r} is not below {bounds[1]!r}", path,
                          at("range"))
    dtypes = entry.get("dtypes", RANGE.default("dtypes"))
    if not isinstance(dtypes, list) or any(dtype not in DTYPE_NAMES for dtype in dtypes):
        odd = next((dtype for dtype in dtypes if dtype not in DTYPE_NAMES), dtypes) if isinstance(dtypes, list) \
            else dtypes
        raise ConfigError(f"promises: ranges: dtypes must list some of {', '.join(DTYPE_NAMES)}, not {odd!r}", path,
                          at("dtypes"))
    return Promise(about.strip(), low, high, tuple(dtypes), line)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
