"""What `grader validate` found for one exercise: its checks, the catalogue's matrix, and the time it took."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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
