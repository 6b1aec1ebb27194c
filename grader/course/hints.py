"""An exercise's staged hints, each about the whole exercise or about the functions its front matter names.

    ---
    function: merge_chunk_stats          (or a list: function: [column_parallel_linear, row_parallel_linear])
    ---
    The text of the hint, in Markdown.

A hint without front matter is about the exercise as a whole. Hints open in file-name order, and so do the
hints about one function (`grader hint 07 merge_chunk_stats`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from grader.course.exercise import Exercise
from grader.course.yamlfile import Key, KeyTable
from grader.errors import ConfigError

FENCE = "---"
FRONT_MATTER = KeyTable("a hint's front matter (hints/EX/N-NAME.md)", (
    Key("function", "a function's name, or a list [NAME, NAME]", "the stub's functions the hint is about: `grader "
        "hint EX FUNCTION` opens it among theirs", None, "none: the exercise as a whole"),
))
KEYS = frozenset(FRONT_MATTER.names)


@dataclass(frozen=True)
class Hint:
    """One hint file: its name, the functions it is about (none: the whole exercise) and its Markdown."""

    path: Path
    functions: tuple[str, ...]
    text: str

    @property
    def name(self) -> str:
        return self.path.name


def load_hints(exercise: Exercise) -> list[Hint]:
    """Every hint of `exercise`, in the order they open; a malformed front matter is one line naming file and line."""
    return [read_hint(path) for path in exercise.hint_files()]


def read_hint(path: Path) -> Hint:
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != FENCE:
        return Hint(path, (), text)
    end = next((index for index, line in enumerate(lines[1:], start=1) if line.strip() == FENCE), None)
    if end is None:
        raise ConfigError(f"the front matter opened by {FENCE} on line 1 is never closed by another {FENCE}", path, 1)
    functions: list[str] = []
    for number, line in enumerate(lines[1:end], start=2):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, colon, value = line.partition(":")
        if not colon or key.strip() not in KEYS:
            raise ConfigError(f"front matter: expected 'function: NAME' or 'function: [NAME, NAME]', not "
                              f"{line.strip()!r}", path, number)
        value = value.strip()
        names = value[1:-1].split(",") if value.startswith("[") and value.endswith("]") else [value]
        found = [name.strip().strip("'\"") for name in names if name.strip()]
        if not found or not all(name.isidentifier() for name in found):
            raise ConfigError(f"front matter: {value!r} is not a function's name (or a list of them)", path, number)
        functions.extend(found)
    return Hint(path, tuple(dict.fromkeys(functions)), "".join(lines[end + 1:]).lstrip("\n"))


def functions_with_hints(hints: list[Hint]) -> list[str]:
    """The functions the hints name, in the order they first appear."""
    return list(dict.fromkeys(name for hint in hints for name in hint.functions))


def about(hints: list[Hint], function: str | None) -> list[Hint]:
    """The hints about `function` (every hint when None), in the order they open."""
    return hints if function is None else [hint for hint in hints if function in hint.functions]
