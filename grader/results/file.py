"""The results file, the grader's central record of a grade: its typed records, and its one encoder and decoder.

One file serves every reader: `grader submit` keeps it in .grader/submissions/, `grader grade` in a gradebook's
results/, the autograder hands it to Gradescope as results.json. Its fields are Gradescope's (score, output,
tests, ...); everything that is the grader's own is under `extra_data`, where `format` says which layout of the
file it is. A file without one is format 1: the same fields, written before the format was.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader import __version__
from grader.inert import inert
from grader.results import Diagnosis
from grader.results.typed import from_json, nullable, to_json

FORMAT = 2  # this grader's layout of the file; it reads this one and every earlier one


class NewerFormat(ValueError):
    """A results file written by a newer grader, in a layout this one does not know."""

    def __init__(self, found: int) -> None:
        super().__init__(f"written by a newer grader (results format {found}; grader {__version__} reads formats "
                         f"1 to {FORMAT}): read it with the grader that wrote it, or a newer one")


@dataclass(kw_only=True)
class Counts:
    """How many cases had each verdict."""

    passed: int = 0
    failed: int = 0  # every case that counts as a failure, those not attempted included
    skipped: int = 0
    total: int = 0


@dataclass(kw_only=True)
class SubmissionRecord:
    """Which submission of a cohort this is, and what its verdict was reached under (`grader grade` only)."""

    id: str
    name: str                # as found in the submissions' folder
    sha256: str = ""         # of the file graded; "" when none was read
    key: str = ""            # what it was graded under; "" for no verdict that stands (graded again next run)
    settings: dict[str, Any] = field(default_factory=dict)
    submitted_at: str = ""   # ISO time it was handed in; "" unknown
    reason: str = ""         # why it was not graded; "" when it was
    traceback: str | None = None            # the grader's own, when it failed on this submission
    fingerprints: list[int] | None = None   # of its code, for the similarity report
    fingerprints_cut: bool | None = None    # True: its code ran past similarity.TOKEN_LIMIT, its first part gave them


@dataclass(kw_only=True)
class CaseRecord:
    """A test's `extra_data`: the grader's own verdict on one case on one device."""

    case: str
    outcome: str              # an Outcome's value
    suite: str
    device: str
    function: str = ""
    message: str = ""
    diagnosis: Diagnosis | None = nullable()
    required: bool = False
    points: float = 1.0
    not_run: str | None = None           # why it was reported without running (CaseResult.not_run)
    cause: str | None = None             # what failed, in the grader's words (CaseResult.cause): the views group by it
    extra: dict[str, Any] | None = None  # suite-specific numbers, such as a distributed suite's per-rank table


@dataclass(kw_only=True)
class TestRecord:
    """One case's entry among Gradescope's tests."""

    __test__ = False  # a record, not something for pytest to collect

    name: str = ""
    number: str = ""
    score: float
    max_score: float = 0.0
    status: str = ""          # Gradescope's: "passed" or "failed"
    visibility: str = "visible"
    output: str = ""
    output_format: str = "text"
    tags: list[str] = field(default_factory=list)
    extra_data: CaseRecord


@dataclass(kw_only=True)
class RunRecord:
    """The file's `extra_data`: the grader's own account of the whole grade."""

    format: int = 1
    status: str               # passed, failed, error, or "not graded" (a cohort's submission with nothing to grade)
    max_score: float | None = nullable()
    exercise: str | None = None
    mode: str | None = None
    file: str | None = None
    notes: list[str] | None = None
    containment: str | None = None
    integrity_error: str | None = None
    not_graded: str | None = None
    required_failed: list[str] | None = None
    counts: Counts | None = None
    grader_version: str | None = None       # the autograder's results.json
    submission: SubmissionRecord | None = None  # a gradebook's results file


@dataclass(kw_only=True)
class ResultsFile:
    """The whole file: Gradescope's fields, the grader's own under `extra_data`."""

    score: float
    execution_time: float = 0.0
    output: str = ""
    output_format: str = "text"
    visibility: str = "visible"
    stdout_visibility: str = "hidden"
    tests: list[TestRecord] = field(default_factory=list)
    extra_data: RunRecord


def to_dict(record: Any) -> Any:
    """A results file (or one of its records) as JSON values, with every string in it, keys included, inert: a
    platform may show any of them in a terminal or a page."""
    return _inert_all(to_json(record))


def encode(results: ResultsFile) -> str:
    """The file's text."""
    return json.dumps(to_dict(results), indent=2) + "\n"


def from_dict(data: Any) -> ResultsFile:
    """The records of a decoded file, of this format or an earlier one; NewerFormat for a later one, Mismatch
    (a ValueError naming the field) for anything that is not a results file."""
    extra = data.get("extra_data") if isinstance(data, dict) else None
    found = extra.get("format") if isinstance(extra, dict) else None
    if type(found) is int and found > FORMAT:
        raise NewerFormat(found)
    return from_json(ResultsFile, data)


def decode(text: str | bytes) -> ResultsFile:
    """The records of a file's text; a ValueError says what is wrong with it."""
    return from_dict(json.loads(text))


def read(path: Path) -> ResultsFile:
    """The records of the file at `path`; OSError when it cannot be read, a ValueError when it is not one."""
    return decode(path.read_bytes())


def _inert_all(value: Any) -> Any:
    """`value` with every string in it, keys included, made inert (numbers and None as they are)."""
    if isinstance(value, str):
        return inert(value)
    if isinstance(value, dict):
        return {_inert_all(key): _inert_all(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_inert_all(item) for item in value]
    return value
