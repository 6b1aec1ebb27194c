"""A fingerprint of everything the grader trusts for one exercise, taken before learner code runs and after."""

from __future__ import annotations

import hashlib
from pathlib import Path

from grader.course import COURSE_FILE, Exercise

GRADER_PACKAGE = Path(__file__).resolve().parent


def portable_name(path: Path, exercise: Exercise) -> str:
    """A trusted file's name relative to the grader's package or the course: the same wherever the checkout lies,
    so shards graded on other machines and a course copied elsewhere agree on what they remember."""
    for base in (GRADER_PACKAGE.parent, exercise.root):
        if path.is_relative_to(base):
            return path.relative_to(base).as_posix()
    return path.as_posix()


def trusted_files(exercise: Exercise, without: tuple[Path, ...] = ()) -> list[Path]:
    """The course file, the exercise's folder (but the learner's file), reference and catalogue, the grader's code."""
    found = [exercise.root / COURSE_FILE, exercise.solution, *([exercise.precomputed] if exercise.precomputed else [])]
    # The exercise's folder holds its checker, its suites and its cases; the learner's stub is not trusted.
    folders = (exercise.directory, exercise.hidden, exercise.mistakes, exercise.variants, GRADER_PACKAGE)
    for folder in (folder for folder in folders if folder not in without):
        if folder.is_dir():
            found += sorted(path for path in folder.rglob("*") if path.is_file() and "__pycache__" not in path.parts
                            and path != exercise.stub)
        elif folder.is_file():
            found.append(folder)
    return sorted(set(found))


def take(exercise: Exercise, without: tuple[Path, ...] = ()) -> dict[str, str]:
    """Path -> content hash, for every trusted file that exists (but those in the folders `without`)."""
    prints = {}
    for path in trusted_files(exercise, without):
        try:
            prints[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            prints[str(path)] = "unreadable"
    return prints


def changed(before: dict[str, str], exercise: Exercise) -> list[str]:
    """The trusted files that were added, removed or changed since `before` was taken."""
    after = take(exercise)
    return sorted(path for path in set(before) | set(after) if before.get(path) != after.get(path))
