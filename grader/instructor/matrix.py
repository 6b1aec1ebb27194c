"""What the catalogue tells an instructor: which cases catch which mistakes, what the diagnosis names, and gaps.

For every mistake and every case that catches it, the diagnosis is worked out here, in the
grader (mistakes are trusted code, run in this process): what a learner who made that mistake
is told, and what they would have been told had the mistake not been catalogued (leave-one-out).
From that: cases that catch nothing, mistakes that only one case catches, and pairs of mistakes
the diagnosis cannot tell apart.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.course.cases import Case
from grader.grading import diagnosis, naming
from grader.grading.case import MEMORY_AUDIT, Judge
from grader.instructor.verdicts import Graded, VerdictCache
from grader.results import Outcome


@dataclass
class MistakeRow:
    """One mistake against the cases: which catch it, and what the diagnosis names on each."""

    stem: str
    caught_by: list[str] = field(default_factory=list)
    named: dict[str, str | None] = field(default_factory=dict)           # case -> the mistake named
    without_itself: dict[str, str | None] = field(default_factory=dict)  # case -> named, were it not catalogued
    matches: dict[str, list[str]] = field(default_factory=dict)          # case -> every mistake that agreed
    raised: list[str] = field(default_factory=list)  # the catching cases where the mistake raised, not answered
    distributed: list[str] = field(default_factory=list)  # the catching cases of a distributed suite

    @property
    def only_by_raising(self) -> bool:
        """Caught, but never by a wrong answer: the cases say nothing of the mistake's values."""
        return bool(self.caught_by) and len(self.raised) == len(self.caught_by)

    @property
    def named_itself(self) -> int:
        return sum(1 for stem in self.named.values() if stem == self.stem)


@dataclass
class Matrix:
    """The whole picture, for the terminal and for `validate --json`."""

    cases: list[str]
    rows: list[MistakeRow]
    variants: dict[str, bool]

    def catching_nothing(self) -> list[str]:
        caught = {case for row in self.rows for case in row.caught_by}
        return [case for case in self.cases if case not in caught]

    def sole_catchers(self) -> dict[str, list[str]]:
        sole: dict[str, list[str]] = {}
        for row in self.rows:
            if len(row.caught_by) == 1:
                sole.setdefault(row.caught_by[0], []).append(row.stem)
        return sole

    def indistinguishable(self) -> list[tuple[str, str]]:
        """Pairs where, on every case that catches either, each agrees with the other: the name is a coin toss."""
        by_stem = {row.stem: row for row in self.rows}
        pairs = []
        for index, first in enumerate(self.rows):
            for second in self.rows[index + 1:]:
                if first.caught_by and set(first.caught_by) == set(second.caught_by) and all(
                        second.stem in first.matches.get(case, []) and first.stem in by_stem[second.stem].matches.get(
                            case, []) for case in first.caught_by):
                    pairs.append((first.stem, second.stem))
        return pairs

    def to_json(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "mistakes": {row.stem: {"caught_by": row.caught_by, "caught_by_raising": row.raised, "named": row.named,
                                    "named_without_itself": row.without_itself} for row in self.rows},
            "cases_catching_nothing": self.catching_nothing(),
            "sole_catchers": self.sole_catchers(),
            "indistinguishable": [list(pair) for pair in self.indistinguishable()],
            "variants": self.variants,
        }


def build(judge: Judge, cases: list[Case], mistakes: list[Graded], variants: list[Graded],
          cache: VerdictCache | None = None, distributed: tuple[Any, list[Case]] | None = None) -> Matrix:
    """The matrix, with every diagnosis worked out as `judge` (the exercise's checker and reference) sees the cases,
    against the catalogue as it is now: afresh, or remembered in `cache` under the whole catalogue's content (a new
    case works out that case's cells alone). A distributed suite's cases (`distributed`: the suite and its cases)
    catch mistakes too, and are named as a grade names them (grader/grading/distributed_diagnosis.py)."""
    exercise = judge.exercise
    known = diagnosis.catalogue(exercise)
    by_name = {case.name: case for case in cases}
    suite, distributed_cases = distributed or (None, [])
    in_suite = {case.name: case for case in distributed_cases}
    whole = catalogue_digest(exercise.mistakes)
    rows = []
    for graded in mistakes:
        row = MistakeRow(graded.path.stem)
        failing = [result for result in graded.results if result.outcome.counts_as_failure]
        row.caught_by = [result.name for result in failing]
        row.raised = [result.name for result in failing if result.outcome is Outcome.ERROR]
        full, alone = {}, {}
        for result in failing:
            case = by_name.get(result.name) or in_suite.get(result.name)
            if case is None:
                continue
            key = cache.cell_key(whole, case, row.stem, str(result.extra.get("violates", ""))) if cache else ""
            remembered = cache.cell(key) if cache else None
            if case.name in in_suite:
                row.distributed.append(case.name)
            # Worked out once: leaving the mistake itself out only drops it from the list. A distributed case names
            # the first that agrees, as a broken rule does.
            found, by_rule, symptom = remembered or (
                (_in_suite(judge, suite, case, row.stem), True, False) if case.name in in_suite else
                _agreeing(judge, known, case, result, row.stem))
            if cache and remembered is None:
                cache.put_cell(key, found, by_rule, symptom)
            others = [stem for stem in found if stem != row.stem]
            row.matches[result.name] = found[:1] if by_rule else found
            if by_rule:  # a broken rule names the first mistake that broke it so, as diagnose() does
                row.named[result.name], row.without_itself[result.name] = found[0] if found else None, \
                    others[0] if others else None
            else:
                full[result.name], alone[result.name] = naming.Agreeing(found, symptom), naming.Agreeing(others, symptom)
        row.named.update(naming.choose(full))
        row.without_itself.update(naming.choose(alone))
        row.named = {name: row.named[name] for name in row.caught_by}
        row.without_itself = {name: row.without_itself[name] for name in row.caught_by}
        rows.append(row)
    if cache:
        cache.saw_catalogue(whole)
    return Matrix([case.name for case in [*cases, *distributed_cases]], rows,
                  {item.path.stem: item.passed for item in variants})


class WarmUp:
    """What every mistake does on every case, worked out on a thread while the catalogue is graded, where the
    matrix will need it: the catalogue changed since the last validate, so none of its cells is remembered.
    The grading waits on its workers most of the time; this uses that time and the other core."""

    def __init__(self, exercise: Any, checker: Any, reference: Any, cases: list[Case], cache: VerdictCache) -> None:
        self.whole = catalogue_digest(exercise.mistakes)
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None
        if cache.catalogue_seen() == self.whole or not exercise.mistakes.is_dir():
            return
        judge, known = Judge(exercise, checker, "", reference), diagnosis.catalogue(exercise)
        plain = [case for case in cases if MEMORY_AUDIT not in case.audit]

        def work() -> None:
            for case in plain:
                if self.stop.is_set():
                    return
                try:
                    known.behaviour(judge, case)
                except Exception:  # noqa: BLE001  (worked out again, and raised, where the matrix needs it)
                    pass

        self.thread = threading.Thread(target=work, name="grader-matrix-warm-up", daemon=True)
        self.thread.start()

    def finish(self, stop: bool = False) -> None:
        """Wait for the thread (after telling it to stop after its current case, with `stop`)."""
        if stop:
            self.stop.set()
        if self.thread is not None:
            self.thread.join()


def catalogue_digest(folder: Path) -> str:
    """Every file of the catalogue's folder, helpers included: what any mistake's behaviour may depend on."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*.py")) if folder.is_dir() else []:
        if "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _in_suite(judge: Judge, suite: Any, case: Case, stem: str) -> list[str]:
    """The mistakes that agree with `stem`'s own failure on a distributed suite's case, closest first, each run in
    the suite as a grade runs them."""
    from grader.grading import distributed_diagnosis
    from grader.grading.distributed import DistributedRun, run_group
    from grader.grading.request import Run

    exercise = judge.exercise
    run = Run(exercise, exercise.solution, "submit", "cpu", diagnose=False)  # the exercise's, to run the mistakes
    suite_run = DistributedRun(suite, suite.world_of(case), judge.reference)
    by_stem = {mistake.stem: mistake for mistake in diagnosis.catalogue(exercise).mistakes}
    mine = distributed_diagnosis.behaviour(run, suite_run, case, by_stem[stem], run_group)
    others = {mistake.stem: distributed_diagnosis.behaviour(run, suite_run, case, mistake, run_group)
              for mistake in distributed_diagnosis.candidates(exercise, suite)}
    return distributed_diagnosis.agreeing(mine, others, suite.build(case, judge.reference))


def _agreeing(judge: Judge, known: Any, case: Case, result: Any, stem: str) -> tuple[list[str], bool, bool]:
    """The mistakes that agree with `stem`'s own failure on `case`, as the diagnosis would rank them; whether they
    were found by the rule `stem` broke (the diagnosis then names the first); whether `stem`'s output there is a
    symptom, nothing finite (grader/grading/naming.py)."""
    violated = result.extra.get("violates")
    if violated:
        if MEMORY_AUDIT in case.audit:  # too large to run here: named by the rule alone
            return diagnosis.by_rule(judge, case, violated, (), None), True, False
        behaviour = known.behaviour(judge, case)[stem]
        return diagnosis.by_rule(judge, case, violated, behaviour.evidence(violated), behaviour.outputs), True, False
    if MEMORY_AUDIT in case.audit:
        return [], False, False  # cases too large to run every mistake on in this process; they are named by rule above
    behaviour = known.behaviour(judge, case)[stem]
    symptom = behaviour.outputs is not None and diagnosis.non_finite(behaviour.outputs)
    return diagnosis.agreeing(judge, case, behaviour.outputs, behaviour.raised), False, symptom
