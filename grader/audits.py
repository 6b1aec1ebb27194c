"""The grader's side of the audits: what the worker observed around a call becomes a verdict here."""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any


@dataclass
class Violation:
    """A broken rule of the exercise: which one (a mistake's VIOLATES names it) and what to tell the learner."""

    kind: str
    message: str


def inputs_modified(names: list[str], modified: list[int]) -> Violation | None:
    """A function that changed an input in place."""
    if not modified:
        return None
    return Violation("inputs-modified", f"modified its input {names[modified[0]]} in place: inputs must stay "
                                        f"unchanged (a chunk from a ring neighbour is passed on as it came)")


def check(audit: list[str], function: str, args: list[Any], observations: dict[str, Any],
          checker: ModuleType) -> Violation | None:
    """The first audit the observations break, if any; an audit with no observation fails (it was evaded)."""
    if "materialization" in audit:
        count = observations.get("materialized_count")
        if count is None:
            return Violation("materialization", "the materialization audit did not report: the call was not observed")
        if count:
            length = checker.total_key_length(function, args)
            ops = "; ".join(observations.get("materialized") or [])
            return Violation("materialization", (
                f"built {count} tensor(s) spanning all {length} keys ({ops}). In ring attention no device ever "
                f"holds every key: each holds one chunk and passes it on, because the concatenated keys and "
                f"values, or a full row of scores, would not fit in one GPU's memory. Work on one chunk at a time "
                f"and keep only the running output, sum and max."))
    if "peak-memory" in audit:
        peak = observations.get("peak_bytes")
        if peak is None:
            return Violation("peak-memory", "the peak-memory audit did not report: the call was not observed")
        budget = checker.peak_budget(function, args)
        if peak > budget:
            return Violation("peak-memory", (
                f"held {peak / 1024:.0f} KiB of tensors at once; this case allows {budget / 1024:.0f} KiB, about "
                f"one chunk's work plus the inputs. Memory grew with the sequence: keep only the running "
                f"statistics (output, sum, max) alive between chunks and let each chunk's scores be freed "
                f"before the next one arrives."))
    return None
