"""What the grader trusts for one exercise: the digests of its files, taken before learner code runs and after, and the
keys of "what decides a verdict" that every remembered result is kept under (validate's verdicts, a cohort's
results files, the answers on disk, a process's prepared inputs)."""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

from grader import PACKAGE
from grader.course.exercise import COURSE_FILE, Exercise


def portable_name(path: Path, exercise: Exercise) -> str:
    """A trusted file's name relative to the grader's package or the course: the same wherever the checkout lies,
    so shards graded on other machines and a course copied elsewhere agree on what they remember."""
    for base in (PACKAGE.parent, exercise.root):
        if path.is_relative_to(base):
            return path.relative_to(base).as_posix()
    return path.as_posix()


def trusted_files(exercise: Exercise, without: tuple[Path, ...] = ()) -> list[Path]:
    """The course file, the exercise's folder (but the learner's file), reference and catalogue, the grader's code."""
    found = [exercise.root / COURSE_FILE, exercise.solution, *([exercise.precomputed] if exercise.precomputed else [])]
    # The exercise's folder holds its checker, its suites and its cases; the learner's stub is not trusted.
    folders = (exercise.directory, exercise.hidden, exercise.mistakes, exercise.variants, PACKAGE)
    for folder in (folder for folder in folders if folder not in without):
        if folder.is_dir():
            found += sorted(path for path in folder.rglob("*") if path.is_file() and "__pycache__" not in path.parts
                            and path != exercise.stub)
        elif folder.is_file():
            found.append(folder)
    return sorted(set(found))


def take(exercise: Exercise, without: tuple[Path, ...] = ()) -> dict[str, str]:
    """Path -> content hash, for every trusted file that exists (but those in the folders `without`)."""
    digests = {}
    for path in trusted_files(exercise, without):
        try:
            digests[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            digests[str(path)] = "unreadable"
    return digests


def changed(before: dict[str, str], exercise: Exercise) -> list[str]:
    """The trusted files that were added, removed or changed since `before` was taken."""
    after = take(exercise)
    return sorted(path for path in set(before) | set(after) if before.get(path) != after.get(path))


def grader_files() -> list[Path]:
    """Every module of the grader's package, in every subpackage."""
    return sorted(path for path in PACKAGE.rglob("*.py") if "__pycache__" not in path.parts)


def exercise_code(exercise: Exercise) -> list[Path]:
    """What a case's inputs and answers depend on, but the case itself: the exercise's own code (its checker,
    its suites: not the learner's stub), its settings, its reference, and a learner bundle's stored examples."""
    files = sorted(path for path in exercise.directory.rglob("*.py")
                   if path not in (exercise.stub, exercise.starter) and "__pycache__" not in path.parts)
    return [*files, exercise.directory / "exercise.yaml", exercise.solution,
            *([exercise.precomputed] if exercise.precomputed is not None else [])]


def digest(paths: Iterable[Path], exercise: Exercise) -> str:
    """One hash of files, each by its portable name and its content (a missing file counts as missing)."""
    found = hashlib.sha256()
    for path in paths:
        try:
            content = path.read_bytes()
        except OSError:
            content = b"\0missing"
        found.update(portable_name(path, exercise).encode() + b"\0" + content + b"\0")
    return found.hexdigest()


@functools.cache
def _grader_digest() -> str:
    # Once per process: the code a process runs is the code it imported, whatever changes on disk later.
    return hashlib.sha256(b"".join(path.relative_to(PACKAGE).as_posix().encode() + b"\0" + path.read_bytes() + b"\0"
                                   for path in grader_files())).hexdigest()


def code_key(exercise: Exercise) -> str:
    """What decides a case's verdict besides the case and the graded file: the exercise's code and settings, its
    reference, and the grader's code. Validate's verdicts, the answers on disk and prepared inputs are kept under it."""
    return hashlib.sha256(f"{digest(exercise_code(exercise), exercise)}\n{_grader_digest()}".encode()).hexdigest()


def course_key(exercise: Exercise) -> str:
    """What decides every verdict of a submission but its file: everything trusted (cases, catalogue, code, the
    grader), but the course file, to which adding an exercise changes no verdict of this one."""
    return digest((path for path in trusted_files(exercise) if path != exercise.root / COURSE_FILE), exercise)


def course_readable(exercise: Exercise) -> bool:
    """Whether whoever runs this process may read what a hidden case hides: the reference solution and every hidden
    case file are there and readable by the real user (a checkout of the course; not a learner bundle, nor a course
    kept from its reader). The figures a hidden failure would then say tell that reader nothing new."""
    if exercise.precomputed is not None:
        return False
    return all(path.is_file() and os.access(path, os.R_OK) for path in [exercise.solution, *exercise.hidden_files()])
