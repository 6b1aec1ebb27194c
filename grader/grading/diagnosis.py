"""Naming a known mistake: a failing case's outputs are compared with each catalogued mistake's outputs."""

from __future__ import annotations

import math
import threading
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

import torch

from grader.channel.wire import WireTensor
from grader.course import mistakes
from grader.course.blame import where
from grader.course.operators import observed
from grader.grading import agreement, compare, naming
from grader.grading.worker_client import RawResult
from grader.results import CaseResult, Diagnosis

# A submission matches a mistake when every output is within this many case bounds of the mistake's output.
AGREEMENT = 1.0
NON_FINITE = Diagnosis(
    naming.SYMPTOM, "Every value of an output is NaN or Inf",
    "Nothing finite came back, so the arithmetic overflowed or divided zero by zero somewhere: exp of a large "
    "number is inf, inf - inf and 0 / 0 are NaN, and one NaN spreads to everything it touches.",
    "Print the intermediate tensors of a small case and find the first one that holds inf or NaN; subtract a "
    "maximum before exponentiating, and never divide by a sum that can be zero.")


class Trial(NamedTuple):
    """One case as every catalogued mistake is run on it: what is called, on what, and what its outputs must match."""

    function: str
    inputs: Any
    names: tuple[str, ...]
    expected: tuple
    baseline: tuple | None
    tolerance: Any


@dataclass
class Mistake:
    """One catalogued wrong implementation: instructor code, so it runs in the grader's own process."""

    stem: str
    module: ModuleType

    @property
    def violates(self) -> str:
        return getattr(self.module, "VIOLATES", mistakes.CONSTANTS.default("VIOLATES"))

    def diagnosis(self) -> Diagnosis:
        # A string left out is validate's finding ("mistakes have TITLE, RATIONALE and HELP"), never a grade's failure.
        text = {name: str(getattr(self.module, name, "") or "") for name in mistakes.STRINGS}
        return Diagnosis(self.stem, text["TITLE"] or self.stem, text["RATIONALE"], text["HELP"])


@dataclass
class Behaviour:
    """What one mistake does on one case: its outputs (or the exception it raised) and whether that fails."""

    outputs: list[torch.Tensor] | None
    raised: str
    fails: bool
    forbidden_seen: tuple[str, ...] = ()  # the forbidden operators its call ran
    modified: tuple[int, ...] = ()        # the inputs it changed in place, by index
    _ready: Any = field(default=None, repr=False, compare=False)

    def evidence(self, rule: str) -> tuple:
        """What it did that breaks `rule`, as a broken rule's verdict records it (`evidence` in a result's extra)."""
        return {"forbidden": self.forbidden_seen, "inputs-modified": self.modified}.get(rule, ())

    def ready(self) -> list | None:
        """The outputs made ready to compare (grader/grading/agreement.py), once."""
        if self._ready is None and self.outputs is not None:
            self._ready = agreement.prepared(self.outputs)
        return self._ready


class Catalogue:
    """The mistakes of one exercise, with their behaviour on each case computed once per process.

    A mistake file that cannot be loaded (a syntax error, an import that fails, code that raises) is left out,
    and kept in `broken` as 'FILE:LINE: ExceptionType: message': the course's fault, never a learner's."""

    def __init__(self, folder: Path, reference: Path, root: Path | None = None) -> None:
        self.mistakes: list[Mistake] = []
        self.broken: dict[str, str] = {}
        for path in sorted(folder.glob("*.py")):
            if path.name.startswith("_"):
                continue
            try:
                self.mistakes.append(Mistake(path.stem, mistakes.load(path, reference)))
            except (Exception, SystemExit) as error:  # noqa: BLE001  (instructor code: named, then left out)
                self.broken[path.name] = where(error, root or folder.parent, path)
        self.forbidden: frozenset[str] = frozenset()  # the exercise's forbidden operators, watched in every run
        self._behaviour: dict[tuple[str, str], dict[str, Behaviour]] = {}
        self._lock = threading.Lock()  # validate works behaviours out on a thread too (catalogue_matrix.WarmUp)

    def behaviour(self, judge: Any, case: Any, stems: list[str] | None = None) -> dict[str, Behaviour]:
        """The behaviour on `case` of the mistakes named by `stems` (every one by default), keyed by file stem;
        each computed once per process."""
        with self._lock:
            return self._behaviour_of(judge, case, stems)

    def _behaviour_of(self, judge: Any, case: Any, stems: list[str] | None) -> dict[str, Behaviour]:
        key = (case.name, repr(sorted(case.params.items())))
        known = self._behaviour.setdefault(key, {})
        wanted = [mistake for mistake in self.mistakes
                  if mistake.stem not in known and (stems is None or mistake.stem in stems)]
        if wanted:
            inputs, expected, baseline = judge.prepare(case)
            names = judge.checker.functions[case.function].outputs
            trial = Trial(case.function, inputs, names, expected, baseline, judge.tolerance(case))
            for mistake in wanted:
                known[mistake.stem] = _run(mistake, trial, self.forbidden)
        chosen = [mistake.stem for mistake in self.mistakes if stems is None or mistake.stem in stems]
        return {stem: known[stem] for stem in chosen}

    def staff_notes(self) -> list[str]:
        """A line for the course staff per mistake file left out: in a grade's notes (and its JSON)."""
        return [f"Note for the course staff: a catalogued mistake could not be loaded and is left out of the "
                f"diagnosis ({found}); grader validate names it." for found in self.broken.values()]


_CATALOGUES: dict[tuple, Catalogue] = {}  # `grader validate` grades many files in one process


def catalogue(exercise: Any) -> Catalogue:
    """The exercise's catalogue of mistakes, each composed with its reference solution, loaded once."""
    # Keyed by the files as they are now: a long-lived process (validate's tests, watch) sees a changed catalogue.
    files = sorted(exercise.mistakes.glob("*.py")) if exercise.mistakes.is_dir() else []
    key = (exercise.mistakes, exercise.solution,
           tuple((path.name, path.stat().st_mtime_ns, path.stat().st_size) for path in [exercise.solution, *files]
                 if path.exists()))
    if key not in _CATALOGUES:
        _CATALOGUES[key] = Catalogue(exercise.mistakes, exercise.solution, exercise.root)
        _CATALOGUES[key].forbidden = observed(exercise.rules.forbidden)
    return _CATALOGUES[key]


def judged_catalogue(judge: Any) -> Catalogue:
    """The catalogue as it was when `judge` first asked: looked up once per judge, not once per case (each
    lookup reads the date and size of every mistake's file)."""
    known = getattr(judge, "catalogue", None)
    if known is None:
        known = judge.catalogue = catalogue(judge.exercise)
    return known


def diagnose(judge: Any, case: Any, raw: RawResult, result: CaseResult) -> Diagnosis | None:
    """The catalogued mistake that best explains this failing case, or None when none agrees closely.

    A broken rule is matched on the rule (and on what broke it: the operators called, the inputs changed).
    An output with nothing finite is NON_FINITE here; reconcile() names a mistake instead if one reproduces
    the same pattern and agrees with the report's other failing cases."""
    known = judged_catalogue(judge)
    violated = result.extra.get("violates")
    if violated:
        outputs = _tensors(raw.reply.value) if raw.kind == "returned" else None
        found = by_rule(judge, case, violated, tuple(result.extra.get("evidence", ())), outputs)
        return next((m.diagnosis() for m in known.mistakes if found and m.stem == found[0]), None)
    symptom = False
    if raw.kind == "returned":
        got, raised = _tensors(raw.reply.value), ""
        # Many mistakes overflow somewhere; an all-NaN answer says only that this one did too, unless the same
        # mistake explains the rest of the report (reconcile).
        symptom = non_finite(got)
    elif raw.kind == "raised":
        # Type and message: torch's messages name the shapes involved, which tells raising mistakes apart.
        got, raised = None, f"{raw.reply.exception}: {raw.reply.message}"
    else:
        return None
    # The mistakes named on earlier cases are tried first: a submission usually makes the same one throughout,
    # and running every mistake on every failing case is most of the time a wrong submission takes.
    found = agreeing(judge, case, got, raised, first=judge.named)
    for stem in found:
        if stem not in judge.named:
            judge.named.append(stem)
    if symptom:
        result.extra.update(matches=found, symptom=True)
        return NON_FINITE
    if not found:
        return None
    # Every agreeing mistake is kept: reconcile() may prefer one that explains more of the report.
    result.extra["matches"] = found
    return next(m for m in known.mistakes if m.stem == found[0]).diagnosis()


def by_rule(judge: Any, case: Any, rule: str, evidence: tuple, outputs: list | None) -> list[str]:
    """The catalogued mistakes that break `rule` as the submission did: their VIOLATES is the rule and, where the
    grader can run them here, they did the same thing (called the same forbidden operators, changed the same
    inputs); those whose outputs also agree first."""
    stems = [m.stem for m in judged_catalogue(judge).mistakes if m.violates == rule]
    if not stems or rule not in ("forbidden", "inputs-modified") or "memory" in case.audit:
        return stems
    behaviours = judged_catalogue(judge).behaviour(judge, case, stems)
    same = [stem for stem in stems if behaviours[stem].evidence(rule) == evidence]
    if outputs is None or len(same) < 2:
        return same
    inputs, expected, baseline = judge.prepare(case)
    bounds = agreement.Bounds(expected, baseline, inputs.output_dtype(), judge.tolerance(case))
    mine = agreement.prepared(outputs) or []
    close = [stem for stem in same if agreement.distance(mine, behaviours[stem].ready(), bounds) <= AGREEMENT]
    return close + [stem for stem in same if stem not in close]


def non_finite(outputs: list) -> bool:
    """Whether some output has no finite value at all."""
    return any(tensor is not None and tensor.numel() and not torch.isfinite(tensor.to(torch.float64)).any()
               for tensor in outputs)


def agreeing(judge: Any, case: Any, got: list | None, raised: str, leave_out: str = "",
             first: list[str] | None = None) -> list[str]:
    """The catalogued mistakes (but `leave_out`) that fail this case as the submission did, closest first.

    With `first`, those mistakes alone are run when one of them agrees; the whole catalogue only when none does.
    """
    if "memory" in case.audit:
        return []  # cases sized to fill memory: not run for every mistake in this process; named by rule instead
    if first:
        found = _agreeing_among(judge, case, got, raised, leave_out, list(first))
        if found:
            return found
    return _agreeing_among(judge, case, got, raised, leave_out, None)


def _agreeing_among(judge: Any, case: Any, got: list | None, raised: str, leave_out: str,
                    stems: list[str] | None) -> list[str]:
    inputs, expected, baseline = judge.prepare(case)
    dtype = inputs.output_dtype()
    tolerance = judge.tolerance(case)
    behaviours = judged_catalogue(judge).behaviour(judge, case, stems)
    mine = agreement.prepared(got) or []
    bounds = agreement.Bounds(expected, baseline, dtype, tolerance)
    matches = []
    for stem, behaviour in behaviours.items():
        if not behaviour.fails or stem == leave_out:
            continue
        if raised or behaviour.raised:
            distance = 0.0 if raised and raised == behaviour.raised else math.inf
        else:
            distance = agreement.distance(mine, behaviour.ready(), bounds)
        if distance <= AGREEMENT:
            matches.append((distance, stem))
    return [stem for _, stem in sorted(matches)]


def reconcile(results: list[CaseResult], exercise: Any) -> None:
    """Name each failing case as grader/grading/naming.py chooses, from what agreed with every case of the report."""
    found = {index: naming.Agreeing(result.extra["matches"], bool(result.extra.get("symptom")))
             for index, result in enumerate(results) if "matches" in result.extra}
    by_stem = {mistake.stem: mistake for mistake in catalogue(exercise).mistakes}
    for index, stem in naming.choose(found).items():
        if stem == naming.SYMPTOM:
            results[index].diagnosis = NON_FINITE
        elif stem in by_stem:
            results[index].diagnosis = by_stem[stem].diagnosis()


def _run(mistake: Mistake, trial: Trial, forbidden: frozenset[str] = frozenset()) -> Behaviour:
    from grader.course.checker import _clone, laid_out, tensors
    from grader.sandboxed.observe import observe

    function, inputs, names, expected, baseline, tolerance = trial

    # Laid out as the learner's code receives them: a mistake that trips on a transposed input trips here too.
    copies = [_clone(arg) for arg in laid_out(inputs.args, inputs.layout)]
    versions = [tensor._version for tensor in tensors(copies)]
    try:
        with warnings.catch_warnings(), observe({"forbidden": sorted(forbidden)}) as seen:
            warnings.simplefilter("ignore")
            value = getattr(mistake.module, function)(*copies)
    except Exception as error:  # noqa: BLE001  (a mistake that raises is matched by exception type)
        return Behaviour(None, f"{type(error).__name__}: {error}", True)
    modified = tuple(index for index, (before, after, version) in enumerate(zip(tensors(inputs.args), tensors(copies),
                                                                                 versions))
                     if after._version != version or not _same(before, after))
    described = _describe(value)
    verdict = compare.compare_outputs(described, names, expected, compare.OutputType(inputs.output_dtype(), "cpu"),
                                      baseline, tolerance)
    return Behaviour(_tensors(described), "", not verdict.passed, tuple(seen.get("forbidden_seen", [])), modified)


def _same(before: torch.Tensor, after: torch.Tensor) -> bool:
    """Whether an input still holds what it held (NaN where it had NaN)."""
    if before.shape != after.shape or before.dtype != after.dtype:
        return False
    return torch.equal(before, after) or (torch.equal(before.isnan(), after.isnan())
                                          and torch.equal(before.nan_to_num(0.0), after.nan_to_num(0.0)))


def _describe(value: Any) -> dict[str, Any]:
    """The same plain form the worker sends, so one comparison judges both."""
    if isinstance(value, torch.Tensor):
        return {"type": "tensor", "value": WireTensor(value.detach(), str(value.device))}
    if isinstance(value, (tuple, list)):
        return {"type": "sequence", "kind": type(value).__name__, "items": [_describe(item) for item in value]}
    return {"type": "other", "name": type(value).__name__}


def _tensors(returned: dict[str, Any] | None) -> list[torch.Tensor | None]:
    if returned is None:
        return []
    items = returned["items"] if returned.get("type") == "sequence" else [returned]
    return [item["value"].tensor if item.get("type") == "tensor" else None for item in items]
