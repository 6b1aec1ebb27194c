"""`grader validate`'s check of the catalogue: every mistake is caught (and named), every variant accepted."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from grader.course import Exercise
from grader.grading import grade
from grader.results import Report

PARALLEL = 2       # grades at once: each is a worker process, and the machines we run on may have 2 cores
EXAMPLE_NAMES = 3  # case names shown per mistake in the matrix
VIOLATIONS = {"", "materialization", "peak-memory", "inputs-modified"}


@dataclass
class Graded:
    """One catalogue file's report, and what the matrix needs from it."""

    path: Path
    report: Report

    @property
    def catchers(self) -> list[str]:
        return [r.name for r in self.report.results if r.outcome.counts_as_failure]

    @property
    def named(self) -> int:
        """Failing cases whose diagnosis names this very file."""
        return sum(1 for r in self.report.results if r.diagnosis and r.diagnosis.mistake == self.path.stem)


def grade_catalogue(exercise: Exercise, progress: Callable[[str], None]) -> tuple[list[Graded], list[Graded]]:
    """Grade every mistake and every variant on every case (CPU), two at a time."""
    mistakes = sorted(exercise.mistakes.glob("*.py")) if exercise.mistakes.is_dir() else []
    variants = sorted(exercise.variants.glob("*.py")) if exercise.variants.is_dir() else []
    progress(f"grading {len(mistakes)} mistakes and {len(variants)} variants on every case ...")
    files = mistakes + variants
    # Processes, not threads: each grade's pipes and output threads stay in a process of their own, and
    # each process keeps its own cache of the mistakes' outputs. Spawned, so no thread state is forked.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(PARALLEL, mp_context=context, initializer=_one_thread) as pool:
        reports = list(pool.map(_grade_file, [exercise] * len(files), files,
                                chunksize=max(1, len(files) // (2 * PARALLEL))))
    graded = [Graded(path, report) for path, report in zip(mistakes + variants, reports)]
    return graded[:len(mistakes)], graded[len(mistakes):]


def _one_thread() -> None:
    # Two graders and their two workers already fill two cores; torch's default thread pools on top of that
    # spin against each other and made the whole catalogue several times slower. Workers inherit the variable.
    import os

    os.environ["OMP_NUM_THREADS"] = "1"
    import torch

    torch.set_num_threads(1)


def _grade_file(exercise: Exercise, path: Path) -> Report:
    return grade(exercise, path, "submit", "cpu")


def missing_constants(path: Path) -> str:
    """What a mistake file lacks of TITLE, RATIONALE, HELP, or a VIOLATES we do not know; '' when complete."""
    from grader.diagnosis import catalogue

    module = next(m.module for m in catalogue(path.parent).mistakes if m.stem == path.stem)
    lacking = [name for name in ("TITLE", "RATIONALE", "HELP") if not str(getattr(module, name, "")).strip()]
    if getattr(module, "VIOLATES", "") not in VIOLATIONS:
        lacking.append(f"VIOLATES {module.VIOLATES!r} (known: {', '.join(sorted(VIOLATIONS - {''}))})")
    return ", ".join(lacking)


def matrix(mistakes: list[Graded], variants: list[Graded]) -> list[str]:
    """Compact lines: per mistake how many cases catch it and whether it was named; then the sole catchers."""
    lines = [f"mistakes against the cases ({len(mistakes)}): cases that catch each, and how often the "
             f"diagnosis named it"]
    width = max((len(m.path.stem) for m in mistakes), default=0)
    for mistake in mistakes:
        catchers = mistake.catchers
        names = ", ".join(catchers[:EXAMPLE_NAMES]) + (", ..." if len(catchers) > EXAMPLE_NAMES else "")
        named = f"named on {mistake.named}/{len(catchers)}" if catchers else "NOT CAUGHT"
        lines.append(f"  {mistake.path.stem:<{width}} {len(catchers):4d} cases  {named:<16} {names}")
    sole: dict[str, list[str]] = {}
    for mistake in mistakes:
        if len(mistake.catchers) == 1:
            sole.setdefault(mistake.catchers[0], []).append(mistake.path.stem)
    lines.append("cases that are the only catcher of a mistake:" + ("" if sole else " none"))
    lines.extend(f"  {case}: {', '.join(stems)}" for case, stems in sorted(sole.items()))
    rejected = [v for v in variants if v.report.status != "passed"]
    lines.append(f"variants: {len(variants) - len(rejected)} of {len(variants)} accepted on every case")
    return lines
