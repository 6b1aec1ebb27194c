"""Typed errors that reach the user as one clear line; everything else is a grader error."""

from __future__ import annotations

from pathlib import Path

COURSE_FILE = Path("exercises") / "course.yaml"  # the course file: the folder above it is the course's root


class GraderError(Exception):
    """A problem the user can fix: bad arguments, a missing exercise, a malformed case file."""

    exit_code = 2


class UsageError(GraderError):
    """The command line asks for something that does not exist or does not fit together."""


class ConfigError(GraderError):
    """A course, exercise or case file is missing or malformed."""

    def __init__(self, message: str, path: object = None, line: int | None = None) -> None:
        where = ""
        if path is not None:
            shown = course_path(path)
            where = f"{shown}:{line}: " if line else f"{shown}: "
        super().__init__(f"{where}{message}")
        self.message = message
        self.path = path
        self.line = line


class CourseBroken(GraderError):
    """The course's own code (a checker, its reference, a rank program) failed while grading: the run proves nothing
    about the learner's file, so it is not graded. `where` is 'FILE:LINE: ExceptionType: message'."""

    exit_code = 3

    def __init__(self, where: str) -> None:
        super().__init__(f"the course is broken: {where}")
        self.where = where

    def __reduce__(self) -> tuple:  # rebuilt from `where` alone in another process (validate's pool)
        return type(self), (self.where,)


def course_path(path: object) -> str:
    """`path` as an instructor names it: from the course's root where it lies in a course (the folder holding
    exercises/course.yaml), wherever the checkout is; else as given."""
    try:
        found = Path(path)  # type: ignore[arg-type]
        for folder in found.parents if found.is_absolute() else ():
            if (folder / COURSE_FILE).is_file():
                return found.relative_to(folder).as_posix()
    except (OSError, TypeError, ValueError):
        pass
    return str(path)


def did_you_mean(word: str, choices: list[str]) -> str:
    """' (did you mean X?)' for the closest of `choices` to a mistyped `word`, else ''."""
    import difflib

    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    if not close:  # `ring-atention` against `07-ring-attention`: compare without the number too
        bare = {choice.split("-", 1)[-1]: choice for choice in choices if "-" in choice}
        close = [bare[found] for found in difflib.get_close_matches(word, list(bare), n=1, cutoff=0.6)]
    return f" (did you mean {close[0]}?)" if close else ""
