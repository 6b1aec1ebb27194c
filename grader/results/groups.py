"""Failures grouped by cause across a whole run: each cause once, its cases counted, one of them to show.

Every view of a verdict (the terminal, a learner's feedback file, the results file Gradescope shows) reads the
same groups: a hundred cases that fail the same way are one cause with a count, never a hundred entries. A cause
is the function (or the distributed suite) that failed, the outcome, and what failed in the grader's own words
(CaseResult.cause, which a hidden case shares with a visible one: never a figure the learner's code chose).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Generic, Iterable, TypeVar

from grader.results import CaseResult, Outcome

Item = TypeVar("Item")
NAMES_SHOWN = 8  # case names listed under one cause before "and N more"


@dataclass(frozen=True)
class Cause:
    """What a group's cases have in common: who failed (a function, or a distributed suite), how, and what."""

    who: str
    outcome: str  # an Outcome's value
    what: str     # what failed, in the grader's words


@dataclass
class Group(Generic[Item]):
    """The cases of one cause, in run order, and which of them is shown: the first visible one, else the first."""

    cause: Cause
    cases: list[Item] = field(default_factory=list)
    hidden: int = 0
    example: Item | None = None

    @property
    def count(self) -> int:
        return len(self.cases)


def grouped(items: Iterable[Item], cause: Callable[[Item], Cause], hidden: Callable[[Item], bool]) -> list[Group[Item]]:
    """`items` grouped by `cause`, wherever in the run each came, the groups in the order their first case came."""
    groups: dict[Cause, Group[Item]] = {}
    for item in items:
        key = cause(item)
        group = groups.setdefault(key, Group(key))
        group.cases.append(item)
        group.hidden += hidden(item)
        if group.example is None or (hidden(group.example) and not hidden(item)):
            group.example = item
    return list(groups.values())


def failing(results: Iterable[CaseResult]) -> list[CaseResult]:
    """The cases that ran and failed: neither a file that could not be imported nor a stub counts here."""
    return [r for r in results
            if r.outcome.counts_as_failure and r.outcome is not Outcome.NOT_ATTEMPTED and not r.load_failed]


def failure_groups(results: Iterable[CaseResult]) -> list[Group[CaseResult]]:
    """The failing cases of a report, grouped by cause."""
    return grouped(failing(results), case_cause, lambda result: result.hidden)


def case_cause(result: CaseResult) -> Cause:
    return Cause(who(result.function, result.suite, result.extra), result.outcome.value,
                 result.cause or headline(result.message) or result.outcome.value)


def who(function: str, suite: str, extra: dict | None = None) -> str:
    """How a case's caller is named: its function, or for a distributed case its suite and ranks ('ring suite, 2 ranks'):
    the suite's own function is the course's, never one the learner wrote."""
    ranks = (extra or {}).get("ranks")
    return f"{suite} suite, {ranks} ranks" if isinstance(ranks, int) and not isinstance(ranks, bool) else function


def headline(message: str) -> str:
    """A message's first clause, before its figures: 'output is wrong' of 'output is wrong: largest error 0.5 ...'."""
    return re.split(r": | \(", message.strip(), maxsplit=1)[0].strip()


def under_label(outcome: str, message: str) -> str:
    """The message as it reads under a line that already names the outcome (a terminal's CRASH): said once."""
    return message[len(outcome) + 2:] if message.startswith(f"{outcome}: ") else message


def blame(outcome: str, what: str, violates: str = "") -> str:
    """What a required case did that cost the score, after 'and it': the rule it broke, the values, or the outcome."""
    if violates:
        return f"broke the {violates} rule ({what})" if what and violates not in what else f"broke the {violates} rule"
    if what.startswith("broke "):
        return what
    if what in ("", outcome):
        return {Outcome.TIMED_OUT.value: "timed out", Outcome.OUT_OF_MEMORY.value: "ran out of memory"}.get(outcome,
                                                                                                        outcome)
    if outcome == Outcome.FAILED.value:
        return f"failed on its values ({what})" if " wrong" in what or "NaN" in what else f"failed: {what}"
    if outcome == Outcome.CRASHED.value:
        return what if what.startswith("crashed") else f"crashed ({what})"
    if outcome == Outcome.TIMED_OUT.value and what.startswith("not run"):
        return f"was {what}"
    return {Outcome.TIMED_OUT.value: "timed out", Outcome.OUT_OF_MEMORY.value: "ran out of memory",
            Outcome.NOT_JUDGED.value: "could not be judged on this machine"}.get(outcome, what or outcome)


def result_blame(result: CaseResult) -> str:
    """blame() of one case's result."""
    violates = result.extra.get("violates") if isinstance(result.extra.get("violates"), str) else ""
    return blame(result.outcome.value, case_cause(result).what, violates)


def follows(results: Iterable[CaseResult]) -> list[tuple[str, list[str]]]:
    """Each failing caller and the failing functions its failing cases were seen reaching, in run order: the hedge
    'fix X first' is said only where the learner's code showed the call, never where it is merely presumed. A
    distributed suite is named as 'the ring suite' (its program is the course's, and calls what it declares)."""
    failed = failing(results)
    functions = {r.function for r in failed}
    reached: dict[str, list[str]] = {}
    for result in failed:
        caller = f"the {result.suite} suite" if who(result.function, result.suite, result.extra) != result.function \
            else result.function
        names = reached.setdefault(caller, [])
        names += [name for name in result.reached if name in functions and name != result.function
                  and name not in names]
    return [(caller, names) for caller, names in reached.items() if names]


def named(names: list[str], limit: int = NAMES_SHOWN) -> str:
    """'a, b, c and 4 more'."""
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def cases(count: int, kind: str = "") -> str:
    """'1 case', '3 hidden cases'."""
    return f"{count} {kind}{' ' if kind else ''}case{'s' * (count != 1)}"


def counted(group: Group) -> str:
    """'22 cases: 2 visible, 20 hidden', '3 hidden cases', '1 case'."""
    visible = group.count - group.hidden
    if not group.hidden or not visible:
        return cases(group.count, "hidden" if group.hidden else "")
    return f"{cases(group.count)}: {visible} visible, {group.hidden} hidden"
