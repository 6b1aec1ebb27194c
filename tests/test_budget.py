"""A submission that never returns costs a few time limits, not one per case: giving up, and the total budget."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from conftest import FIXTURES, REPO, own_processes, survivors

from grader.errors import ConfigError, UsageError
from grader.grading.budget import GIVE_UP_AFTER, WALL_ALLOWANCE, WALL_FACTOR, Budget
from grader.grading.pipeline import grade
from grader.grading.request import Limits, Run
from grader.results import CaseResult, Outcome

TIME_LIMIT = 1.0
RING_CASES = 7
# Seven ring cases, each of which the endless loop would sit through, then a stats case it gets right.
CASES = "cases:\n" + "".join(f"""
  - name: ring-{index}
    function: ring_attention
    lq: 3
    d: 4
    chunks: [2, {index + 1}]
    seed: {index}
""" for index in range(RING_CASES)) + """
  - name: stats-last
    function: attention_chunk_stats
    lq: 3
    d: 4
    lk: 5
"""


@pytest.fixture
def looping_exercise(course, exercise):
    (course / "exercises/07-ring-attention/cases/examples.yaml").write_text(CASES)
    return exercise


def test_after_a_few_timeouts_the_function_is_given_up_on_and_nothing_passes(looping_exercise) -> None:
    before = own_processes()
    started = time.monotonic()
    report = grade(Run(Limits(time_limit=TIME_LIMIT).on(looping_exercise), FIXTURES / "hostile/infinite_loop.py", "run",
                       "cpu"))
    elapsed = time.monotonic() - started
    ring = [result for result in report.results if result.function == "ring_attention"]
    assert [result.outcome for result in ring] == [Outcome.TIMED_OUT] * RING_CASES
    ran, skipped = ring[:GIVE_UP_AFTER], ring[GIVE_UP_AFTER:]
    assert all(not result.not_run and "within the" in result.message for result in ran)
    assert all(result.not_run == "timeouts" for result in skipped)
    assert all(result.message.startswith("not run: ring_attention already timed out on 3 cases (ring-0, ring-1, "
                                         "ring-2)") for result in skipped)
    # Another function is not given up on: its case runs, and passes.
    assert report.results[-1].name == "stats-last" and report.results[-1].outcome is Outcome.PASSED
    assert report.failed == RING_CASES and report.status != "passed"
    assert any(f"{RING_CASES - GIVE_UP_AFTER} cases were not run: ring_attention" in note for note in report.notes)
    # Three limits (each waited on at most three times over, plus a fresh worker), not seven.
    assert elapsed < GIVE_UP_AFTER * (3 * TIME_LIMIT + 4) + 10
    assert survivors(before) == []


def test_a_used_up_budget_leaves_every_remaining_case_timed_out_and_says_so(exercise) -> None:
    # The budget is the CPU the learner's code used: the first case runs, and uses it up.
    report = grade(Run(Limits(time_budget=0.001).on(exercise), exercise.solution, "run", "cpu"))
    first, *rest = report.results
    assert first.passed and first.cpu_seconds > 0.001 and not first.not_run
    assert rest and all(result.outcome is Outcome.TIMED_OUT for result in rest)
    assert all(result.not_run == "budget" for result in rest)
    assert "the time budget of 0.001 s of CPU for the whole command was used up" in rest[0].message
    assert report.passed == 1
    assert any("time budget of 0.001 s" in note for note in report.notes)


def test_the_ring_suite_keeps_to_the_budget_too(exercise) -> None:
    # Its ranks are never started: with the budget gone, each ring case is reported without running.
    report = grade(Run(Limits(time_budget=0.001).on(exercise), exercise.solution, "run", "cpu", distributed=("ring", 2)))
    ring = [result for result in report.results if result.function == "distributed_ring"]
    assert ring and all(result.not_run == "budget" for result in ring)


def test_a_generous_budget_changes_nothing(exercise) -> None:
    report = grade(Run(Limits(time_budget=600).on(exercise), exercise.solution, "run", "cpu"))
    assert report.results and report.failed == 0
    assert not any(result.not_run for result in report.results)
    assert not any("not run" in note for note in report.notes)


def test_a_budget_that_is_not_positive_is_refused(exercise, course) -> None:
    with pytest.raises(UsageError, match="--time-budget must be a positive number"):
        grade(Run(Limits(time_budget=0).on(exercise), exercise.solution, "run", "cpu"))
    from grader.course.exercise import find_exercise

    settings = course / "exercises/07-ring-attention/exercise.yaml"
    settings.write_text(settings.read_text() + "time_budget: -5\n")
    with pytest.raises(ConfigError, match="time_budget"):
        find_exercise(course, "07-ring-attention")


def test_the_terminal_names_the_budget(course) -> None:
    done = subprocess.run([sys.executable, "-m", "grader", "run", "07-ring-attention", "--no-record",
                           "--file", str(REPO / "solutions/07-ring-attention/ring_attention.py"),
                           "--time-budget", "0.001"],
                          cwd=course, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert "time budget of 0.001 s of CPU for the whole command was used up" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


def test_a_function_that_keeps_running_out_of_memory_is_given_up_on_after_three() -> None:
    from grader.course.cases import Case

    budget = Budget(None)
    cases = [Case(f"case-{n}", "hidden", "stats", "", {}, None, "f.yaml") for n in range(5)]
    for case in cases[:3]:
        assert budget.refusal(case) == ""
        budget.count(CaseResult(case.name, "hidden", "stats", "cpu", Outcome.OUT_OF_MEMORY))
    assert "already ran out of memory on 3 cases" in budget.refusal(cases[3])
    result = budget.not_run(cases[3], "cpu", budget.refusal(cases[3]))
    assert result.outcome is Outcome.OUT_OF_MEMORY and result.not_run == "memory"
    assert any("run out of memory 3 times" in note for note in budget.notes())


def test_the_budget_counts_cpu_not_the_clock() -> None:
    from grader.course.cases import Case

    budget = Budget(1.0)
    case = Case("a", "hidden", "stats", "", {}, None, "f.yaml")
    budget.started -= 2.0  # two seconds of wall-clock time have passed: a busy machine, not the learner's code
    assert budget.refusal(case) == ""
    budget.count(CaseResult("a", "hidden", "stats", "cpu", Outcome.PASSED, cpu_seconds=1.5))
    assert "of CPU for the whole command was used up" in budget.refusal(case)
    fresh = Budget(1.0)
    fresh.started -= 1.0 * WALL_FACTOR + WALL_ALLOWANCE - 0.5
    assert fresh.refusal(case) == ""
    fresh.started -= 1.0  # the backstop: three budgets of wall-clock time and the allowance for starting up
    assert fresh.refusal(case).startswith("not run: the time budget")
