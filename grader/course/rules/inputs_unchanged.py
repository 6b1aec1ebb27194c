"""Inputs unchanged: the learner's call hands back every input as it was handed over.

exercise.yaml: `rules: {inputs_unchanged: true}` (the default). The grader reads the inputs' shared pages back
after the call; the worker also reports which input tensors torch counted a write to (`version_changed`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from grader.channel.replies import INPUT
from grader.course.rules.rule import Call, Rule, Violation
from grader.errors import ConfigError


class InputsUnchanged(Rule):
    """No input changed in place, as the grader read the inputs back or the worker saw torch write to one."""

    kinds = ("inputs-modified",)
    key = "inputs_unchanged"
    default = True
    value_type = "true or false"
    meaning = ("every input comes back as it was handed over: its bytes, in the shared memory the grader owns, are "
               "compared with the grader's own copy after the call")
    observes = {"version_changed": (list, INPUT)}

    def parse(self, value: object, path: Path, line: int | None) -> bool:
        if not isinstance(value, bool):
            raise ConfigError("rules: inputs_unchanged must be true or false", path, line)
        return value

    def declared(self, rules: Any, checker: Any, cases: list[Any]) -> bool:
        return bool(rules.inputs_unchanged)

    def can_fail(self, call: Call) -> bool:
        return bool(call.names)  # a case with an input tensor, whose pages are read back

    def judge(self, call: Call) -> Violation | None:
        if not call.rules.inputs_unchanged:
            return None
        changed = sorted(set(call.modified) | set(call.observations.get("version_changed", [])))
        return changed_inputs(call.names if changed else [], changed, call.reason("inputs-modified"))


def changed_inputs(names: list[str], modified: list[int], reason: str = "") -> Violation | None:
    """A function that changed an input in place (seen in the shared pages the grader owns)."""
    if not modified:
        return None
    which = ", ".join(names[index] if index < len(names) else f"input {index}" for index in modified[:3])
    return Violation("inputs-modified", f"modified its input {which} in place: inputs must stay unchanged"
                                        + (f" ({reason})" if reason else ""), evidence=modified)


RULE = InputsUnchanged()
