"""What `grader validate` found for one exercise (its checks, the catalogue's matrix, the time it took), and the
record of a valid validation it keeps beside the exercise's solution (validated.json): its records and codec."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from grader.results.typed import Mismatch, from_json, to_json

RECORD_FORMAT = 1  # validated.json's layout; a record of another is not read (the exercise is validated again)


@dataclass
class Check:
    """One line of the validation: what was checked, whether it held, and why not (a warning never fails)."""

    name: str
    ok: bool
    detail: str = ""
    warning: bool = False


@dataclass
class Validation:
    """Every check for one exercise, the catalogue's matrix, and how long it took."""

    exercise: str
    checks: list[Check] = field(default_factory=list)
    matrix: Any = None
    timing: dict[str, Any] = field(default_factory=dict)
    recorded: str = ""  # where the record of a valid validation was written (solutions/EX/validated.json)

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.checks)

    def to_json(self) -> dict[str, Any]:
        return {"exercise": self.exercise, "valid": self.ok,
                "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail, "warning": c.warning}
                           for c in self.checks],
                "matrix": self.matrix.to_json() if self.matrix else None, "timing": self.timing,
                "recorded": self.recorded}


@dataclass(kw_only=True)
class MistakeRecord:
    """How the catalogue's verdicts went for one mistake: the cases that catch it, those where it alone is named."""

    caught_by: list[str]
    named_on: list[str]
    only_distributed: bool  # caught by the distributed suite alone
    named_most: bool        # over the whole suite, no other mistake is named more often where it is caught


@dataclass(kw_only=True)
class ValidatedRecord:
    """validated.json: a digest of what decides the catalogue's verdicts, and those verdicts, per mistake."""

    digest: str
    exercise: str
    format: int = RECORD_FORMAT
    mistakes: dict[str, MistakeRecord]
    variants: list[str]  # the variants accepted


def encode_record(record: ValidatedRecord) -> str:
    return json.dumps(to_json(record), indent=1, sort_keys=True) + "\n"


def decode_record(text: str | bytes) -> ValidatedRecord | None:
    """The record in `text`; None for anything else, a record of another layout included."""
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("format") != RECORD_FORMAT:
            return None
        return from_json(ValidatedRecord, data)
    except (Mismatch, ValueError, RecursionError):
        return None
