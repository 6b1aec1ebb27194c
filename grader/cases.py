"""Case files: YAML entries become Case objects, each checked by the exercise's checker."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from grader.errors import ConfigError
from grader.yamlfile import line_of, load_yaml, require

# Keys every case may have; the rest are the checker's parameters.
GENERIC_KEYS = {"name", "function", "about", "time_limit", "repeat"}


@dataclass(frozen=True)
class Case:
    """One test case: what to call, with which generated inputs, and where it was written."""

    name: str
    suite: str
    function: str
    about: str
    params: dict[str, Any] = field(hash=False)
    time_limit: float | None
    source: str

    @property
    def hidden(self) -> bool:
        return self.suite == "hidden"


Validator = Callable[[str, dict[str, Any]], None]


def load_case_file(path: Path, suite: str, functions: tuple[str, ...], validate: Validator) -> list[Case]:
    """Every case in one file, with `defaults` applied and `repeat` expanded."""
    data = load_yaml(path)
    if data is None:
        return []
    defaults = require(data, "defaults", dict, path, {})
    entries = require(data, "cases", list, path)
    cases: list[Case] = []
    for index, entry in enumerate(entries, start=1):
        line = line_of(entry)
        if not isinstance(entry, dict):
            raise ConfigError(f"case #{index} must be a mapping, not {entry!r}", path, line)
        name = require(entry, "name", str, path)
        where = f"case {name!r}"
        # Defaults may set any key, generic ones included (a file of slow cases shares one time_limit).
        merged = type(entry)({**defaults, **entry})
        merged.line = line
        entry = merged
        function = require(entry, "function", str, path)
        if function not in functions:
            raise ConfigError(f"{where}: unknown function {function!r} (expected one of: {', '.join(functions)})",
                              path, line)
        about = require(entry, "about", str, path, "")
        time_limit = require(entry, "time_limit", (int, float), path, None)
        if time_limit is not None and time_limit <= 0:
            raise ConfigError(f"{where}: time_limit must be positive", path, line)
        repeat = require(entry, "repeat", int, path, 1)
        if repeat < 1:
            raise ConfigError(f"{where}: repeat must be at least 1", path, line)
        params = {key: value for key, value in entry.items() if key not in GENERIC_KEYS}
        for copy in range(repeat):
            copy_params = dict(params)
            copy_name = name
            if repeat > 1:
                # Each copy draws new random inputs: the seed moves on by one per copy.
                copy_params["seed"] = int(params.get("seed", 0)) + copy
                copy_name = f"{name}-{copy + 1}"
            try:
                validate(function, copy_params)
            except ValueError as error:
                raise ConfigError(f"{where}: {error}", path, line) from None
            cases.append(Case(copy_name, suite, function, about, copy_params,
                              float(time_limit) if time_limit is not None else None, f"{path}:{line}"))
    return cases


def load_suites(examples: Path, hidden: list[Path], functions: tuple[str, ...], validate: Validator,
                include_hidden: bool) -> list[Case]:
    """The examples, then (for a submission) the hidden suite; case names must be unique."""
    cases = load_case_file(examples, "examples", functions, validate)
    if include_hidden:
        for path in hidden:
            cases.extend(load_case_file(path, "hidden", functions, validate))
    seen: dict[str, str] = {}
    for case in cases:
        if case.name in seen:
            path, _, line = case.source.rpartition(":")
            raise ConfigError(f"case name {case.name!r} is also used at {seen[case.name]}", path, int(line))
        seen[case.name] = case.source
    return cases
