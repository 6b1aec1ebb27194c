"""Where the course's own code failed: its file and line, so that a course's bug is reported as the course's.

A checker, a reference solution, a catalogued mistake or variant, a rank program: each is the
instructor's code. When one raises, the one line that reports it names the innermost frame that is
in the course's files (never the grader's own, nor Python's or torch's), as
`exercises/01-stable-softmax/checker.py:41: ZeroDivisionError: division by zero`.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from grader import PACKAGE
from grader.errors import CourseBroken, GraderError
from grader.inert import fit, one_line

MESSAGE_LIMIT = 300


def course_frame(error: BaseException, root: Path) -> tuple[Path, int | None] | None:
    """The file and line in the course where `error` arose: a SyntaxError's own, else the innermost frame of its
    traceback that is in a course file (under `root`, outside the grader and Python's installation)."""
    if isinstance(error, SyntaxError) and error.filename and _in_course(Path(error.filename), root):
        return Path(error.filename), error.lineno if isinstance(error.lineno, int) and error.lineno > 0 else None
    try:
        frames = traceback.extract_tb(error.__traceback__)
    except Exception:  # noqa: BLE001  (a traceback that cannot be read names no line)
        return None
    for frame in reversed(frames):
        if _in_course(Path(frame.filename), root):
            return Path(frame.filename), frame.lineno
    return None


def where(error: BaseException, root: Path, fallback: Path | None = None) -> str:
    """'FILE:LINE: ExceptionType: message', FILE relative to the course's root (`fallback` when no frame of the
    traceback is the course's)."""
    found = course_frame(error, root) or ((fallback, None) if fallback is not None else None)
    text = one_line(fit(_message(error), MESSAGE_LIMIT))
    described = f"{type(error).__name__}: {text}" if text else type(error).__name__
    if found is None:
        return described
    path, line = found
    return f"{shown(path, root)}:{line}: {described}" if line else f"{shown(path, root)}: {described}"


@contextmanager
def charged_to_course(root: Path, fallback: Path | None = None) -> Iterator[None]:
    """Run course code: whatever it raises (but the grader's own typed errors) becomes CourseBroken, one line."""
    try:
        yield
    except GraderError:
        raise
    except Exception as error:  # noqa: BLE001  (instructor code: any failure is the course's)
        raise CourseBroken(where(error, root, fallback)) from None


def shown(path: Path, root: Path) -> str:
    """A course file as its instructor names it: from the course's root."""
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except (ValueError, OSError):
        return str(path)


def _in_course(path: Path, root: Path) -> bool:
    try:
        path = path.resolve()
    except (OSError, RuntimeError):
        return False
    installed = {Path(prefix).resolve() for prefix in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    return (path.is_relative_to(root.resolve()) and not path.is_relative_to(PACKAGE)
            and not any(path.is_relative_to(prefix) for prefix in installed))


def _message(error: BaseException) -> str:
    if isinstance(error, SyntaxError):
        return error.msg or ""
    try:
        return str(error)
    except Exception:  # noqa: BLE001
        return ""
