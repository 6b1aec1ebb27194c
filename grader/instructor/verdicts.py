"""`grader validate`'s grading of the catalogue: every mistake and variant on every case, remembered by content.

Each case verdict of a catalogue file depends only on the file, the case, and what the grader
trusts for the exercise (its folder, its reference, the grader's own code). Verdicts are kept in
`.grader/validate/EXERCISE.json` under a hash of exactly those, so adding a case grades that case
alone, and adding a mistake grades that mistake alone; anything else that changes regrades what
it touches.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import multiprocessing
import shutil
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from grader.course import mistakes, trust
from grader.course.cases import Case
from grader.course.exercise import Exercise
from grader.course.rules import KINDS
from grader.errors import GraderError
from grader.files import write_atomic
from grader.grading.pipeline import grade, prepare_process
from grader.grading.request import Run
from grader.results import CaseResult, Outcome

FEW = 80  # verdicts to grade: up to this many, in this process
PARALLEL = 2  # grades at once: each is a worker process, and the machines we run on may have 2 cores
VIOLATIONS = {"", *KINDS}
CACHE_FOLDER = Path(".grader") / "validate"
CATALOGUE_KEY = "catalogue"  # not a hash: never a verdict's key


@dataclass
class Graded:
    """One catalogue file's verdicts on every case (fresh or remembered)."""

    path: Path
    results: list[CaseResult] = field(default_factory=list)

    @property
    def catchers(self) -> list[str]:
        return [r.name for r in self.results if r.outcome.counts_as_failure]

    @property
    def passed(self) -> bool:
        return bool(self.results) and not self.catchers


def catalogue_files(folder: Path) -> list[Path]:
    """The mistakes or variants in a folder (files starting with _ are helpers, not entries)."""
    return sorted(path for path in folder.glob("*.py") if not path.name.startswith("_")) if folder.is_dir() else []


class VerdictCache:
    """Case verdicts of catalogue files, keyed by what decides them."""

    def __init__(self, exercise: Exercise, enabled: bool = True) -> None:
        self.path = exercise.root / CACHE_FOLDER / f"{exercise.name}.json"
        self.base = trust.code_key(exercise)  # what decides a verdict but the graded file and the case
        self.entries: dict[str, dict] = self._load() if enabled else {}
        self.kept: dict[str, dict] = {}
        self.hits = self.misses = 0

    def _load(self) -> dict[str, dict]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}  # no cache, or one that cannot be read: everything is graded afresh

    def key(self, text: str, case: Case) -> str:
        # Where the case was written (file and line) decides nothing: a case moved within its file is remembered.
        described = json.dumps({**asdict(case), "source": ""}, sort_keys=True, default=str)
        return hashlib.sha256(f"{self.base}\n{described}\n{text}".encode()).hexdigest()

    def get(self, key: str) -> dict | None:
        found = self.entries.get(key)
        if isinstance(found, dict) and found.get("outcome") in {outcome.value for outcome in Outcome}:
            self.kept[key] = found
            self.hits += 1
            return found
        self.misses += 1
        return None

    def put(self, key: str, result: CaseResult) -> None:
        self.kept[key] = {"outcome": result.outcome.value, "message": result.message,
                          "violates": result.extra.get("violates", "")}

    def cell_key(self, catalogue: str, case: Case, stem: str, violates: str) -> str:
        """A cell of the catalogue's matrix: what agrees with mistake `stem` where `case` catches it. It depends
        on the whole catalogue (`catalogue`: a digest of its files), not on one file's text."""
        return self.key(f"matrix\n{catalogue}\n{stem}\n{violates}", case)

    def cell(self, key: str) -> tuple[list[str], bool, bool] | None:
        """A remembered cell: the mistakes agreeing, whether found by a broken rule, whether the output is a symptom."""
        found = self.entries.get(key)
        agreeing = found.get("agreeing") if isinstance(found, dict) else None
        if not (isinstance(agreeing, list) and all(isinstance(stem, str) for stem in agreeing)
                and isinstance(found.get("by_rule"), bool) and isinstance(found.get("symptom"), bool)):
            return None
        self.kept[key] = found
        return agreeing, found["by_rule"], found["symptom"]

    def put_cell(self, key: str, agreeing: list[str], by_rule: bool, symptom: bool) -> None:
        self.kept[key] = {"agreeing": agreeing, "by_rule": by_rule, "symptom": symptom}

    def catalogue_seen(self) -> str:
        """The digest of the catalogue the last validate worked its matrix out for ('' if none)."""
        found = self.entries.get(CATALOGUE_KEY)
        return found["digest"] if isinstance(found, dict) and isinstance(found.get("digest"), str) else ""

    def saw_catalogue(self, digest: str) -> None:
        self.kept[CATALOGUE_KEY] = {"digest": digest}

    def save(self) -> None:
        """Keep the verdicts this run used, and only those: a cache that never grows stale."""
        try:
            write_atomic(self.path, json.dumps(self.kept))
        except OSError:
            pass


def broken_files(exercise: Exercise) -> dict[Path, str]:
    """The mistakes and variants that cannot be loaded, each with where it broke ('FILE:LINE: Type: message')."""
    from grader.course.blame import where
    from grader.grading.diagnosis import catalogue

    found = {exercise.mistakes / name: text for name, text in catalogue(exercise).broken.items()}
    for path in catalogue_files(exercise.variants):
        spec = importlib.util.spec_from_file_location(f"variant_{path.stem}", path)
        try:
            spec.loader.exec_module(importlib.util.module_from_spec(spec))
        except (Exception, SystemExit) as error:  # noqa: BLE001  (instructor code: named, then left out)
            found[path] = where(error, exercise.root, path)
    return found


def grade_catalogue(exercise: Exercise, cases: list[Case], progress: Callable[[str], None],
                    cache: VerdictCache, distributed: tuple[Any, list[Case], Any] | None = None,
                    skip: set[Path] = frozenset()) -> tuple[list[Graded], list[Graded]]:
    """Every mistake and variant's verdict on every case (CPU): remembered ones reused, the rest graded; with
    `distributed` (a distributed suite, its cases, the reference), on each of the suite's cases too; the files in `skip`
    (those that do not load) are left out."""
    mistake_files = [path for path in catalogue_files(exercise.mistakes) if path not in skip]
    variant_files = [path for path in catalogue_files(exercise.variants) if path not in skip]
    folder = mistakes.temporary_folder()
    try:
        files = [(path, mistakes.as_submission(path, exercise.solution, folder)) for path in mistake_files]
        files += [(path, path) for path in variant_files]
        graded = grade_files(exercise, files, cases, progress, cache)
        if distributed is not None and distributed[1]:
            progress(f"running every mistake and variant in the {distributed[0].option} suite ...")
            for item, (_, runnable) in zip(graded, files):
                item.results += grade_distributed(exercise, *distributed, runnable, cache)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return graded[:len(mistake_files)], graded[len(mistake_files):]


def grade_distributed(exercise: Exercise, suite: Any, cases: list[Case], reference: Any, path: Path,
                cache: VerdictCache) -> list[CaseResult]:
    """One file's verdicts on a distributed suite's cases, each at its own world size: remembered, else run."""
    from grader.grading.distributed import DistributedRun, run_case

    text = path.read_text(encoding="utf-8")
    run = Run(exercise, path, "submit", "cpu", diagnose=False)  # the matrix works out what is named where
    results = []
    for case in cases:
        key = cache.key(text, case)
        found = cache.get(key)
        if found is None:
            result = run_case(run, DistributedRun(suite, suite.world_of(case), reference), case)
            cache.put(key, result)
        else:
            result = _result(case, found)
        results.append(result)
    return results


def grade_files(exercise: Exercise, files: list[tuple[Path, Path]], cases: list[Case],
                progress: Callable[[str], None], cache: VerdictCache) -> list[Graded]:
    """Each (name, runnable file)'s verdict on every case, CPU: remembered ones reused, the rest graded two at once."""
    graded, todo = [], []
    for source, runnable in files:
        text = runnable.read_text(encoding="utf-8")
        item = Graded(source)
        missing = set()
        for case in cases:
            found = cache.get(cache.key(text, case))
            if found is None:
                missing.add(case.name)
            else:
                item.results.append(_result(case, found))
        graded.append(item)
        if missing:
            todo.append((item, runnable, text, missing))
    if todo:
        progress(f"grading {sum(len(m) for *_, m in todo)} case verdicts of {len(todo)} files "
                 f"({cache.hits} remembered) ...")
    _grade_missing(exercise, cases, todo, cache)
    order = {case.name: index for index, case in enumerate(cases)}
    for item in graded:
        item.results.sort(key=lambda result: order[result.name])
    return graded


def _grade_missing(exercise: Exercise, cases: list[Case], todo: list, cache: VerdictCache) -> None:
    if not todo:
        return
    by_name = {case.name: case for case in cases}
    if len(todo) == 1 or sum(len(missing) for *_, missing in todo) <= FEW:
        # One file, or a case or two for each (a case added): graded here, with this process's zygote,
        # in less time than a pool takes to start (two more torch imports and zygotes).
        for item, runnable, text, missing in todo:
            _keep(item, text, missing, _grade_file(exercise, runnable, missing), by_name, cache)
        return
    # Processes, not threads: each grade's pipes and output threads stay in a process of their own, and
    # each process keeps its own cache of the mistakes' outputs. Spawned, so no thread state is forked.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(min(PARALLEL, len(todo)), mp_context=context, initializer=prepare_process) as pool:
        reports = list(pool.map(_grade_file, [exercise] * len(todo), [runnable for _, runnable, _, _ in todo],
                                [missing for *_, missing in todo]))
    for (item, _, text, missing), results in zip(todo, reports):
        _keep(item, text, missing, results, by_name, cache)


def _keep(item: Graded, text: str, missing: set[str], results: list[CaseResult], by_name: dict, cache: VerdictCache
          ) -> None:
    for result in results:
        if result.name in missing:
            cache.put(cache.key(text, by_name[result.name]), result)
            item.results.append(result)


def _grade_file(exercise: Exercise, path: Path, only: set[str]) -> list[CaseResult]:
    # What each failure would be diagnosed as is worked out by the matrix, against the catalogue as it is now.
    # An instructor reads validate: a hidden case's failure says its figures, as an example's does.
    report = grade(Run(exercise, path, "submit", "cpu", only=only, diagnose=False, numbers=True))
    if report.not_graded:  # the course's own code raised, or this machine could not grade: no verdict is one
        raise GraderError(report.not_graded)
    return report.results


def _result(case: Case, found: dict) -> CaseResult:
    result = CaseResult(case.name, case.suite, case.function, "cpu", Outcome(found["outcome"]),
                        str(found.get("message", "")))
    if found.get("violates"):
        result.extra["violates"] = found["violates"]
    return result


def missing_constants(path: Path, exercise: Exercise) -> str:
    """What a mistake file lacks of TITLE, RATIONALE, HELP, or a VIOLATES we do not know; '' when complete."""
    from grader.grading.diagnosis import catalogue

    module = next((m.module for m in catalogue(exercise).mistakes if m.stem == path.stem), None)
    if module is None:
        return "could not be loaded"
    lacking = [name for name in mistakes.STRINGS if not str(getattr(module, name, "")).strip()]
    if getattr(module, "VIOLATES", mistakes.CONSTANTS.default("VIOLATES")) not in VIOLATIONS:
        lacking.append(f"VIOLATES {module.VIOLATES!r} (known: {', '.join(sorted(VIOLATIONS - {''}))})")
    return ", ".join(lacking)


def elapsed(started: float) -> float:
    return round(time.monotonic() - started, 1)
