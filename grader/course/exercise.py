"""The course: which exercises exist, each one a folder with an exercise.yaml saying where its pieces are.

    exercises/course.yaml            course: a title; exercises: a list of exercise folders; hand_in (a
                                     learner bundle's): how to hand in the archive `grader submit` writes
    exercises/NAME/exercise.yaml     name, title, stub (the learner's file), limits, rules, max_score
    exercises/NAME/checker.py        the exercise's Checker (grader/course/checker.py)
    exercises/NAME/README.md, starter/STUB, cases/examples.yaml, cases/hidden/*.yaml
    solutions/NAME/STUB, solutions/NAME/mistakes/, solutions/NAME/variants/, hints/NAME/*.md

Every path may be set in exercise.yaml (relative to the exercise's folder); the defaults are above.
`precomputed: cases/examples.grader` (what `grader export learner` writes) grades the examples from
that file, made by grader/course/precomputed.py, instead of from the checker, the case files and the reference.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from grader import PACKAGE
from grader.course.exercise_keys import COURSE, DISTRIBUTED, EXERCISE, HAND_IN_DEFAULT  # noqa: F401 (a bundle's)
from grader.course.promises import Promises, parse_promises
from grader.course.rules.settings import Rules, check_rules, parse_rules
from grader.course.scale_spec import ScaleSpec, parse_scale
from grader.course.yamlfile import LineDict, line_of, line_of_key, load_yaml, require
from grader.errors import COURSE_FILE, ConfigError, UsageError, did_you_mean
from grader.files import SOURCE_LIMIT, kind_of

EXERCISE_FILE = "exercise.yaml"
KNOWN_KEYS = frozenset(EXERCISE.names)  # grader/course/exercise_keys.py declares each, with its type and default


@dataclass(frozen=True)
class Distributed:
    """How an exercise's distributed suite runs (exercise.yaml's `distributed`): a plain `submit`, `grader grade`
    and the autograder run it with `ranks` ranks; its cases count toward the score unless `counts` is false."""

    ranks: int = 2
    counts: bool = True


@dataclass(frozen=True)
class Exercise:
    """One exercise: its folder and the absolute path of each of its pieces."""

    name: str
    title: str
    root: Path
    directory: Path
    stub: Path
    starter: Path
    statement: Path
    checker: Path
    examples: Path
    hidden: Path
    solution: Path
    mistakes: Path
    variants: Path
    hints: Path
    time_limit: float = 10.0
    time_budget: float = 300.0  # the whole command's seconds (grading/budget.py): a run that never returns is cut
    memory_limit_mb: int = 4096
    time_factor: float = 1.0  # a learner's extra time: every case's limit, its own or the default, times this
    max_score: float | None = None  # None: one point per case
    rules: Rules = field(default_factory=Rules)
    precomputed: Path | None = None  # a learner bundle's examples, stored whole: no checker, cases or reference
    distributed: Distributed | None = None  # its distributed suite, where every submission runs it
    scale: ScaleSpec | None = None  # what `grader scale` measures (grader/course/scale_spec.py)
    promises: Promises | None = None  # the ranges its statement promises, held to the cases (course/promises.py)

    def hint_files(self) -> list[Path]:
        """The staged hints, in the order they open."""
        if not self.hints.is_dir():
            return []
        return sorted(self.hints.glob("*.md"))

    def hidden_files(self) -> list[Path]:
        """The hidden suite's case files, in name order."""
        if self.hidden.is_file():
            return [self.hidden]
        return sorted(self.hidden.glob("*.yaml")) if self.hidden.is_dir() else []


def find_root(start: Path | None = None) -> Path:
    """The repository root: $GRADER_ROOT, else the nearest folder above holding the course file."""
    if os.environ.get("GRADER_ROOT"):
        return Path(os.environ["GRADER_ROOT"]).resolve()
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / COURSE_FILE).is_file():
            return folder
    if (PACKAGE.parent / COURSE_FILE).is_file():  # the checkout the grader is installed from
        return PACKAGE.parent
    raise UsageError(f"no course found: no {COURSE_FILE} in {here} or any folder above it")


def load_course(root: Path) -> list[Exercise]:
    """Every exercise of the course, each read from its folder's exercise.yaml; the first broken one raises."""
    exercises, broken = load_course_leniently(root)
    if broken:
        raise next(iter(broken.values()))
    return exercises


def load_course_leniently(root: Path) -> tuple[list[Exercise], dict[str, ConfigError]]:
    """The exercises that load, and for each that does not (by folder name) why: one broken exercise
    must not stop a learner working on another."""
    root = root.resolve()
    path = root / COURSE_FILE
    data = load_yaml(path)
    entries = require(data, "exercises", list, path)
    exercises, broken = [], {}
    for index, entry in enumerate(entries, start=1):
        overrides: dict = {}
        if isinstance(entry, str):
            folder = entry
        elif isinstance(entry, dict):
            overrides = dict(entry)
            folder = overrides.pop("directory", None) or f"exercises/{require(entry, 'name', str, path)}"
        else:
            raise ConfigError(f"exercise #{index} must be a folder or a mapping, not {entry!r}", path)
        try:
            exercises.append(load_exercise(root, root / folder, overrides, path))
        except ConfigError as error:
            broken[Path(folder).name] = error
    names = [exercise.name for exercise in exercises]
    for name in names:
        if names.count(name) > 1:
            raise ConfigError(f"two exercises are called {name!r}", path)
    return exercises, broken


def load_exercise(root: Path, folder: Path, overrides: dict | None = None, course: Path | None = None) -> Exercise:
    """One exercise from its folder (exercise.yaml), with the course file's overrides on top."""
    root, folder = root.resolve(), folder.resolve()
    path = folder / EXERCISE_FILE
    if path.is_file():
        written = load_yaml(path) or {}
        if not isinstance(written, dict):
            raise ConfigError("expected a mapping of keys to values", path, line_of(written))
    elif overrides:
        written, path = {}, course or path
    else:
        raise ConfigError(f"{folder.name} has no {EXERCISE_FILE}", path)
    data = LineDict({**written, **(overrides or {})})
    data.line = line_of(written)
    # The course file's overrides are written in another file: their lines are not this file's.
    data.key_lines = {key: line for key, line in getattr(written, "key_lines", {}).items() if key not in (overrides or {})}
    unknown = EXERCISE.unknown(data)
    if unknown:
        raise ConfigError(f"unknown key {unknown[0]!r} (known: {', '.join(sorted(KNOWN_KEYS))})", path,
                          line_of_key(data, unknown[0]))
    get = lambda key, kind=str, default=None: require(data, key, kind, path, default)  # noqa: E731
    name = get("name", default=folder.name)
    stub = folder / get("stub")
    inside = lambda key, default: _path(root, folder, get(key, default=default))  # noqa: E731
    limit = float(get("time_limit", (int, float), EXERCISE.default("time_limit")))
    budget = float(get("time_budget", (int, float), EXERCISE.default("time_budget")))
    memory = int(get("memory_limit_mb", int, EXERCISE.default("memory_limit_mb")))
    max_score = get("max_score", (int, float), EXERCISE.default("max_score"))
    for key, value in (("time_limit", limit), ("time_budget", budget), ("memory_limit_mb", memory),
                       ("max_score", max_score)):
        if value is not None and value <= 0:
            raise ConfigError(f"{key} must be positive, not {data[key]!r}", path, line_of_key(data, key))
    return Exercise(
        name=name, title=get("title", default=name), root=root, directory=folder, stub=stub,
        starter=inside("starter", f"starter/{stub.name}"), statement=inside("statement", "README.md"),
        checker=inside("checker", "checker.py"), examples=inside("examples", "cases/examples.yaml"),
        hidden=inside("hidden", "cases/hidden"),
        solution=inside("solution", f"{root}/solutions/{name}/{stub.name}"),
        mistakes=inside("mistakes", f"{root}/solutions/{name}/mistakes"),
        variants=inside("variants", f"{root}/solutions/{name}/variants"),
        hints=inside("hints", f"{root}/hints/{name}"),
        time_limit=limit, time_budget=budget, memory_limit_mb=memory,
        max_score=float(max_score) if max_score is not None else None,
        rules=parse_rules(data.get("rules"), path, line_of_key(data, "rules")),
        precomputed=inside("precomputed", None) if data.get("precomputed") is not None else None,
        distributed=_distributed(data.get("distributed"), path, line_of_key(data, "distributed")),
        scale=parse_scale(data.get("scale"), path, line_of_key(data, "scale")),
        promises=parse_promises(data.get("promises"), path, line_of_key(data, "promises")))


def hand_in(root: Path) -> str:
    """How a learner bundle's submissions are handed in: the course file's `hand_in`, else a general line."""
    path = root / COURSE_FILE
    fallback = COURSE.default("hand_in")
    return require(load_yaml(path), "hand_in", str, path, fallback).strip() or fallback


def _path(root: Path, folder: Path, value: str) -> Path:
    """A path from exercise.yaml: absolute, from the repository root ('/...' is kept), or from the folder."""
    return Path(value) if Path(value).is_absolute() else (folder / value).resolve()


def _distributed(value: object, path: Path, line: int | None) -> Distributed | None:
    if value is None:
        return None
    if not isinstance(value, dict) or DISTRIBUTED.unknown(value):
        raise ConfigError("distributed must be a mapping of ranks (2 or more) and counts (true or false)", path,
                          line)
    ranks = value.get("ranks", DISTRIBUTED.default("ranks"))
    counts = value.get("counts", DISTRIBUTED.default("counts"))
    if isinstance(ranks, bool) or not isinstance(ranks, int) or ranks < 2:
        raise ConfigError(f"distributed: ranks must be a whole number of 2 or more, not {ranks!r}", path,
                          line)
    if not isinstance(counts, bool):
        raise ConfigError(f"distributed: counts must be true or false, not {counts!r}", path, line)
    return Distributed(ranks, counts)


def check_forbidden(exercise: Exercise) -> None:
    """Refuse a rule the grader could never see broken, such as a forbidden operator the worker's observer could
    never see (misspelt, or always decomposed by torch first): one line naming exercise.yaml and the line. Needs
    torch's registry, so it runs where grading starts."""
    check_rules(exercise.rules, exercise.directory / EXERCISE_FILE)


def find_exercise(root: Path, name: str | None) -> Exercise:
    """The exercise called `name` (or a unique prefix of it, or its folder), or the only one when no name is given."""
    exercises, broken = load_course_leniently(root)
    names = ", ".join([exercise.name for exercise in exercises] + list(broken))
    if name is None:
        if len(exercises) + len(broken) == 1:
            if broken:
                raise next(iter(broken.values()))
            return exercises[0]
        raise UsageError(f"name an exercise: the course has {len(exercises) + len(broken)} ({names})")
    wanted = name.rstrip("/").rsplit("/", 1)[-1]  # `exercises/07-ring-attention/` from tab completion
    for folder, error in broken.items():
        if folder == wanted or (folder.startswith(wanted) and not any(e.name.startswith(wanted) for e in exercises)):
            raise error
    exact = [e for e in exercises if wanted in (e.name, e.name.split("-", 1)[-1], e.directory.name)]
    if len(exact) == 1:
        return exact[0]
    prefixed = [e for e in exercises if e.name.startswith(wanted)]
    if len(prefixed) == 1:
        return prefixed[0]
    if len(prefixed) > 1:
        raise UsageError(f"{name!r} could be any of {', '.join(e.name for e in prefixed)}: say which")
    raise UsageError(f"no exercise called {name!r}{did_you_mean(wanted, [e.name for e in exercises])}; "
                     f"the course has: {names}")


def match_exercise(exercises: list[Exercise], word: str) -> Exercise | None:
    """The exercise `word` names (its name, the name without its number, its folder or a unique prefix), else None.

    For commands whose first word may be an exercise or something else (`grader restore 01`, `grader hint 2`)."""
    wanted = word.rstrip("/").rsplit("/", 1)[-1]
    if not wanted:
        return None
    exact = [e for e in exercises if wanted in (e.name, e.name.split("-", 1)[-1], e.directory.name)]
    prefixed = exact or [e for e in exercises if e.name.startswith(wanted)]
    return prefixed[0] if len(prefixed) == 1 else None


def exercise_at(exercises: list[Exercise], path: Path) -> Exercise | None:
    """The exercise whose folder (or hints or solutions folder) holds `path`, else None."""
    here = path.resolve()
    for exercise in exercises:
        for folder in (exercise.directory, exercise.hints, exercise.solution.parent):
            if here == folder or here.is_relative_to(folder):
                return exercise
    return None



def learner_file(path: Path) -> Path:
    """`path` made absolute, if it is a Python file that can be graded; else a usage error, before any grading starts.

    The worker would otherwise report a README or a folder as the learner's own import failure. A symbolic
    link is not graded (it would be followed to whatever it names: the reference, a hidden case); the folders
    above the file are the user's own and may be links."""
    absolute = path.parent.resolve() / path.name
    try:
        kind, size = kind_of(absolute), absolute.lstat().st_size
    except OSError:
        raise UsageError(f"{path}: no such file to grade") from None
    if kind == "link":
        raise UsageError(f"{path}: not graded: a symbolic link (name the file itself)")
    if kind == "folder":
        raise UsageError(f"{path} is a folder, not a Python file to grade")
    if kind != "file":
        raise UsageError(f"{path} is not a regular file to grade")
    if absolute.suffix != ".py":
        raise UsageError(f"{path} is not a Python file (.py) to grade")
    if size > SOURCE_LIMIT:
        raise UsageError(f"{path} is too large to grade ({size:,} bytes; the limit is {SOURCE_LIMIT:,})")
    return absolute


def check_exists(path: Path, what: str) -> Path:
    """Return `path`, or fail with a line naming what is missing."""
    if not path.exists():
        raise ConfigError(f"{what} is missing", path)
    return path
