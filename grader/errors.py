"""Typed errors that reach the user as one clear line; everything else is a grader error."""

from __future__ import annotations

from pathlib import Path

COURSE_FILE = Path("exercises") / "course.yaml"  # the course file: the folder above it is the course's root


class GraderError(Exception):
    """A problem the user can fix: bad arguments, a missing exercise, a malformed case file."""

    exit_code = 2


class UsageError(GraderError):
    """The command line asks for something that does not exist or does not fit together."""


class LearnerSyntaxError(GraderError):
    """The learner's file is not Python, found before anything ran: a failure of theirs, not a usage error."""

    exit_code = 1


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
    """' (did you mean X?)' for the choice a mistyped `word` most likely meant, else ''.

    By number first (`6` for `06-tensor-parallel-matmul`), then by a part of a name (`ring` for
    `07-ring-attention`, `merge-new-chunk` for `merge-new-chunk-has-larger-max`), then by spelling."""
    close = _by_number(word, choices) or _by_part(word, choices) or _by_spelling(word, choices)
    return f" (did you mean {close}?)" if close else ""


def _by_number(word: str, choices: list[str]) -> str:
    """The choice whose leading number is `word`'s (`6`, `006`: `06-...`); '' for a word that is no number."""
    if not word.isdigit():
        return ""
    for choice in choices:
        digits = choice[:len(choice) - len(choice.lstrip("0123456789"))]
        if digits and int(digits) == int(word):
            return choice
    return ""


def _by_part(word: str, choices: list[str]) -> str:
    """The first choice with `word` as one of its words, else as its start, else anywhere in it (3 letters or more)."""
    wanted = word.lower()
    if len(wanted) < 2:
        return ""
    lowered = [(choice, choice.lower()) for choice in choices]
    for found in ([choice for choice, low in lowered if wanted in low.replace("_", "-").split("-")],
                  [choice for choice, low in lowered if low.startswith(wanted)],
                  [choice for choice, low in lowered if len(wanted) >= 3 and wanted in low]):
        if found:
            return found[0]
    return ""


def _by_spelling(word: str, choices: list[str]) -> str:
    import difflib

    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    if not close:  # `ring-atention` against `07-ring-attention`: compare without the number too
        bare = {choice.split("-", 1)[-1]: choice for choice in choices if "-" in choice}
        close = [bare[found] for found in difflib.get_close_matches(word, list(bare), n=1, cutoff=0.6)]
    return close[0] if close else ""
