"""The course file: which exercises exist and where each one's pieces live."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from grader.errors import ConfigError, UsageError
from grader.yamlfile import load_yaml, require

COURSE_FILE = Path("exercises") / "course.yaml"


@dataclass(frozen=True)
class Exercise:
    """One exercise as the course file describes it, with absolute paths."""

    name: str
    title: str
    root: Path
    directory: Path
    stub: Path
    starter: Path
    statement: Path
    examples: Path
    hidden: Path
    solution: Path
    mistakes: Path
    variants: Path
    hints: Path
    checker: str
    time_limit: float
    memory_limit_mb: int
    ring: Path | None = None  # the distributed ring's case file (`grader run --ring N`), when there is one

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
    package_root = Path(__file__).resolve().parent.parent
    if (package_root / COURSE_FILE).is_file():
        return package_root
    raise UsageError(f"no course found: no {COURSE_FILE} in {here} or any folder above it")


def load_course(root: Path) -> list[Exercise]:
    """Every exercise of the course, checked for the fields it needs."""
    path = root / COURSE_FILE
    data = load_yaml(path)
    entries = require(data, "exercises", list, path)
    exercises = []
    for entry in entries:
        get = lambda key, kind=str, default=None: require(entry, key, kind, path, default)  # noqa: E731
        name = get("name")
        folder = root / get("directory", default=f"exercises/{name}")
        exercises.append(Exercise(
            name=name,
            title=get("title", default=name),
            root=root,
            directory=folder,
            stub=root / get("stub"),
            starter=root / get("starter", default=f"exercises/{name}/starter/{Path(get('stub')).name}"),
            statement=root / get("statement", default=f"exercises/{name}/README.md"),
            examples=root / get("examples", default=f"exercises/{name}/cases/examples.yaml"),
            hidden=root / get("hidden", default=f"exercises/{name}/cases/hidden"),
            solution=root / get("solution"),
            mistakes=root / get("mistakes", default=f"solutions/{name}/mistakes"),
            variants=root / get("variants", default=f"solutions/{name}/variants"),
            hints=root / get("hints", default=f"hints/{name}"),
            checker=get("checker"),
            time_limit=float(get("time_limit", (int, float), 10)),
            memory_limit_mb=int(get("memory_limit_mb", int, 4096)),
            ring=root / get("ring") if entry.get("ring") is not None else None,
        ))
    return exercises


def find_exercise(root: Path, name: str | None) -> Exercise:
    """The exercise called `name`, or the only one when the course has one and no name is given."""
    exercises = load_course(root)
    if name is None:
        if len(exercises) == 1:
            return exercises[0]
        names = ", ".join(exercise.name for exercise in exercises)
        raise UsageError(f"name an exercise: the course has {len(exercises)} ({names})")
    for exercise in exercises:
        if name in (exercise.name, exercise.name.split("-", 1)[-1]):
            return exercise
    names = ", ".join(exercise.name for exercise in exercises)
    raise UsageError(f"no exercise called {name!r}; the course has: {names}")


def check_exists(path: Path, what: str) -> Path:
    """Return `path`, or fail with a line naming what is missing."""
    if not path.exists():
        raise ConfigError(f"{what} is missing", path)
    return path
