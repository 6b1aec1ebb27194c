"""What `grader scale` measured, as its views read it: each design's points per size, and the run around them.

The designs and the declaration are the grading layer's and the course's (grader/grading/scale_lane.py Design,
grader/course/scale_spec.py ScaleSpec); the views need only what the protocols below name of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


class Designed(Protocol):
    """One implementation measured, as the views name it."""

    key: str    # "yours", "reference", or a catalogued mistake's file stem
    title: str  # the mistake's TITLE
    help: str   # the mistake's HELP

    @property
    def naive(self) -> bool: ...


class Declared(Protocol):
    """What the exercise declared of its scale run, as the views need it."""

    function: str
    axis: str
    measures: tuple[str, ...]
    says: dict[str, dict[str, str]]
    sizes: tuple[Any, ...]  # each with its `value` on the axis


@dataclass
class Point:
    """One design at one size: its figures, None where not measured."""

    size: float
    seconds: float | None = None
    memory: int | None = None    # bytes held at once above the worker's level
    traffic: int | None = None   # bytes all ranks moved between them
    unit: int | None = None      # bytes of one unit of the communication (one all-reduce), for the same size
    world: int = 1

    def value(self, measure: str) -> float | None:
        """What the curve of `measure` plots: seconds, bytes, or traffic in units (per rank where there is none)."""
        if measure == "time":
            return self.seconds
        if measure == "memory":
            return None if self.memory is None else float(self.memory)
        if self.traffic is None:
            return None
        return self.traffic / self.unit if self.unit else self.traffic / self.world


@dataclass
class Series:
    """One design's points, smallest size first, and why it has none past the last (empty: it reached the end)."""

    design: Designed
    points: list[Point] = field(default_factory=list)
    ended: str = ""


@dataclass
class ScaleRun:
    """Everything `grader scale` measured, for the picture and the words (grader/report/scale_*.py)."""

    exercise: str
    spec: Declared
    device: str
    series: list[Series]
    budget: float
    asked: bool = False  # the budget is --time-budget's, not the exercise's
    unit_name: str = ""  # what traffic is counted in: "one all-reduce"
    stopped: str = ""    # why the larger sizes were not measured
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def sizes(self) -> list[float]:
        return [size.value for size in self.spec.sizes]
