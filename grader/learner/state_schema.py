"""What a state file this grader wrote looks like: the fields of each record, checked on every read."""

from __future__ import annotations

from typing import Any

# What `record` writes for a run or a submission; `status` and `list` read these fields.
SUMMARY_FIELDS = {"when": str, "file": str, "status": str, "passed": int, "failed": int, "total": int}
# Each submission is numbered and kept (`history`, `restore`); so is each file replaced by `reset` or `restore`.
SUBMISSION_FIELDS = {**SUMMARY_FIELDS, "number": int, "results": str}
BACKUP_FIELDS = {"number": int, "when": str, "file": str, "before": str}
OPTIONAL_FIELDS = {"source": (str,), "score": (int, float), "max_score": (int, float), "number": (int,)}


def _complete(record: Any, fields: dict[str, type]) -> bool:
    """Whether `record` has every field of `fields`, and the optional ones it has are of their kind."""
    return isinstance(record, dict) and all(type(record.get(field)) is kind for field, kind in fields.items()) \
        and all(type(record[field]) in kinds for field, kinds in OPTIONAL_FIELDS.items() if field in record)


def shape_problem(data: Any) -> str | None:
    """Why `data` is not a state this grader wrote (the reason a note gives), or None when it is."""
    if not isinstance(data, dict):
        return "not a JSON object"
    exercises = data.get("exercises", {})
    if not isinstance(exercises, dict):
        return "its exercises are not a JSON object"
    for entry in exercises.values():
        if not isinstance(entry, dict):
            return "an exercise's entry is not a JSON object"
        hints = entry.get("hints_opened", 0)
        if type(hints) is not int or hints < 0:  # type(), not isinstance: true and false are not counts
            return "a count of hints opened is not a whole number"
        seen = entry.get("hints_seen", [])
        if not (isinstance(seen, list) and all(isinstance(name, str) for name in seen)):
            return "its hints opened are not a list of file names"
        for key in ("last_run", "last_submission", "accepted"):
            if entry.get(key) is not None and not _complete(entry[key], SUMMARY_FIELDS):
                return f"a {key.replace('_', ' ')} is incomplete" if key != "accepted" else \
                    "an accepted submission is incomplete"
        for key, fields in (("submissions", SUBMISSION_FIELDS), ("backups", BACKUP_FIELDS)):
            records = entry.get(key, [])
            if not (isinstance(records, list) and all(_complete(record, fields) for record in records)):
                return f"a record of its {key} is incomplete"
    return None
