"""The memory rule: a memory-audited call holds at once no more than its case allows, as the kernel measured it.

A case file asks for it per case (`audit: [memory]`); the exercise's checker gives each such case its budget
(`memory_budget`) and the size no tensor of a correct call spans (`span`). Memory is measured by the kernel for
the whole sandbox (a cgroup's peak, or the processes' peak resident memory), so it holds whatever library the
learner's code uses, NumPy included. What the worker observed (its dispatch-mode audit) only explains a verdict:
a tensor as long as the whole span is evidence the learner's code could hide but never fake in its own favour.
"""

from __future__ import annotations

from typing import Any

from grader.course.rules.rule import Call, Rule, Violation

AUDIT = "memory"  # a case's `audit:` word for this rule
MIB = 1 << 20
# What a hidden case says of its measured peak: one of a few steps, a couple of bits the learner's code could choose,
# as a hidden case's exception type is one of a fixed list (grader/grading/failure.py); an exact figure, many more.
HIDDEN_STEPS = (16, 8, 4, 3, 2, 1.5)


class Memory(Rule):
    """No more memory held at once than the case's budget, and no tensor spanning the whole sequence."""

    kinds = ("materialization", "peak-memory")
    audit = AUDIT
    drawn_as = "memory"
    observes = {"materialized": (list, str), "materialized_count": (int, None), "peak_bytes": (int, None)}

    def asks(self, call: Call) -> dict[str, Any]:
        return {"key_length": call.checker.span(call.case.function, call.inputs)}

    def declared(self, rules: Any, checker: Any, cases: list[Any]) -> bool:
        from grader.course.checker import Checker

        # The checker gives a budget (it overrides memory_budget), or a case asks for the audit.
        return type(checker).memory_budget is not Checker.memory_budget or any(AUDIT in case.audit for case in cases)

    def can_fail(self, call: Call) -> bool:
        return AUDIT in call.case.audit and call.checker.memory_budget(call.case.function, call.inputs) is not None

    def unjudged(self, call: Call) -> str:
        if AUDIT in call.case.audit and call.peak is None:
            return ("not judged here: nothing on this machine counts all of your code's memory (no cgroup, "
                    "and no seccomp to keep it to one process); submit where the grader's sandbox runs")
        return ""

    def judge(self, call: Call) -> Violation | None:
        """Whether the call held more memory at once than the case allows, as the kernel measured it."""
        peak, checker, function, inputs = call.peak, call.checker, call.case.function, call.inputs
        if AUDIT not in call.case.audit or peak is None:
            return None
        budget = checker.memory_budget(function, inputs)
        if budget is None:
            return None
        reasons = checker.rule_reasons
        spanning = call.observations.get("materialized") or []
        if call.observations.get("materialized_count"):
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
        held = (f"held {peak / MIB:.0f} MiB at once (measured by the operating system); this case allows "
                f"{budget / MIB:.0f} MiB")
        reason = f" {reasons['peak-memory']}" if "peak-memory" in reasons else ""
        return Violation("peak-memory", f"{held}: far more than one step's work needs.{reason}",
                         f"held {hidden_multiple(peak, budget)} the {budget / MIB:.0f} MiB this case allows, at once "
                         f"(measured by the operating system).{reason}")


def hidden_multiple(peak: int, budget: int) -> str:
    """'at least 2 times': how far over `budget` the measured `peak` went, as a hidden case may say it."""
    ratio = peak / budget if budget else float("inf")
    step = next((step for step in HIDDEN_STEPS if ratio >= step), None)
    return f"at least {step:g} times" if step is not None else "more than"


RULE = Memory()
