"""The forbidden operators: operators, or families of them, that the learner's call may not run.

exercise.yaml: `rules: {forbidden: [aten._softmax, {family: layer_norm}]}`. The worker's observer
(grader/sandboxed/observe.py) lists the forbidden operators it saw reach torch's dispatcher;
grader/course/operators.py says what each entry stands for and refuses a name that could never be seen.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from grader.course.operators import FAMILIES, FAMILY_PREFIX, check_names, family_of, observed, parse_forbidden
from grader.course.rules.rule import Call, Rule, Violation


class Forbidden(Rule):
    """No operator the rule's entries name, nor one torch turns them into, runs in the learner's call."""

    kinds = ("forbidden",)
    key = "forbidden"
    default: tuple[str, ...] = ()
    value_type = f"list of operators (aten.NAME) and families ({{family: NAME}}: {', '.join(FAMILIES)})"
    meaning = ("what the learner's call may not run, seen as it reaches torch's dispatcher: an operator stands for "
               "itself and what torch turns it into, a family for every public route to one computation")
    observes = {"forbidden_seen": (list, str)}

    def parse(self, value: object, path: Path, line: int | None) -> tuple[str, ...]:
        return parse_forbidden(value, path, line)

    def written(self, setting: tuple[str, ...]) -> list[Any]:
        return [{"family": entry[len(FAMILY_PREFIX):]} if entry.startswith(FAMILY_PREFIX) else entry
                for entry in setting]

    def check(self, setting: tuple[str, ...], path: Path) -> None:
        check_names(setting, path)  # needs torch's registry: run where grading starts

    def asks(self, call: Call) -> dict[str, Any]:
        return {"forbidden": sorted(observed(call.rules.forbidden))}

    def declared(self, rules: Any, checker: Any, cases: list[Any]) -> bool:
        return bool(rules.forbidden)

    def can_fail(self, call: Call) -> bool:
        return True  # every call is watched for the operators the rule names

    def judge(self, call: Call) -> Violation | None:
        entries = call.rules.forbidden
        seen = [name for name in call.observations.get("forbidden_seen", []) if name in observed(entries)]
        return called(seen, call.reason("forbidden"), entries)


def called(seen: list[str], reason: str = "", entries: tuple[str, ...] = ()) -> Violation | None:
    """An operator the exercise forbids, seen in the learner's call (an observation from inside its process);
    `entries`, the rule as written, says when the operator is one route of a family the rule names."""
    if not seen:
        return None
    family = next((found for name in seen if (found := family_of(name, entries))), "")
    return Violation("forbidden", f"called {', '.join(map(str, seen[:3]))}, which this exercise forbids"
                                  + (f" ({FAMILIES[family][1]})" if family else "")
                                  + (f": {reason}" if reason else ""), evidence=seen)


RULE = Forbidden()
