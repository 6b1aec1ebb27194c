"""The rules around the learner's call, judged here from what the kernel measured and what the grader handed over.

Memory is measured by the kernel for the whole sandbox (a cgroup's peak, or the processes' peak
resident memory), so it holds whatever library the learner's code uses, NumPy included. What
the worker itself observed (its dispatch-mode audit) only explains a verdict, never makes one.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any

MIB = 1 << 20


@dataclass
class Violation:
    """A broken rule of the exercise: which one (a mistake's VIOLATES names it) and what to tell the learner."""

    kind: str
    message: str


def inputs_modified(names: list[str], modified: list[int]) -> Violation | None:
    """A function that changed an input in place (seen in the shared pages the grader owns)."""
    if not modified:
        return None
    which = ", ".join(names[index] if index < len(names) else f"input {index}" for index in modified[:3])
    return Violation("inputs-modified", f"modified its input {which} in place: inputs must stay unchanged "
                                        f"(a chunk from a ring neighbour is passed on as it came)")


def memory(audit: list[str], function: str, args: list[Any], peak: int | None, observations: dict[str, Any],
           checker: ModuleType) -> Violation | None:
    """Whether the call held more memory at once than the case allows, as the kernel measured it."""
    if "memory" not in audit:
        return None
    if peak is None:
        return None
    budget = checker.memory_budget(function, args)
    if peak <= budget:
        return None
    length = checker.total_key_length(function, args)
    held = f"held {peak / MIB:.0f} MiB at once (measured by the operating system); this case allows {budget / MIB:.0f} MiB"
    spanning = observations.get("materialized") or []
    if observations.get("materialized_count"):
        return Violation("materialization", (
            f"{held}. It built tensors spanning all {length} keys ({'; '.join(map(str, spanning[:3]))}). In ring "
            f"attention no device ever holds every key: each holds one chunk and passes it on, because the "
            f"concatenated keys and values, or a full row of scores, would not fit in one GPU's memory. Work on "
            f"one chunk at a time and keep only the running output, sum and max."))
    return Violation("peak-memory", (
        f"{held}, far more than one chunk's work. Memory grew with the sequence: something as large as the "
        f"scores against every key was alive at once (a list of score blocks, the full score matrix, in torch or "
        f"NumPy). Keep only the running statistics (output, sum, max) between chunks and let each chunk's scores "
        f"be freed before the next one arrives."))
