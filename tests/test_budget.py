"""A submission that never returns costs one time limit per function, not one per case: giving up, and the budget."""

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


def test_after_a_timeout_the_function_is_given_up_on_and_nothing_passes(looping_exercise) -> None:
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
    assert all(result.message == "not run: ring_attention already timed out on ring-0; it is not called again in "
                                 "this run" for result in skipped)
    # Where it was when stopped: a hint from the worker's stack sample, on this visible case.
    stopped = ran[0].message.split("; when stopped it was at ")[1]  # the loop's line, or its body's
    assert stopped.endswith(("infinite_loop.py:30 in ring_attention", "infinite_loop.py:31 in ring_attention"))
    # Another function is not given up on: its case runs, and passes.
    assert report.results[-1].name == "stats-last" and report.results[-1].outcome is Outcome.PASSED
    assert report.failed == RING_CASES and report.status != "passed"
    assert f"ring_attention timed out and was not called again: {RING_CASES - GIVE_UP_AFTER} more of its cases did " \
           f"not run, and count as timed out. Fix the endless loop or the slow step first, then run again." in report.notes
    # One limit (waited on at most three times over, plus a fresh worker), not seven.
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


def test_a_function_that_runs_out_of_memory_is_given_up_on_and_its_callers_depend_on_it() -> None:
    from grader.course.cases import Case

    budget = Budget(None)
    cases = [Case(f"case-{n}", "hidden", "stats", "", {}, None, "f.yaml") for n in range(5)]
    assert budget.refusal(cases[0]) == ""
    budget.count(CaseResult(cases[0].name, "hidden", "stats", "cpu", Outcome.OUT_OF_MEMORY))
    # Named by its case only where that one is visible.
    assert budget.refusal(cases[1]) == "not run: stats already ran out of memory on a hidden case; it is not called " \
                                       "again in this run"
    result = budget.not_run(cases[1], "cpu", budget.refusal(cases[1]))
    assert result.outcome is Outcome.OUT_OF_MEMORY and result.not_run == "memory"
    assert budget.stopped == {"stats": (Outcome.OUT_OF_MEMORY, "case-0", True)}
    # A case whose program calls it (a distributed case) is not run either, and depends on it.
    ring = Case("ring2-a", "ring", "distributed_ring", "", {}, None, "ring.yaml")
    assert budget.refusal(ring) == "" and "it calls stats, which ran out of memory" in budget.refusal(ring, ("stats",))
    depends = budget.not_run(ring, "cpu", budget.refusal(ring, ("stats",)), ("stats",))
    assert depends.not_run == "depends" and depends.outcome is Outcome.OUT_OF_MEMORY and depends.reached == ["stats"]
    assert budget.notes() == ["stats ran out of memory and was not called again: 1 more of its cases and 1 case that "
                              "calls it did not run, and count as out of memory. Look for what grows with the input "
                              "first, then run again."]


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


MERGE_LOOPS = """
  - name: merge-first
    function: merge_chunk_stats
    lq: 4
    dv: 3
    max_offset: [0.0, 3.0]
    seed: 2
""" + "".join(f"""
  - name: ring-{index}
    function: ring_attention
    lq: 3
    d: 4
    chunks: [2, {index + 1}]
    seed: {index}
""" for index in range(3))


def test_a_caller_of_a_function_that_timed_out_depends_on_it_and_does_not_call_it_again(course, exercise) -> None:
    (course / "exercises/07-ring-attention/cases/examples.yaml").write_text("cases:\n" + MERGE_LOOPS)
    source = (REPO / "solutions/07-ring-attention/ring_attention.py").read_text()
    looping = source.replace("    new_max = torch.maximum(acc_max, chunk_max)\n",
                             "    new_max = torch.maximum(acc_max, chunk_max)\n    while True:\n        pass\n", 1)
    assert looping != source
    mine = course / "loops_in_merge.py"
    mine.write_text(looping)
    line = looping.splitlines().index("    while True:") + 1  # where Python 3.11 counts the loop's jump back
    started = time.monotonic()
    report = grade(Run(Limits(time_limit=TIME_LIMIT).on(exercise), mine, "run", "cpu"))
    elapsed = time.monotonic() - started
    merge, *ring = report.results
    assert merge.outcome is Outcome.TIMED_OUT and not merge.not_run
    assert merge.message.endswith(f"; when stopped it was at {mine.name}:{line} in merge_chunk_stats") or \
        merge.message.endswith(f"; when stopped it was at {mine.name}:{line + 1} in merge_chunk_stats")
    # Each ring case started, reached the stopped merge and was stopped there at once: no second limit.
    assert [result.not_run for result in ring] == ["depends"] * 3
    assert all(result.outcome is Outcome.TIMED_OUT and result.reached[-1] == "merge_chunk_stats" for result in ring)
    assert ring[0].message == ("not run to the end: it calls merge_chunk_stats, which timed out on merge-first earlier "
                               "in this run and is not called again; fix that first")
    assert elapsed < 3 * TIME_LIMIT + 12
    assert "merge_chunk_stats timed out and was not called again: 3 cases that call it did not run" in report.notes[-1]
