"""Typed errors that reach the user as one clear line; everything else is a grader error."""

from __future__ import annotations


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
            where = f"{path}:{line}: " if line else f"{path}: "
        super().__init__(f"{where}{message}")
        self.message = message
        self.path = path
        self.line = line
