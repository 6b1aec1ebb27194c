"""An exercise's visible examples by name: chosen with `run -k`, found for `repro`; hidden names are never read.

A name that matches no example is answered twice over: at once, from the names in the case files alone (no
checker, so no torch: `names_at_once`), and, where those cannot tell, once the examples are built.
"""

from __future__ import annotations

import fnmatch
import json
import struct
from typing import TYPE_CHECKING, Any

from grader.course.cases import Case, load_exercise_cases
from grader.course.exercise import Exercise
from grader.errors import UsageError, did_you_mean

if TYPE_CHECKING:
    from grader.course.checker import Checker

GLOB = "*?["
HEADER_BYTES = 256 * 1024  # of a learner bundle's stored examples: the JSON part that names them (channel/wire.py)


def examples_checker(exercise: Exercise) -> Checker:
    """The checker that builds the examples: the exercise's own, or in a learner bundle the stored examples."""
    if exercise.precomputed is not None:
        from grader.course.precomputed import load_precomputed

        return load_precomputed(exercise.precomputed)
    from grader.course.checker import load_checker  # imports torch

    return load_checker(exercise.checker)


def visible(exercise: Exercise, checker: Checker | None = None) -> list[Case]:
    """The examples, checked as grading checks them; the hidden suite's files are not even opened."""
    return load_exercise_cases(exercise, checker or examples_checker(exercise), include_hidden=False)


def matches(name: str, pattern: str) -> bool:
    """pytest's -k for a plain word (a part of the name, in any case); a pattern with * ? or [ matches the whole name."""
    name, pattern = name.lower(), pattern.lower()
    if any(character in pattern for character in GLOB):
        return fnmatch.fnmatchcase(name, pattern)
    return pattern in name


def select(exercise: Exercise, pattern: str, distributed: tuple[str, int] | None = None) -> set[str]:
    """The names of the examples `pattern` matches, and with `distributed` (`--ring 4`: an option and a world size) of
    that distributed suite's cases too; none is a usage error listing them."""
    cases = visible(exercise)
    if distributed is not None:
        cases += _suite_cases(exercise, *distributed)
    chosen = {case.name for case in cases if matches(case.name, pattern)}
    if not chosen:
        raise _no_match(exercise, pattern, [case.name for case in cases])
    return chosen


def check_pattern_at_once(exercise: Exercise, pattern: str, distributed: tuple[str, int] | None = None) -> None:
    """select()'s usage error for a pattern matching no example, raised before torch is imported, where the case
    files' names can tell: without a distributed suite (whose cases only its code knows), and with names that read
    (else select() says what is wrong once the examples are built)."""
    names = None if distributed is not None else names_at_once(exercise)
    if names is not None and not any(matches(name, pattern) for name in names):
        raise _no_match(exercise, pattern, names)


def check_name_at_once(exercise: Exercise, name: str) -> None:
    """find()'s usage error for a name that is no example, raised before torch is imported where the names read."""
    names = names_at_once(exercise)
    if names is not None and name not in names:
        raise _unknown(exercise, name, names)


def names_at_once(exercise: Exercise) -> list[str] | None:
    """The examples' names, in order, read from the examples file alone (a learner bundle: its stored examples'
    header); None where that file does not read as the grader reads it (grading then says why)."""
    try:
        if exercise.precomputed is not None:
            return _stored_names(exercise.precomputed.read_bytes()[:2 * struct.calcsize("!Q") + HEADER_BYTES])
        from grader.course.yamlfile import load_yaml

        return _case_names(load_yaml(exercise.examples))
    except Exception:  # noqa: BLE001  (a file that does not read: the full check answers it, with its line)
        return None


def _case_names(data: Any) -> list[str] | None:
    """The names load_case_file gives the cases of one file's data (`repeat: 3` makes name-1 to name-3)."""
    if data is None:
        return []
    defaults = data.get("defaults") or {}
    names = []
    for entry in data["cases"]:
        repeat = entry.get("repeat", defaults.get("repeat", 1))
        if not isinstance(entry["name"], str) or not isinstance(repeat, int) or isinstance(repeat, bool):
            return None
        names += [entry["name"]] if repeat == 1 else [f"{entry['name']}-{copy}" for copy in range(1, repeat + 1)]
    return names


def _stored_names(data: bytes) -> list[str]:
    """The case names in the JSON header of a message as grader/channel/wire.py frames it: length, header length,
    header, tensors."""
    size = struct.calcsize("!Q")
    (header,) = struct.unpack_from("!Q", data, size)
    body = json.loads(data[2 * size:2 * size + header].decode("utf-8"))["body"]
    return [str(case["name"]) for case in body["cases"]]


def _no_match(exercise: Exercise, pattern: str, names: list[str]) -> UsageError:
    return UsageError(f"-k {pattern!r} matches no example of {exercise.name}{did_you_mean(pattern, names)}; "
                      f"its examples: {', '.join(names) or 'none'}")


def _unknown(exercise: Exercise, name: str, names: list[str]) -> UsageError:
    return UsageError(f"{exercise.name} has no example called {name!r}{did_you_mean(name, names)}; "
                      f"its examples: {', '.join(names) or 'none'}")


def _suite_cases(exercise: Exercise, option: str, world: int) -> list[Case]:
    """The cases `--ranks N` (the first suite) or `--OPTION N` runs; none where there is no such suite or size
    (grading says so, with the sizes there are)."""
    checker = examples_checker(exercise)
    suites = checker.suites() if hasattr(checker, "suites") else {}  # a learner bundle may hold no suite
    suite = next(iter(suites.values()), None) if option == "ranks" else suites.get(option)
    return suite.cases(world) if suite is not None else []


def find(exercise: Exercise, name: str, checker: Checker | None = None) -> Case:
    """The example called `name`. A hidden case's name gets the same answer as a made-up one: which names the
    hidden suite uses is not for this command to confirm."""
    cases = visible(exercise, checker)
    for case in cases:
        if case.name == name:
            return case
    raise _unknown(exercise, name, [case.name for case in cases])
