"""What an exercise declares, proven by its cases and its catalogue: validate's checks that every rule is live and
every promised range covered.

Every rule proven live: validate warns for a rule no case can fail, and for a forbidden operator or family that no
catalogued mistake calls (nothing then shows that the grader sees it). A rule says itself whether the exercise
declares it and whether it judges a given case's call (grader/course/rules/rule.py: `declared`, `can_fail`): a memory
budget with no case audited for it, or audited cases the checker gives no budget, can never fail anyone. A forbidden
entry is live once a catalogued mistake was caught by the rule and, run here under the same observer as a learner's
call, called an operator the entry stands for: `aten.native_batch_norm` forbidden in a layer-norm exercise whose
mistakes only call `F.layer_norm` is not.

Every promised range covered (exercise.yaml's `promises`, grader/course/promises.py): a case covers a range in a dtype
when the argument the promises are about arrives in that dtype and every one of its values lies within the range,
clipped to what the dtype holds; a slice whose every score is far below zero is then a case of its own, not one row of
an ordinary case. The check fails on a range some dtype holds that no case covers there, and names each.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from grader.course.cases import Case
from grader.course.checker import DTYPES, tensors
from grader.course.operators import entry_name, observed
from grader.course.promises import Promise, Promises
from grader.course.rules import RULES
from grader.course.rules.rule import Call, Rule
from grader.errors import ConfigError
from grader.grading import diagnosis
from grader.grading.case import MEMORY_AUDIT, Judge
from grader.instructor.verdicts import Graded
from grader.results.validation import Check


# ---------------------------------------------------------------- every rule live

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


# ---------------------------------------------------------------- every promised range covered

@dataclass(frozen=True)
class Seen:
    """The values of the promised argument in one case: their dtype and the lowest and highest of them."""

    case: str
    dtype: str
    low: float
    high: float


def coverage_check(judge: Judge, cases: list[Case]) -> Check | None:
    """'every promised range is covered by a case', failed with the ranges none covers; None without promises."""
    promises = judge.exercise.promises
    if promises is None:
        return None
    promises.check_names(judge.checker.functions)
    seen = seen_values(judge, promises, cases)
    missing, asked = [], 0
    for promise in promises.ranges:
        for dtype, (low, high) in wanted(promise, promises).items():
            asked += 1
            if not any(item.dtype == dtype and low <= item.low and item.high <= high for item in seen):
                missing.append(f"{promise.about} in {dtype} ([{low:g}, {high:g}])")
    if missing:
        return Check("every promised range is covered by a case", False, "no case covers: " + "; ".join(missing))
    return Check("every promised range is covered by a case", True,
                 f"{len(promises.ranges)} ranges, {asked} with their dtypes, each by a case of "
                 f"{promises.function}.{promises.argument}")


def wanted(promise: Promise, promises: Promises) -> dict[str, tuple[float, float]]:
    """dtype -> the range clipped to what the dtype holds, for each dtype the promise is asked of: those it names
    (ConfigError if one of them holds no value of the range), else every dtype that holds some of it."""
    found = {}
    for name in promise.dtypes or tuple(DTYPES):
        largest = float(torch.finfo(DTYPES[name]).max)
        low, high = max(promise.low, -largest), min(promise.high, largest)
        if low <= high:
            found[name] = (low, high)
        elif promise.dtypes:
            raise ConfigError(f"promises: ranges: {promise.about}: {name} holds no value of "
                              f"[{promise.low:g}, {promise.high:g}] (its largest is {largest:g})", promises.path,
                              promise.line)
    return found


def seen_values(judge: Judge, promises: Promises, cases: list[Case]) -> list[Seen]:
    """The promised argument's dtype and range of values in each case of the promised function, as the checker
    builds its inputs (prepared once per process, as grading prepares them)."""
    position = judge.checker.functions[promises.function].arguments.index(promises.argument)
    found = []
    for case in cases:
        if case.function != promises.function:
            continue
        inputs = judge.prepare(case)[0]
        given = list(tensors(inputs.args[position])) if position < len(inputs.args) else []
        values = [tensor.detach().to(torch.float64).flatten() for tensor in given if tensor.is_floating_point()]
        if not values or len({tensor.dtype for tensor in given}) != 1:
            continue
        every = torch.cat(values)
        every = every[torch.isfinite(every)]
        dtype = next((name for name, kind in DTYPES.items() if kind == given[0].dtype), None)
        if every.numel() and dtype is not None:
            found.append(Seen(case.name, dtype, float(every.min()), float(every.max())))
    return found
