"""Which of the learner's functions a case depends on: the calls the worker saw, and a call stopped at a stopped one.

The worker notes the calls between the learner's own functions while a case runs (grader/sandboxed/observe.py,
Calls) and stops a call of a function the budget stopped for this run (grader/grading/budget.py). Both come from
beside the learner's code: what was seen only lets a report say that one failure may follow from another, and a
stopped call is believed only for a function the grader did stop. Neither ever passes a case.
"""

from __future__ import annotations

from typing import Any, Mapping

from grader.results import CaseResult, Outcome


def reached(functions: Mapping[str, Any], function: str, calls: list[str]) -> list[str]:
    """The exercise's `functions` a call of `function` was seen reaching, directly or through others, from the
    worker's 'caller>callee' observations (a name the exercise does not have is passed over), in the order found."""
    edges: dict[str, set[str]] = {}
    for call in calls:
        caller, _, callee = call.partition(">")
        if caller in functions and callee in functions:
            edges.setdefault(caller, set()).add(callee)
    found: list[str] = []
    todo = [function]
    while todo:
        for callee in sorted(edges.get(todo.pop(), ())):
            if callee != function and callee not in found:
                found.append(callee)
                todo.append(callee)
    return found


def depends(stopped: Mapping[str, tuple[Outcome, str, bool]], function: str, result: CaseResult) -> None:
    """`result`, a case whose call reached `function`, stopped for this run (`stopped`: how each stopped function
    failed, on which case first, whether that case is hidden): reported as depending on it, not run to the end."""
    outcome, first, hidden = stopped[function]
    what = "timed out" if outcome is Outcome.TIMED_OUT else "ran out of memory"
    result.outcome, result.not_run = outcome, "depends"
    result.reached = list(dict.fromkeys([*result.reached, function]))
    result.cause = f"not run: it calls {function}, which {what} before"
    on = "on a hidden case" if hidden else f"on {first}"
    result.message = (f"not run to the end: it calls {function}, which {what} {on} earlier in this run and is not "
                      f"called again; fix that first")
