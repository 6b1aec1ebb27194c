"""Hidden cases handed to the worker one ahead: each keeps its own verdict and its own clock, whatever the one before did."""

from __future__ import annotations

from pathlib import Path

from grader.course.exercise import find_exercise
from grader.grading.pipeline import grade
from grader.grading.request import Run
from grader.results import Outcome

HIDDEN = """\
cases:
""" + "".join(f"""  - name: factor-{factor}
    function: scale
    factor: {factor}
    seed: {factor}
    time_limit: 2
""" for factor in range(2, 10))

# Right on every case, but: a second of CPU on factor 3, the worker's death on factor 7, an endless loop on factor 9
# (last: a function that timed out is not called again in that run).
LEARNER = """\
import os
import time


def scale(x, factor):
    if factor == 3:
        end = time.process_time() + 1.0
        while time.process_time() < end:
            pass
    if factor == 9:
        while True:
            pass
    if factor == 7:
        os._exit(3)
    total = x - x
    for _ in range(factor):
        total = total + x
    return total
"""


def test_each_hidden_case_keeps_its_verdict_and_its_clock_with_the_next_one_sent_ahead(scale_course: Path,
                                                                                       tmp_path: Path) -> None:
    (scale_course / "exercises/02-scale/cases/hidden/more.yaml").write_text(HIDDEN)
    learner = tmp_path / "scale.py"
    learner.write_text(LEARNER)
    report = grade(Run(find_exercise(scale_course, "02"), learner, "submit", "cpu"))
    hidden = {result.name: result for result in report.results if result.name.startswith("factor-")}
    assert [hidden[f"factor-{factor}"].outcome for factor in range(2, 10)] == [
        Outcome.PASSED, Outcome.PASSED, Outcome.PASSED, Outcome.PASSED, Outcome.PASSED, Outcome.CRASHED,
        Outcome.PASSED, Outcome.TIMED_OUT], {name: result.message for name, result in hidden.items()}
    # The second of CPU is the slow case's alone: the case sent while it ran starts its clock when it starts.
    assert hidden["factor-3"].cpu_seconds >= 0.9
    assert hidden["factor-4"].cpu_seconds < 0.5, hidden["factor-4"].cpu_seconds
    # The one after the crash was sent to a worker that then died: it ran again on a new one, on its own clock.
    assert hidden["factor-8"].cpu_seconds < 0.5
