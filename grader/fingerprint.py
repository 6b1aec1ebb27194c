"""A fingerprint of everything the grader trusts for one exercise, taken before learner code runs and after."""

from __future__ import annotations

import hashlib
from pathlib import Path

from grader.course import COURSE_FILE, Exercise

GRADER_PACKAGE = Path(__file__).resolve().parent


def trusted_files(exercise: Exercise) -> list[Path]:
    """The course file, the exercise's cases, reference, catalogue and checker, and the grader's own code."""
    found = [exercise.root / COURSE_FILE, exercise.examples, exercise.solution]
    for folder in (exercise.hidden, exercise.mistakes, exercise.variants, GRADER_PACKAGE):
        if folder.is_dir():
            found += sorted(path for path in folder.rglob("*") if path.is_file() and "__pycache__" not in path.parts)
        elif folder.is_file():
            found.append(folder)
    if exercise.ring is not None:
        found.append(exercise.ring)
    return found


def take(exercise: Exercise) -> dict[str, str]:
    """Path -> content hash, for every trusted file that exists."""
    prints = {}
    for path in trusted_files(exercise):
        try:
            prints[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            prints[str(path)] = "unreadable"
    return prints


def changed(before: dict[str, str], exercise: Exercise) -> list[str]:
    """The trusted files that were added, removed or changed since `before` was taken."""
    after = take(exercise)
    return sorted(path for path in set(before) | set(after) if before.get(path) != after.get(path))
