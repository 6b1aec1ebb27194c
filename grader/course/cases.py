"""Case files: YAML entries become Case objects, each checked by the exercise's checker.

The keys every case may have, whatever the exercise, are CASE's below (each with its type, default and
meaning; `tolerance` within the limits of grader.course.checker's TOLERANCE). Every other key is the
checker's to define and validate. A file's `defaults` apply to each of its cases.

An error names the line of the key it is about: the key a ValueError's message starts with or quotes
(`dtype must be one of ...`, `unknown key 'dtpye'`), and `defaults:` when that key came from the defaults.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from grader.course.rules import AUDITS
from grader.course.yamlfile import Key, KeyTable, LineDict, line_of, line_of_key, load_yaml, require
from grader.errors import ConfigError, course_path

VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
HIDDEN_VISIBILITY = "after_due_date"  # a hidden case's result reaches Gradescope's learners after the due date
CASE_FILE = KeyTable("a case file (cases/examples.yaml, cases/hidden/*.yaml)", (
    Key("defaults", "mapping of case keys", "keys applied to every case of the file (a case's own win)", {}),
    Key("cases", "list of cases", "the cases, each a mapping of the keys below and the checker's own"),
))
CASE = KeyTable("a case (an entry of `cases`)", (
    Key("name", "string", "the case's name, unique in the exercise (a `repeat` adds -1, -2, ...)"),
    Key("function", "string", "the checker's function it calls"),
    Key("about", "string", "what it checks, in a line", ""),
    Key("time_limit", "number (CPU seconds, above 0)", "its CPU time", None, "the exercise's time_limit"),
    Key("repeat", "whole number (1 or more)", "N copies, with seeds seed, seed+1, ...", 1),
    Key("audit", f"list of {', '.join(sorted(AUDITS))}", "rules judged on this case alone: memory, against the "
        "checker's memory_budget", []),
    Key("points", "number (0 or more)", "its weight: every case's points are scaled to the exercise's max_score", 1),
    Key("visibility", " | ".join(VISIBILITIES), "when Gradescope's learners see its result", "visible",
        f"visible (examples), {HIDDEN_VISIBILITY} (hidden cases)"),
    Key("required", "true or false", "a failure scores 0 and rejects the submission, whatever else passes", False),
    Key("tolerance", "mapping (a case: tolerance)", "the exercise's tolerance, loosened or tightened within fixed "
        "limits", {}),
    Key("nonfinite_answer", "true or false", "the exact answer may hold NaN or Inf: an output must hold the same "
        "there, and be within the bound elsewhere", False),
))
GENERIC_KEYS = frozenset(CASE.names)  # every other key of a case is the checker's (its Function's `keys`)


@dataclass(frozen=True)
class Case:
    """One test case: what to call, with which generated inputs, how it counts, and where it was written."""

    name: str
    suite: str
    function: str
    about: str
    params: dict[str, Any] = field(hash=False)
    time_limit: float | None
    source: str
    audit: tuple[str, ...] = ()
    points: float = 1.0
    visibility: str = "visible"
    required: bool = False
    tolerance: dict[str, float] = field(default_factory=dict, hash=False)
    nonfinite_answer: bool = False  # the exact answer may hold NaN or Inf: an output must hold the same there

    @property
    def hidden(self) -> bool:
        return self.suite == "hidden"


Validator = Callable[[str, dict[str, Any]], None]


def load_case_file(path: Path, suite: str, functions: tuple[str, ...], validate: Validator,
                   check_tolerance: Callable[[dict], Any] | None = None) -> list[Case]:
    """Every case in one file, with `defaults` applied and `repeat` expanded."""
    data = load_yaml(path)
    if data is None:
        return []
    defaults = require(data, "defaults", dict, path, CASE_FILE.default("defaults"))
    entries = require(data, "cases", list, path)
    cases: list[Case] = []
    for index, entry in enumerate(entries, start=1):
        line = line_of(entry)
        if not isinstance(entry, dict):
            raise ConfigError(f"case #{index} must be a mapping, not {entry!r}", path, line)
        name = require(entry, "name", str, path)
        entry, blame = _merged(defaults, entry, path, name)
        get = lambda key, kind, default=_REQUIRED: blame.required(key, kind, default)  # noqa: E731
        function = get("function", str)
        if function not in functions:
            raise blame(ValueError(f"unknown function {function!r} (expected one of: {', '.join(functions)})"),
                        "function")
        try:
            # A hidden case's result reaches Gradescope's learners after the due date unless its YAML says otherwise.
            generic = _generic(entry, path, check_tolerance,
                               HIDDEN_VISIBILITY if suite == "hidden" else CASE.default("visibility"))
        except ValueError as error:
            raise blame(error) from None
        repeat = get("repeat", int, CASE.default("repeat"))
        if repeat < 1:
            raise blame(ValueError("repeat must be at least 1"), "repeat")
        about = get("about", str, CASE.default("about"))
        params = {key: value for key, value in entry.items() if key not in GENERIC_KEYS}
        for copy in range(repeat):
            copy_params = dict(params)
            copy_name = name
            if repeat > 1:
                # Each copy draws new random inputs: the seed moves on by one per copy.
                copy_params["seed"] = int(params.get("seed", 0)) + copy
                copy_name = f"{name}-{copy + 1}"
            try:
                validate(function, {**copy_params, **({"audit": list(generic["audit"])} if generic["audit"] else {})})
            except ValueError as error:
                raise blame(error) from None
            cases.append(Case(copy_name, suite, function, about, copy_params,
                              generic["time_limit"], f"{path}:{line}", generic["audit"], generic["points"],
                              generic["visibility"], generic["required"], generic["tolerance"],
                              generic["nonfinite_answer"]))
    return cases


_REQUIRED = object()


class _Blame:
    """Turns what is wrong with one case into a ConfigError at the line of the key it is about: the case's own key,
    or the file's `defaults` (named as such) when the key came from there."""

    def __init__(self, path: Path, name: str, entry: dict, defaults: dict) -> None:
        self.path, self.name, self.entry, self.defaults = path, name, entry, defaults

    def __call__(self, error: ValueError, key: str | None = None) -> ConfigError:
        message = str(error)
        key = key or _key_named(message, [*self.entry, *self.defaults])
        if key is not None and key not in self.entry and key in self.defaults:
            return ConfigError(f"defaults: {message} (as applied to case {self.name!r})", self.path,
                               line_of_key(self.defaults, key))
        line = line_of_key(self.entry, key) if key in self.entry else line_of(self.entry)
        return ConfigError(f"case {self.name!r}: {message}", self.path, line)

    def required(self, key: str, kind: type, default: Any = _REQUIRED) -> Any:
        """The case's value of `key` (or the defaults'), checked against `kind`."""
        if key in self.defaults and key not in self.entry:
            try:
                return require(self.defaults, key, kind, self.path)
            except ConfigError as error:
                raise ConfigError(f"defaults: {error.message}", self.path, error.line) from None
        if default is _REQUIRED:
            return require(self.entry, key, kind, self.path)
        return require(self.entry, key, kind, self.path, default)


def _merged(defaults: dict, entry: dict, path: Path, name: str) -> tuple[LineDict, _Blame]:
    """The case with the file's defaults under it (defaults may set any key, generic ones included: a file of slow
    cases shares one time_limit), and what names the line of whatever is wrong with it."""
    merged = LineDict({**defaults, **entry})
    merged.line = line_of(entry)
    merged.key_lines = {**getattr(defaults, "key_lines", {}), **getattr(entry, "key_lines", {})}
    return merged, _Blame(path, name, entry, defaults)


def _key_named(message: str, keys: list[str]) -> str | None:
    """The case key a message is about: the one it quotes as an unknown key, starts with, or else quotes."""
    unknown = re.match(r"unknown key '([^']+)'", message)
    if unknown and unknown.group(1) in keys:
        return unknown.group(1)
    first = re.match(r"['\"]?([A-Za-z_][A-Za-z0-9_]*)", message)
    if first and first.group(1) in keys:
        return first.group(1)
    return next((quoted for quoted in re.findall(r"'([^']+)'", message) if quoted in keys), None)


def _generic(entry: dict, path: Path, check_tolerance: Callable[[dict], Any] | None,
             default_visibility: str = CASE.default("visibility")) -> dict[str, Any]:
    """The keys every case may have, checked; ValueError names the first that is wrong."""
    time_limit = entry.get("time_limit")
    if time_limit is not None and (isinstance(time_limit, bool) or not isinstance(time_limit, (int, float))
                                   or time_limit <= 0):
        raise ValueError("time_limit must be a positive number of seconds")
    audit = entry.get("audit", CASE.default("audit"))
    audit = audit if isinstance(audit, list) else [audit]
    unknown = [item for item in audit if item not in AUDITS]
    if unknown:
        raise ValueError(f"audit must be among {', '.join(sorted(AUDITS))}, not {unknown[0]!r}")
    points = entry.get("points", CASE.default("points"))
    if isinstance(points, bool) or not isinstance(points, (int, float)) or points < 0:
        raise ValueError("points must be a number of at least 0")
    visibility = entry.get("visibility", default_visibility)
    if visibility not in VISIBILITIES:
        raise ValueError(f"visibility must be one of {', '.join(VISIBILITIES)}, not {visibility!r}")
    required = entry.get("required", CASE.default("required"))
    if not isinstance(required, bool):
        raise ValueError("required must be true or false")
    nonfinite_answer = entry.get("nonfinite_answer", CASE.default("nonfinite_answer"))
    if not isinstance(nonfinite_answer, bool):
        raise ValueError("nonfinite_answer must be true or false")
    tolerance = entry.get("tolerance", CASE.default("tolerance"))
    if tolerance and check_tolerance is not None:
        check_tolerance(tolerance)
    elif tolerance and not isinstance(tolerance, dict):
        raise ValueError("tolerance must be a mapping such as {float32: 2e-4}")
    return {"time_limit": float(time_limit) if time_limit is not None else None, "audit": tuple(audit),
            "points": float(points), "visibility": visibility, "required": required, "tolerance": dict(tolerance),
            "nonfinite_answer": nonfinite_answer}


def load_suites(examples: Path, hidden: list[Path], functions: tuple[str, ...], validate: Validator,
                include_hidden: bool, check_tolerance: Callable[[dict], Any] | None = None) -> list[Case]:
    """The examples, then (for a submission) the hidden suite; case names must be unique."""
    cases = load_case_file(examples, "examples", functions, validate, check_tolerance)
    if include_hidden:
        for path in hidden:
            cases.extend(load_case_file(path, "hidden", functions, validate, check_tolerance))
    seen: dict[str, str] = {}
    for case in cases:
        if case.name in seen:
            path, _, line = case.source.rpartition(":")
            first, _, at = seen[case.name].rpartition(":")
            raise ConfigError(f"case name {case.name!r} is also used at {course_path(first)}:{at}", path, int(line))
        seen[case.name] = case.source
    return cases


def load_exercise_cases(exercise: Any, checker: Any, include_hidden: bool = True) -> list[Case]:
    """An exercise's cases, checked by its checker (its functions, its keys, its tolerance limits).

    A learner bundle's exercise (`precomputed`) has its examples alone, served by its PrecomputedChecker.
    """
    from grader.course.exercise import check_exists

    if exercise.precomputed is not None:
        return checker.cases()
    return load_suites(check_exists(exercise.examples, "the examples file"), exercise.hidden_files(),
                       tuple(checker.functions), checker.validate, include_hidden, checker.tolerance.override)
