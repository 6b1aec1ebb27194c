"""Naming the catalogued mistake behind a failing distributed case: what each rank returned and what the ranks moved.

A mistake of a function the suite's ranks call (its `function`, or one of its `uses`) is run in the suite
as a submission would be, on the same case, by a group of ranks of its own; its outputs, what it raised and
the bytes the kernel counted are kept (for the process, and on disk where answers are: answer_cache.py).
A failing case is then named after the mistake that failed it the same way: the same rule broken (the
communication rule: the bytes closest to the learner's first), the same exception, or every rank's output
within the case's bound of the mistake's own, as grader/grading/diagnosis.py names an ordinary case. Where
the bytes moved are the clue (far from what the case's communication needs), a detail line says them.
"""

from __future__ import annotations

import ast
import hashlib
import json
import math
import shutil
import threading
from pathlib import Path
from typing import Any, Callable, NamedTuple

from grader.course import mistakes, trust
from grader.grading import agreement, answer_cache, compare
from grader.grading.diagnosis import AGREEMENT, Mistake, catalogue
from grader.results import CaseResult

CLUE_BELOW, CLUE_ABOVE = 0.5, 1.5  # bytes moved, in units of what the case needs, outside which they are shown


class Evidence(NamedTuple):
    """What one file did on one distributed case: each rank's output, what it raised, the bytes, how it failed."""

    outputs: tuple  # per rank: the tensor it returned, or None
    raised: str     # 'Type: message' of the first rank whose own code raised; '' when none did
    traffic: int    # bytes the kernel counted between the ranks; -1 where nothing counts them
    violates: str   # the rule its verdict says it broke ('' for none)
    fails: bool


_KNOWN: dict[str, Evidence] = {}
_LOCK = threading.Lock()


def evidence(group: Any) -> Evidence:
    """The evidence of a group of ranks that ran (grader/grading/distributed.py's Group)."""
    outputs, raised = [], ""
    for rank in group.ranks:
        reply = rank.reply if rank.state == "replied" else {}
        value = reply.get("value") if reply.get("kind") == "returned" else None
        if isinstance(value, dict) and value.get("type") == "tensor":
            outputs.append(value["value"].tensor)
            continue
        outputs.append(None)
        if not raised and reply.get("kind") == "raised" and reply.get("phase") == "learner":
            raised = f"{reply.get('exception')}: {reply.get('message')}"
    result = group.result
    traffic = group.traffic if group.traffic is not None else -1
    return Evidence(tuple(outputs), raised, traffic, str(result.extra.get("violates", "")),
                    result.outcome.counts_as_failure)


def diagnose(run: Any, suite_run: Any, case: Any, group: Any, runner: Callable[..., Any],
             stop: threading.Event | None = None) -> None:
    """Name the failing case's mistake in `group.result` (its diagnosis, and the bytes where they are the clue);
    `runner` runs a group of ranks as `group` was run (grader/grading/distributed.py's run_group)."""
    exercise, result = run.exercise, group.result
    needs = _needs(suite_run.suite, group.inputs)
    if exercise.precomputed is not None or not exercise.mistakes.is_dir():
        _clue(result, group, *needs)
        return
    mine = evidence(group)
    behaviours = {}
    for mistake in candidates(exercise, suite_run.suite):
        found = behaviour(run, suite_run, case, mistake, runner, stop)
        if found is None:  # the run was stopped meanwhile: nothing is named
            return
        behaviours[mistake.stem] = found
    found = agreeing(mine, behaviours, group.inputs)
    if found:
        chosen = next(m for m in catalogue(exercise).mistakes if m.stem == found[0])
        result.diagnosis = chosen.diagnosis()
        result.extra["matches"] = found
    _clue(result, group, *needs)


def candidates(exercise: Any, suite: Any) -> list[Mistake]:
    """The catalogued mistakes that define a function the suite's ranks call: only those can change what they do."""
    called = {suite.function, *suite.uses}
    return [mistake for mistake in catalogue(exercise).mistakes
            if _defined(exercise.mistakes / f"{mistake.stem}.py") & called]


def behaviour(run: Any, suite_run: Any, case: Any, mistake: Mistake, runner: Callable[..., Any],
              stop: threading.Event | None = None) -> Evidence | None:
    """What `mistake` does on `case` in the suite, run by `runner` (run_group) once per process (and kept on disk
    where that is safe); None when `stop` was set while it ran."""
    from grader.grading.request import Run

    exercise = run.exercise
    source = mistakes.compose(exercise.mistakes / f"{mistake.stem}.py", exercise.solution)
    described = json.dumps({"name": case.name, "params": case.params, "world": suite_run.world}, sort_keys=True,
                           default=str)
    key = f"distributed\0{trust.code_key(exercise)}\0{described}\0{hashlib.sha256(source.encode()).hexdigest()}"
    with _LOCK:
        if key in _KNOWN:
            return _KNOWN[key]
    cached = answer_cache.usable()
    stored = answer_cache.load(exercise.root, key) if cached else None
    if stored is not None and len(stored[1]) == 4:
        found = Evidence(tuple(stored[0]), *stored[1])
    else:
        folder = mistakes.temporary_folder()
        try:
            path = mistakes.as_submission(exercise.mistakes / f"{mistake.stem}.py", exercise.solution, folder)
            group = runner(Run(exercise, path, "submit", "cpu", diagnose=False), suite_run, case, False, stop)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        if stop is not None and stop.is_set():
            return None
        found = evidence(group)
        if cached:
            answer_cache.store(exercise.root, key, found.outputs, tuple(found[1:]))
    with _LOCK:
        _KNOWN[key] = found
    return found


def agreeing(mine: Evidence, behaviours: dict[str, Evidence], inputs: Any) -> list[str]:
    """The mistakes (by stem) that fail the case as `mine` does, the closest first: the same rule broken, the same
    exception, or every rank's output within the case's bound of theirs; ties go to the bytes nearest `mine`'s."""
    matches = []
    for stem, theirs in behaviours.items():
        if not theirs.fails:
            continue
        if mine.violates or theirs.violates:
            distance = 0.0 if mine.violates == theirs.violates else math.inf
        elif mine.raised or theirs.raised:
            distance = 0.0 if mine.raised == theirs.raised else math.inf
        else:
            distance = _outputs_apart(mine.outputs, theirs.outputs, inputs)
        if distance <= AGREEMENT:
            matches.append((distance, _bytes_apart(mine.traffic, theirs.traffic), stem))
    return [stem for *_, stem in sorted(matches)]


def _outputs_apart(mine: tuple, theirs: tuple, inputs: Any) -> float:
    """The largest distance over the ranks, each in units of its own bound (inf where a rank returned nothing)."""
    if len(mine) != len(theirs) or any(tensor is None for tensor in (*mine, *theirs)):
        return math.inf
    worst = 0.0
    for rank, (a, b) in enumerate(zip(mine, theirs)):
        base = (inputs.baseline[rank],) if inputs.baseline is not None else None
        bounds = agreement.Bounds((inputs.expected[rank],), base, inputs.dtype, compare.DEFAULT)
        worst = max(worst, agreement.distance(agreement.prepared([a]), agreement.prepared([b]), bounds))
    return worst


def _bytes_apart(mine: int, theirs: int) -> float:
    if mine < 0 or theirs < 0:
        return 0.0
    return abs(math.log((mine + 1) / (theirs + 1)))


def _needs(suite: Any, inputs: Any) -> tuple[int, str]:
    """What the case's communication needs, in bytes and in words: the suite's unit (06: one all-reduce of the
    output), else the least the case asks for."""
    unit, name = suite.traffic_unit(inputs)
    if unit:
        return unit, f"{name} moves {unit:,} B"
    return inputs.min_traffic, f"this case needs at least {inputs.min_traffic:,} B"


def _clue(result: CaseResult, group: Any, unit: int, needs: str) -> None:
    """The bytes the ranks moved, said where they are far from what the case needs: then they are the clue."""
    traffic, world = group.traffic, group.inputs.world
    if traffic is None or unit <= 0 or CLUE_BELOW * unit <= traffic <= CLUE_ABOVE * unit:
        return
    if traffic == 0:
        result.details.append(f"0 B sent: no rank sent another a byte once all {world} had joined the group "
                              f"(counted by the kernel), where {needs} between them ({unit // world:,} B per rank)")
    else:
        result.details.append(f"the {world} ranks moved {traffic:,} B between them once all had joined the group "
                              f"(counted by the kernel), {traffic // world:,} B per rank: {traffic / unit:.1f} times "
                              f"what is needed, where {needs} ({unit // world:,} B per rank)")


def _defined(path: Path) -> set[str]:
    """The top-level functions a catalogue file defines (none where it does not parse: it is left out anyway)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return set()
    return {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
