"""A learner state rebuilt from the submissions kept in .grader/submissions/, when state.json cannot be read."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from grader.files import read_regular
from grader.learner.state_schema import SUBMISSION_FIELDS, shape_problem

# What `LearnerState.record` names a submission's results: NNN-<stamp>.json, or NNN-<stamp>-K.json for a twin.
RESULTS_NAME = re.compile(r"(\d{3,})-(\d{8}T\d{6})(?:-\d+)?\.json")
ISO = "%Y-%m-%dT%H:%M:%S"


def rebuild(folder: Path) -> tuple[dict[str, Any], int]:
    """The state that `folder`/submissions/ proves (every readable submission, and acceptance where one passed),
    and how many submissions it holds. A file that is not a results file this grader wrote is passed over."""
    exercises: dict[str, Any] = {}
    found = 0
    try:
        folders = sorted(path for path in (folder / "submissions").iterdir() if path.is_dir())
    except OSError:
        return {}, 0
    for kept in folders:
        records = sorted((record for path in _files(kept) if (record := _record(path, folder.parent)) is not None),
                         key=lambda record: (record["number"], record["when"]))
        if not records:
            continue
        entry: dict[str, Any] = {"submissions": records, "last_submission": _summary(records[-1])}
        first = next((record for record in records if record["status"] == "passed"), None)
        if first is not None:
            entry["accepted"] = {**_summary(first), "number": first["number"]}
        exercises[kept.name] = entry
        found += len(records)
    data = {"exercises": exercises} if exercises else {}
    return (data, found) if shape_problem(data) is None else ({}, 0)


def rebuilt_note(data: dict[str, Any], found: int, shown: str) -> str:
    """How the note about a state moved aside ends: what it was rebuilt from, or that a fresh one started."""
    if not found:
        return " and a fresh one started"
    accepted = sorted(name for name, entry in data["exercises"].items() if "accepted" in entry)
    return (f" and a new one rebuilt from the {found} submission{'s' if found != 1 else ''} kept in {shown}/"
            + (f" ({', '.join(accepted)} accepted)" if accepted else "") + "; hints opened are counted from 0 again")


def _files(kept: Path) -> list[Path]:
    try:
        return sorted(path for path in kept.iterdir() if RESULTS_NAME.fullmatch(path.name))
    except OSError:
        return []


def _record(path: Path, root: Path) -> dict[str, Any] | None:
    """One submission's record, as `record` wrote it, from its results file; None for anything else."""
    number, stamp = RESULTS_NAME.fullmatch(path.name).groups()  # type: ignore[union-attr]
    try:
        data = json.loads(read_regular(path).decode("utf-8"))
        extra, counts = data["extra_data"], data["extra_data"]["counts"]
        when = time.strftime(ISO, time.strptime(stamp, "%Y%m%dT%H%M%S"))
        record = {"when": when, "file": extra["file"], "status": extra["status"], "passed": counts["passed"],
                  "failed": counts["failed"], "total": counts["total"], "number": int(number),
                  "results": str(path.relative_to(root))}
        if isinstance(data.get("score"), (int, float)) and isinstance(extra.get("max_score"), (int, float)):
            record.update(score=data["score"], max_score=extra["max_score"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not all(type(record[field]) is kind for field, kind in SUBMISSION_FIELDS.items()):
        return None
    source = next((other for other in path.parent.glob(f"{path.stem}.*") if other.suffix != ".json"), None)
    if source is not None:
        record["source"] = str(source.relative_to(root))
    return record


def _summary(record: dict[str, Any]) -> dict[str, Any]:
    return {key: record[key] for key in ("when", "file", "status", "passed", "failed", "total")}
