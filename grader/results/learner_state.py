"""The learner's state file (.grader/state.json): its typed records, and its one encoder and decoder.

Per exercise: the hints opened, the last run and the last submission in short, every submission kept (numbered,
with its results file and the file graded), the first one accepted, and every backup of a replaced file. A file
this grader cannot use is answered with the reason a note gives the learner, never with an error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from grader.results.typed import Mismatch, from_json, to_json


@dataclass(kw_only=True)
class Summary:
    """A run or a submission in short (`status`, `list`); the accepted one carries its number."""

    when: str
    file: str
    status: str
    passed: int
    failed: int
    total: int
    only: str | None = None    # `run -k PATTERN`: only the examples matching it ran
    number: int | None = None  # the accepted submission's number (absent in a state kept before it was)
    not_attempted: int | None = None  # of `failed`, those still raising NotImplementedError (absent: none, or not kept)


@dataclass(kw_only=True)
class Submitted:
    """A submission kept in .grader/submissions/: its summary, number, score, results file and source."""

    when: str
    file: str
    status: str
    passed: int
    failed: int
    total: int
    number: int
    score: float | None = None
    max_score: float | None = None
    results: str           # from the course root
    source: str | None = None
    not_attempted: int | None = None

    def summary(self) -> Summary:
        return Summary(when=self.when, file=self.file, status=self.status, passed=self.passed, failed=self.failed,
                       total=self.total, not_attempted=self.not_attempted)


@dataclass(kw_only=True)
class Backup:
    """A learner's file kept before `before` (reset, restore N, a notebook cell) replaced it."""

    number: int
    when: str
    file: str    # from the course root
    before: str


@dataclass(kw_only=True)
class ExerciseState:
    """Everything kept for one exercise; a field the learner has not come to yet is None (left out of the file)."""

    hints_opened: int | None = None     # how many are open, as a state written before hints were kept by name says
    hints_seen: list[str] | None = None  # the hint files open, in the order opened
    last_run: Summary | None = None
    last_submission: Summary | None = None
    accepted: Summary | None = None
    submissions: list[Submitted] | None = None
    backups: list[Backup] | None = None


@dataclass(kw_only=True)
class State:
    """The whole file: an entry per exercise, by name."""

    exercises: dict[str, ExerciseState] = field(default_factory=dict)


def encode(state: State) -> str:
    return json.dumps(to_json(state), indent=2) + "\n"


def decode(raw: bytes) -> tuple[State, str | None]:
    """The state in `raw` and None, or an empty state and why the file cannot be used (the note's words)."""
    try:
        data = json.loads(raw.decode("utf-8-sig"))  # -sig: an editor may have added a byte-order mark
    except UnicodeDecodeError:
        return State(), "not UTF-8 text"
    except (ValueError, RecursionError):  # RecursionError: arrays nested thousands deep
        return State(), "not valid JSON"
    try:
        state = from_json(State, data)
    except Mismatch as error:
        return State(), _reason(error.path)
    if any(entry.hints_opened is not None and entry.hints_opened < 0 for entry in state.exercises.values()):
        return State(), _reason(("exercises", "", "hints_opened"))
    return state, None


def _reason(path: tuple[str | int, ...]) -> str:
    """The note's words for a field that is not as this grader writes it."""
    if not path:
        return "not a JSON object"
    if len(path) == 1:
        return "its exercises are not a JSON object"
    if len(path) == 2:
        return "an exercise's entry is not a JSON object"
    key = path[2]
    if key == "hints_opened":
        return "a count of hints opened is not a whole number"
    if key == "hints_seen":
        return "its hints opened are not a list of file names"
    if key == "accepted":
        return "an accepted submission is incomplete"
    if key in ("last_run", "last_submission"):
        return f"a {str(key).replace('_', ' ')} is incomplete"
    return f"a record of its {key} is incomplete"
