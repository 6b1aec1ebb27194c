"""A learner state rebuilt from the submissions kept in .grader/submissions/, when state.json cannot be read."""

from __future__ import annotations

import re
import time
from pathlib import Path

from grader.files import read_regular
from grader.results import file
from grader.results.learner_state import ExerciseState, State, Submitted

# What `LearnerState.record` names a submission's results: NNN-<stamp>.json, or NNN-<stamp>-K.json for a twin.
RESULTS_NAME = re.compile(r"(\d{3,})-(\d{8}T\d{6})(?:-\d+)?\.json")
ISO = "%Y-%m-%dT%H:%M:%S"


def rebuild(folder: Path) -> tuple[State, int]:
    """The state that `folder`/submissions/ proves (every readable submission, and acceptance where one passed),
    and how many submissions it holds. A file that is not a results file this grader wrote is passed over."""
    state = State()
    found = 0
    try:
        folders = sorted(path for path in (folder / "submissions").iterdir() if path.is_dir())
    except OSError:
        return State(), 0
    for kept in folders:
        records = sorted((record for path in _files(kept) if (record := _record(path, folder.parent)) is not None),
                         key=lambda record: (record.number, record.when))
        if not records:
            continue
        entry = ExerciseState(submissions=records, last_submission=records[-1].summary())
        first = next((record for record in records if record.status == "passed"), None)
        if first is not None:
            entry.accepted = first.summary()
            entry.accepted.number = first.number
        state.exercises[kept.name] = entry
        found += len(records)
    return state, found


def rebuilt_note(state: State, found: int, shown: str) -> str:
    """How the note about a state moved aside ends: what it was rebuilt from, or that a fresh one started."""
    if not found:
        return " and a fresh one started"
    accepted = sorted(name for name, entry in state.exercises.items() if entry.accepted is not None)
    return (f" and a new one rebuilt from the {found} submission{'s' if found != 1 else ''} kept in {shown}/"
            + (f" ({', '.join(accepted)} accepted)" if accepted else "") + "; hints opened are counted from 0 again")


def _files(kept: Path) -> list[Path]:
    try:
        return sorted(path for path in kept.iterdir() if RESULTS_NAME.fullmatch(path.name))
    except OSError:
        return []


def _record(path: Path, root: Path) -> Submitted | None:
    """One submission's record, as `record` wrote it, from its results file; None for anything else."""
    number, stamp = RESULTS_NAME.fullmatch(path.name).groups()  # type: ignore[union-attr]
    try:
        results = file.decode(read_regular(path))
        when = time.strftime(ISO, time.strptime(stamp, "%Y%m%dT%H%M%S"))
    except (OSError, ValueError):
        return None
    run = results.extra_data
    if run.file is None or run.counts is None:
        return None
    record = Submitted(when=when, file=run.file, status=run.status, passed=run.counts.passed,
                       failed=run.counts.failed, total=run.counts.total, number=int(number),
                       results=str(path.relative_to(root)))
    if run.max_score is not None:
        record.score, record.max_score = results.score, run.max_score
    source = next((other for other in path.parent.glob(f"{path.stem}.*") if other.suffix != ".json"), None)
    if source is not None:
        record.source = str(source.relative_to(root))
    return record
