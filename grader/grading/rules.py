"""The rules around the learner's call, judged here from what the kernel measured and what the grader handed over.

Memory is measured by the kernel for the whole sandbox (a cgroup's peak, or the processes' peak
resident memory), so it holds whatever library the learner's code uses, NumPy included. What
the worker itself observed (its dispatch-mode audit) only explains a verdict, never makes one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MIB = 1 << 20
# Every kind of broken rule a verdict can name, which a catalogued mistake's VIOLATES may say it breaks.
KINDS = ("materialization", "peak-memory", "inputs-modified", "forbidden", "communication")


@dataclass
class Violation:
    """A broken rule of the exercise: which one (a mistake's VIOLATES names it) and what to tell the learner;
    on a hidden case, the message without figures the learner's code could have chosen."""

    kind: str
    message: str
    hidden_message: str = ""


def inputs_modified(names: list[str], modified: list[int], reason: str = "") -> Violation | None:
    """A function that changed an input in place (seen in the shared pages the grader owns)."""
    if not modified:
        return None
    which = ", ".join(names[index] if index < len(names) else f"input {index}" for index in modified[:3])
    return Violation("inputs-modified", f"modified its input {which} in place: inputs must stay unchanged"
                                        + (f" ({reason})" if reason else ""))


def forbidden(seen: list[str], reason: str = "", entries: tuple[str, ...] = ()) -> Violation | None:
    """An operator the exercise forbids, seen in the learner's call (an observation from inside its process);
    `entries`, the rule as written, says when the operator is one route of a family the rule names."""
    from grader.course.operators import FAMILIES, family_of

    if not seen:
        return None
    family = next((found for name in seen if (found := family_of(name, entries))), "")
    return Violation("forbidden", f"called {', '.join(map(str, seen[:3]))}, which this exercise forbids"
                                  + (f" ({FAMILIES[family][1]})" if family else "")
                                  + (f": {reason}" if reason else ""))


def memory(audit: list[str], function: str, inputs: Any, peak: int | None, observations: dict[str, Any],
           checker: Any) -> Violation | None:
    """Whether the call held more memory at once than the case allows, as the kernel measured it."""
    if "memory" not in audit or peak is None:
        return None
    budget = checker.memory_budget(function, inputs)
    if budget is None:
        return None
    reasons = checker.rule_reasons
    spanning = observations.get("materialized") or []
    if observations.get("materialized_count"):
        # The worker saw a tensor as long as the whole span: evidence against the learner, which the learner's
        # code could hide but never fake in its own favour. Over budget or not, it is the rule broken.
        within = "" if peak <= budget else (
            f"held {peak / MIB:.0f} MiB at once (measured by the operating system); this case allows "
            f"{budget / MIB:.0f} MiB. ")
        span = f"{checker.span(function, inputs)} {checker.span_unit}".strip()
        reason = f" {reasons['materialization']}" if "materialization" in reasons else ""
        return Violation("materialization", f"{within}It built tensors spanning all {span} "
                                             f"({'; '.join(map(str, spanning[:3]))}).{reason}",
                         f"it built tensors spanning all {span}.{reason}")
    if peak <= budget:
        return None
    held = f"held {peak / MIB:.0f} MiB at once (measured by the operating system); this case allows {budget / MIB:.0f} MiB"
    reason = f" {reasons['peak-memory']}" if "peak-memory" in reasons else ""
    return Violation("peak-memory", f"{held}: far more than one step's work needs.{reason}",
                     f"held {hidden_multiple(peak, budget)} the {budget / MIB:.0f} MiB this case allows, at once "
                     f"(measured by the operating system).{reason}")


# What a hidden case says of its measured peak: one of a few steps, a couple of bits the learner's code could choose,
# as a hidden case's exception type is one of a fixed list (grader/grading/failure.py); an exact figure, many more.
HIDDEN_STEPS = (16, 8, 4, 3, 2, 1.5)


def hidden_multiple(peak: int, budget: int) -> str:
    """'at least 2 times': how far over `budget` the measured `peak` went, as a hidden case may say it."""
    ratio = peak / budget if budget else float("inf")
    step = next((step for step in HIDDEN_STEPS if ratio >= step), None)
    return f"at least {step:g} times" if step is not None else "more than"
