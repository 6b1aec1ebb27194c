"""One request to grade a file (Run), the limits it runs under (Limits), and who hears of it as it goes (Listener).

A Run is what every caller of grader/grading/pipeline.py hands it, whoever asked: a learner's
`run` or `submit`, a cohort's grading process, an autograder, validate. It is made once, checked
as it is made (the learner's file is one that can be graded), and read, never changed, by every
step below the pipeline: the phases, the audit lane, the distributed suite beside them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import AbstractSet, NamedTuple, Protocol

from grader.course.exercise import Exercise, learner_file
from grader.grading.budget import checked_seconds
from grader.results import CaseResult, Report


class SuiteAsked(NamedTuple):
    """A distributed suite asked for by its option and a world size: ("ring", 4) is `--ring 4`, ("ranks", 2)
    `--ranks 2` (grader/grading/distributed.py chooses the suite)."""

    option: str
    ranks: int


@dataclass(frozen=True)
class Limits:
    """What a run may spend where it replaces the exercise's own (None: the exercise's), and a learner's extra time."""

    time_limit: float | None = None     # CPU seconds per case, for the cases that set none of their own
    memory_limit_mb: int | None = None  # the learner's processes together
    time_budget: float | None = None    # CPU seconds for the whole command (grader/grading/budget.py)
    time_factor: float = 1.0            # a learner's extra time (a roster's): every limit and the budget times this

    def on(self, exercise: Exercise) -> Exercise:
        """`exercise` with these limits: the one place where a run's effective limits are made. A time budget that
        is not a positive number of seconds is a usage error."""
        time_limit, time_budget = self.time_limit, checked_seconds(self.time_budget)
        if self.time_factor != 1.0:
            exercise = replace(exercise, time_factor=self.time_factor)
            time_limit = (time_limit or exercise.time_limit) * self.time_factor
            time_budget = (time_budget or exercise.time_budget) * self.time_factor
        changed: dict[str, float | int] = {}
        if time_limit is not None:
            changed["time_limit"] = float(time_limit)
        if self.memory_limit_mb is not None:
            changed["memory_limit_mb"] = int(self.memory_limit_mb)
        if time_budget is not None:
            changed["time_budget"] = float(time_budget)
        return replace(exercise, **changed) if changed else exercise


@dataclass(frozen=True)
class Run:
    """One file to grade, and how: the exercise (with the limits it runs under: Limits.on), the learner's file
    (the exercise's stub by default), on the examples (`run`) or every case (`submit`), on which devices."""

    exercise: Exercise
    file: Path | None = None            # made absolute and checked (course/exercise.learner_file) as the Run is made
    mode: str = "run"                   # "run": the examples; "submit": every case, hidden ones included
    device: str = "all"                 # "cpu", "cuda", or "all": the CPU, and CUDA where there is one
    distributed: SuiteAsked | None = None         # a distributed suite to run after the cases (a submission runs its own anyway)
    only: AbstractSet[str] | None = None  # just the cases of these names (what validate has not graded, run -k)
    display: str = ""                   # the file's name in messages and the report ('': its path from the course)
    diagnose: bool = True               # name the catalogued mistake behind a failure (validate works it out itself)
    # Grade only where learner code is kept from the course and the results (a cohort, an autograder), never on a
    # machine where it would run as the grader's own user with nothing to hold it.
    confined: bool = False
    # A hidden failure says its figures (largest error, where, the bound), as an example's does: only where whoever
    # reads the report may read the course itself (validate, an instructor's submit --verbose: course_readable).
    numbers: bool = False

    def __post_init__(self) -> None:
        learner = learner_file(self.file or self.exercise.stub)
        object.__setattr__(self, "file", learner)
        object.__setattr__(self, "display", self.display or shown_path(learner, self.exercise.root))
        if self.only is not None:
            object.__setattr__(self, "only", frozenset(self.only))
        if self.distributed is not None:
            object.__setattr__(self, "distributed", SuiteAsked(*self.distributed))


class Listener(Protocol):
    """Who hears of a run as it goes, in the shape of a cohort's (grader/staff/cohort.py): `start` once, with the
    report planned (`Report.planned`, `Report.uses`) and nothing graded yet; `finished` with each result as it is
    known, in report order."""

    def start(self, report: Report) -> None: ...

    def finished(self, result: CaseResult) -> None: ...


class Unheard:
    """The listener of a run nobody watches (a cohort's, validate's, a suite's results kept for later)."""

    def start(self, report: Report) -> None:
        pass

    def finished(self, result: CaseResult) -> None:
        pass


UNHEARD = Unheard()


def shown_path(path: Path, root: Path) -> str:
    """`path` as messages show it: from the course's root where it is inside the course."""
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)
