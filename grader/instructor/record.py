"""What the last valid `grader validate` found in an exercise's catalogue, kept beside it: solutions/EX/validated.json.

The record holds a digest of what decides the catalogue's verdicts (the exercise's code, settings and
cases, its reference, its mistakes, variants and hints) and, per mistake, the cases that catch it and
the ones where the diagnosis names it. Committed with the course, it tells a change that was not
validated again from one that was (`stale`), and it lets a test suite check a whole course cheaply: a
mistake on one case that names it, a variant on a sample of cases, instead of every file on every case.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from grader.course import trust
from grader.course.exercise import Exercise
from grader.files import write_atomic
from grader.results.validation import RECORD_FORMAT, MistakeRecord, ValidatedRecord, decode_record, encode_record

NAME = "validated.json"
FORMAT = RECORD_FORMAT


def path_of(exercise: Exercise) -> Path:
    return exercise.solution.parent / NAME


def digest(exercise: Exercise) -> str:
    """Every file that decides a catalogue verdict, but the grader's own code (its tests hold it to its word)."""
    folders = (exercise.directory, exercise.hidden, exercise.mistakes, exercise.variants, exercise.hints)
    files = {exercise.solution, *trust.exercise_code(exercise)}
    for folder in folders:
        if folder.is_dir():
            files.update(path for path in folder.rglob("*") if path.is_file() and "__pycache__" not in path.parts
                         and path != exercise.stub)
    return trust.digest(sorted(files), exercise)


def write(exercise: Exercise, matrix: Any, distributed_cases: set[str]) -> Path:
    """The record of a valid validation, its matrix in short."""
    mistakes = {}
    for row in matrix.rows:
        # Cases where this mistake alone agrees first: the diagnosis names it there from that case alone.
        named = [case for case, found in row.matches.items() if found[:1] == [row.stem] and len(found) == 1] or \
            [case for case, stem in row.named.items() if stem == row.stem]
        counts: dict[str, int] = {}
        for stem in row.named.values():
            if stem and stem != "non-finite":
                counts[stem] = counts.get(stem, 0) + 1
        mistakes[row.stem] = MistakeRecord(
            caught_by=row.caught_by, named_on=named,
            only_distributed=bool(row.caught_by) and set(row.caught_by) <= distributed_cases,
            named_most=bool(counts) and counts.get(row.stem, 0) == max(counts.values()))
    record = ValidatedRecord(exercise=exercise.name, digest=digest(exercise), mistakes=mistakes,
                             variants=sorted(stem for stem, accepted in matrix.variants.items() if accepted))
    path = path_of(exercise)
    write_atomic(path, encode_record(record))
    return path


def read(exercise: Exercise) -> ValidatedRecord | None:
    """The exercise's record; None when it has none this grader reads."""
    try:
        return decode_record(path_of(exercise).read_bytes())
    except OSError:
        return None


def stale(exercise: Exercise) -> str:
    """Why the record does not stand for the exercise as it is ('' when it does)."""
    found = read(exercise)
    if found is None:
        return f"no {path_of(exercise).relative_to(exercise.root)}: run grader validate {exercise.name}"
    if found.digest != digest(exercise):
        return (f"{exercise.name} changed since its last valid validate: run grader validate {exercise.name} and "
                f"commit {path_of(exercise).relative_to(exercise.root)}")
    return ""
