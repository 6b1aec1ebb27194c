"""`grader scale`: the designs measured at each of the sizes an exercise declares, smallest first, within a budget.

Every design runs at one size before any runs at the next, so that a run stopped by its budget still compares
them all at the sizes it reached. Before each size the run predicts what it will cost from what the one before
cost (at least in proportion to the size); a size that would not finish within the budget is not started, and
a call still running when the budget is spent is stopped. Either way the run says where it stopped and why.
A function of the checker runs in one worker per design (grader/grading/scale_lane.py); a distributed suite's
function runs each size as one distributed case (grader/grading/distributed.py), whose traffic the kernel counts.
"""

from __future__ import annotations

import math
import shutil
import threading
import time
from pathlib import Path
from typing import Any

from grader import PACKAGE
from grader.course import mistakes, trust
from grader.course.blame import charged_to_course
from grader.course.cases import Case
from grader.course.exercise import Exercise
from grader.course.scale_spec import checked_params
from grader.errors import UsageError
from grader.grading.scale_lane import ROUNDS, ROUND_WITHIN, Lane, Measured, check_function, designs
from grader.results import Outcome
from grader.results.scale import Point, ScaleRun, Series

SIZE_AT_LEAST = 1.0  # a size costs at least this power of its ratio to the one before


def measure_scale(exercise: Exercise, learner: Path, device: str, budget: float | None = None,
                  started: float | None = None) -> ScaleRun:
    """Measure the learner's file, the reference and the naive designs at every size the exercise declares that
    fits within `budget` seconds of wall clock from `started` (by default the section's own budget, from now)."""
    from grader.grading.pipeline import load_trusted
    from grader.sandbox.machine import containment, refusal

    spec = exercise.scale
    if spec is None:
        raise UsageError(f"{exercise.name} declares nothing to measure (no `scale` in its exercise.yaml)")
    started = time.monotonic() if started is None else started
    asked = budget is not None
    budget = float(budget if budget is not None else spec.budget)
    trusted = load_trusted(exercise, "run", distributed=True)
    suite = check_function(spec, trusted.checker, trusted.suites)
    validate = suite.validate if suite is not None else trusted.checker.validate
    params = checked_params(spec, validate)
    problem = refusal([Path(path) for path in trusted.digests if not Path(path).is_relative_to(PACKAGE)], False)
    if problem:
        raise UsageError(f"not measured: {problem}")
    cases = [Case(f"scale-{size.value:g}", "scale", spec.function, "", found, None, f"{spec.path}:{size.line}")
             for size, found in zip(spec.sizes, params)]
    folder = mistakes.temporary_folder()
    try:
        run = ScaleRun(exercise.name, spec, "cpu" if suite is not None else device,
                       [Series(design) for design in designs(exercise, spec, learner, folder)], budget,
                       asked=asked)
        run.notes.append(f"sandbox: {containment()}")
        if suite is not None:
            if device == "cuda":
                run.notes.append("The ranks ran on the CPU with gloo: the kernel counts what they move over loopback.")
            _grouped(run, exercise, suite, cases, trusted.reference, started)
        else:
            _single(run, exercise, trusted.checker, cases, device, started)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if trust.changed(trusted.digests, exercise):
        run.notes.append("The course files changed while this ran: measure again.")
    run.seconds = time.monotonic() - started
    return run


class _Clock:
    """The budget: what is left of it, and whether the next size is predicted to fit."""

    def __init__(self, run: ScaleRun, started: float) -> None:
        self.run, self.started = run, started
        self.costs: list[tuple[float, float]] = []  # (size, seconds it cost)

    def left(self) -> float:
        return self.run.budget - (time.monotonic() - self.started)

    def fits(self, size: float) -> bool:
        """Whether `size` is predicted to finish in the budget; else the run's `stopped` says why it was not run."""
        if not self.costs:
            return self.left() > 0
        (last, cost), slope = self.costs[-1], SIZE_AT_LEAST
        if len(self.costs) > 1 and self.costs[-2][1] > 0 and cost > 0:
            before, before_cost = self.costs[-2]
            slope = max(slope, min(3.0, math.log(cost / before_cost) / math.log(last / before)))
        predicted = cost * (size / last) ** slope
        if predicted <= self.left():
            return True
        axis = self.run.spec.axis
        self.run.stopped = (f"stopped after {last:g} {axis}: {size:g} {axis} would take about {predicted:.1f} s more, "
                            f"past the budget of {self.run.budget:g} s" + _whose(self.run))
        return False

    def out(self, size: float, begun: bool = True) -> None:
        """Say that the budget was spent at `size` (`begun`: while it ran; else before it started)."""
        axis, budget = self.run.spec.axis, self.run.budget
        self.run.stopped = (f"stopped at {size:g} {axis}: the budget of {budget:g} s ran out while it ran" if begun
                            else f"stopped before {size:g} {axis}: the budget of {budget:g} s was spent") + \
            _whose(self.run)


def _whose(run: ScaleRun) -> str:
    return " (--time-budget)" if run.asked else " (the exercise's: twice a submit; --time-budget sets another)"


def _single(run: ScaleRun, exercise: Exercise, checker: Any, cases: list[Case], device: str, started: float) -> None:
    lanes = [Lane(series.design, exercise, device) for series in run.series]
    clock = _Clock(run, started)
    try:
        for lane in lanes:
            lane.start()
        smallest = _inputs(exercise, checker, cases[0])
        for series, lane in zip(run.series, lanes):
            series.ended = lane.ready()
            if not series.ended:
                timer = lane.stop_at(clock.left())
                try:
                    series.ended = lane.warm_up(cases[0].function, smallest, max(clock.left(), 0.5))
                finally:
                    timer.cancel()
        if device == "cpu" and not all(lane.memory_counted for lane in lanes) and "memory" in run.spec.measures:
            run.notes.append("Peak memory is not counted here: nothing counts every process of the sandbox.")
        for case, size in zip(cases, run.sizes):
            if clock.left() <= 0:
                clock.out(size, begun=False)
                return
            if not clock.fits(size):
                return
            began = time.monotonic()
            inputs = _inputs(exercise, checker, case)
            best: dict[int, Measured] = {}
            for _ in range(ROUNDS):
                round_began = time.monotonic()
                for index, (series, lane) in enumerate(zip(run.series, lanes)):
                    if series.ended:
                        continue
                    if clock.left() <= 0:
                        clock.out(size)
                        return
                    timer = lane.stop_at(clock.left())
                    try:
                        found = lane.measure(case.function, inputs, max(clock.left(), 0.5), best.get(index))
                    finally:
                        timer.cancel()
                    if found.failed:
                        series.ended = f"{found.failed} at {size:g} {run.spec.axis}"
                        best.pop(index, None)
                    else:
                        best[index] = found
                if time.monotonic() - round_began >= ROUND_WITHIN:
                    break
            for index, found in sorted(best.items()):
                run.series[index].points.append(Point(size, found.seconds, found.memory))
            clock.costs.append((size, time.monotonic() - began))
    finally:
        for lane in lanes:
            lane.stop()


def _inputs(exercise: Exercise, checker: Any, case: Case) -> Any:
    with charged_to_course(exercise.root, exercise.checker):
        return checker.build_inputs(case.function, case.params)


def _grouped(run: ScaleRun, exercise: Exercise, suite: Any, cases: list[Case], reference: Any, started: float) -> None:
    from grader.grading.distributed import DistributedRun, run_case
    from grader.grading.request import Run

    clock = _Clock(run, started)
    uncounted = False
    for case, size in zip(cases, run.sizes):
        if clock.left() <= 0:
            clock.out(size, begun=False)
            break
        if not clock.fits(size):
            break
        began = time.monotonic()
        for series in run.series:
            if series.ended:
                continue
            counted: dict[str, Any] = {}
            stop = threading.Event()
            timer = threading.Timer(max(clock.left(), 0.0), stop.set)
            timer.daemon = True
            timer.start()
            try:
                result = run_case(Run(exercise, series.design.file, "submit", "cpu", diagnose=False),
                                  DistributedRun(suite, suite.world_of(case), reference), case, False, stop,
                                  lambda traffic, inputs: counted.update(traffic=traffic, inputs=inputs))
            finally:
                timer.cancel()
            if stop.is_set():
                clock.out(size)
                return
            if result.outcome not in (Outcome.PASSED, Outcome.FAILED, Outcome.NOT_JUDGED) or "inputs" not in counted:
                series.ended = f"{result.outcome.value}: {result.message} (at {size:g} {run.spec.axis})"
                continue
            inputs = counted["inputs"]
            unit, run.unit_name = suite.traffic_unit(inputs)
            uncounted = uncounted or counted["traffic"] is None
            series.points.append(Point(size, result.seconds or None, None, counted["traffic"], unit or None,
                                       inputs.world))
        clock.costs.append((size, time.monotonic() - began))
    if uncounted:
        run.notes.append("The bytes the ranks moved cannot be counted here: they have no network namespace of their "
                         "own.")
    _reference_as_unit(run)


def _reference_as_unit(run: ScaleRun) -> None:
    """Where the suite names no unit, the reference's own traffic at each size is the unit."""
    if run.unit_name or "traffic" not in run.spec.measures:
        return
    reference = {point.size: point.traffic for series in run.series if series.design.key == "reference"
                 for point in series.points}
    for series in run.series:
        for point in series.points:
            point.unit = reference.get(point.size) or None
    run.unit_name = "the reference's traffic"
