"""Every rule proven live: validate warns for a rule no case can fail, and for a forbidden operator or family that no
catalogued mistake calls (nothing then shows that the grader sees it, nor that the exercise's words on it are right).

A rule says itself whether the exercise declares it and whether it judges a given case's call
(grader/course/rules/rule.py: `declared`, `can_fail`): a memory budget with no case audited for it, or audited
cases the checker gives no budget, can never fail anyone. A forbidden entry is live once a catalogued mistake was
caught by the rule and, run here under the same observer as a learner's call, called an operator the entry stands
for: `aten.native_batch_norm` forbidden in a layer-norm exercise whose mistakes only call `F.layer_norm` is not.
"""

from __future__ import annotations

from typing import Any

from grader.course.cases import Case
from grader.course.operators import entry_name, observed
from grader.course.rules import RULES
from grader.course.rules.rule import Call, Rule
from grader.grading import diagnosis
from grader.grading.case import MEMORY_AUDIT, Judge
from grader.instructor.verdicts import Graded
from grader.results.validation import Check

SHOWN = 3  # entries or rules named in the check's line; the JSON's detail has them all


def liveness_checks(judge: Judge, cases: list[Case], mistakes: list[Graded]) -> list[Check]:
    """The warnings validate adds: rules no case can fail, forbidden entries no mistake calls (none when all live)."""
    checks = []
    dead = [f"{_rule_name(rule)}: {why}, so no case can fail it" for rule in RULES
            if rule.declared(judge.exercise.rules, judge.checker, cases) and (why := _never_fails(judge, rule, cases))]
    if dead:
        checks.append(Check("every rule can fail on some case", True, "; ".join(dead), warning=True))
    uncalled = uncalled_entries(judge, cases, mistakes)
    if uncalled:
        checks.append(Check("every forbidden operator and family is called by a catalogued mistake", True,
                            f"called by none: {', '.join(map(entry_name, uncalled))}; nothing then shows that the "
                            f"grader sees {'them' if len(uncalled) > 1 else 'it'}: add a mistake that calls "
                            f"{'each' if len(uncalled) > 1 else 'it'}, with VIOLATES = \"forbidden\"", warning=True))
    return checks


def uncalled_entries(judge: Judge, cases: list[Case], mistakes: list[Graded]) -> list[str]:
    """The exercise's forbidden entries (operators, `family:` names) that no catalogued mistake was seen calling."""
    entries = judge.exercise.rules.forbidden
    if not entries:
        return []
    by_name = {case.name: case for case in cases}
    called: set[str] = set()
    for graded in mistakes:
        caught = [by_name[result.name] for result in graded.results
                  if result.extra.get("violates") == "forbidden" and result.name in by_name
                  and MEMORY_AUDIT not in by_name[result.name].audit]
        if caught:  # broken by the rule somewhere: which operators, run here under the grader's observer
            called.update(forbidden_operators_seen(judge, caught[0], graded.path.stem))
    return [entry for entry in entries if not called & observed((entry,))]


def _never_fails(judge: Judge, rule: Rule, cases: list[Case]) -> str:
    """Why no case can fail `rule` ('' when one can): the first case it judges is enough."""
    judged = [case for case in cases if rule.audit is None or rule.audit in case.audit]
    if not judged:
        return f"no case has audit: [{rule.audit}]"
    for case in judged:
        inputs = judge.prepare(case)[0]
        if rule.can_fail(Call(judge.exercise.rules, judge.checker, case, inputs)):
            return ""
    if rule.audit is not None:
        return f"the checker gives none of the {len(judged)} cases with audit: [{rule.audit}] a budget"
    return f"none of the {len(judged)} cases is one it judges"


def _rule_name(rule: Rule) -> str:
    """A rule as exercise.yaml or a case file names it: its key, its audit word, else its first kind."""
    return rule.key or (f"the {rule.audit} rule" if rule.audit else rule.kinds[0] if rule.kinds else type(rule).__name__)


def forbidden_operators_seen(judge: Judge, case: Case, stem: str) -> tuple[str, ...]:
    """The forbidden operators the catalogued mistake `stem` calls on `case`, run here under the grader's observer."""
    behaviour: Any = diagnosis.catalogue(judge.exercise).behaviour(judge, case, [stem]).get(stem)
    return tuple(behaviour.forbidden_seen) if behaviour is not None else ()
