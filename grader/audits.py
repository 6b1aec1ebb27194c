"""The rules around the learner's call, judged here from what the kernel measured and what the grader handed over.

Memory is measured by the kernel for the whole sandbox (a cgroup's peak, or the processes' peak
resident memory), so it holds whatever library the learner's code uses, NumPy included. What
the worker itself observed (its dispatch-mode audit) only explains a verdict, never makes one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MIB = 1 << 20


@dataclass
class Violation:
    """A broken rule of the exercise: which one (a mistake's VIOLATES names it) and what to tell the learner."""

    kind: str
    message: str


def inputs_modified(names: list[str], modified: list[int], reason: str = "") -> Violation | None:
    """A function that changed an input in place (seen in the shared pages the grader owns)."""
    if not modified:
        return None
    which = ", ".join(names[index] if index < len(names) else f"input {index}" for index in modified[:3])
    return Violation("inputs-modified", f"modified its input {which} in place: inputs must stay unchanged"
                                        + (f" ({reason})" if reason else ""))


def forbidden(seen: list[str], reason: str = "") -> Violation | None:
    """An operator the exercise forbids, seen in the learner's call (an observation from inside its process)."""
    if not seen:
        return None
    return Violation("forbidden", f"called {', '.join(map(str, seen[:3]))}, which this exercise forbids"
                                  + (f": {reason}" if reason else ""))


def memory(audit: list[str], function: str, inputs: Any, peak: int | None, observations: dict[str, Any],
           checker: Any) -> Violation | None:
    """Whether the call held more memory at once than the case allows, as the kernel measured it."""
    if "memory" not in audit or peak is None:
        return None
    budget = checker.memory_budget(function, inputs)
    if budget is None or peak <= budget:
        return None
    reasons = checker.rule_reasons
    held = f"held {peak / MIB:.0f} MiB at once (measured by the operating system); this case allows {budget / MIB:.0f} MiB"
    spanning = observations.get("materialized") or []
    if observations.get("materialized_count"):
        span = f"{checker.span(function, inputs)} {checker.span_unit}".strip()
        return Violation("materialization", f"{held}. It built tensors spanning all {span} "
                                             f"({'; '.join(map(str, spanning[:3]))})."
                                             + (f" {reasons['materialization']}" if "materialization" in reasons else ""))
    return Violation("peak-memory", f"{held}: far more than one step's work needs."
                                    + (f" {reasons['peak-memory']}" if "peak-memory" in reasons else ""))
