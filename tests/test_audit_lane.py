"""Work run beside the hidden cases (the memory-audited calls, the distributed suite): the same verdicts, in report order."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from conftest import ring_exercise

import grader.grading.phases as phases_module
from grader.course.exercise import find_exercise
from grader.grading.audit_lane import AuditLane
from grader.grading.case import Judge
from grader.grading.pipeline import _expected, grade, load_reference, load_trusted
from grader.grading.request import Run
from grader.grading.worker_client import WorkerClient
from grader.results import Outcome
from grader.sandbox.machine import sandboxes_apart

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "audit"
AUDITED = "ring-memory-stays-near-one-chunk"
HIDDEN = {"ring-split-invariance-1", "merge-random-1", "stats-random-1", "ring-odd-total-113"}
STARTED_ON: dict[int, str] = {}  # per worker (by id), the thread that started it


def graded_with_calls(monkeypatch: pytest.MonkeyPatch, learner: Path) -> tuple[list, dict[str, tuple[str, int]]]:
    """The report's results for the audited case, a few hidden ones and the examples, and per case the thread that
    made its call and the worker (by id) it was made in."""
    calls: dict[str, tuple[str, int]] = {}
    called = Judge.called

    def recording(self, case, device, worker):
        calls[case.name] = (threading.current_thread().name, id(worker))
        return called(self, case, device, worker)

    sent = Judge.send

    def sending(self, case, device, worker):
        calls[case.name] = (threading.current_thread().name, id(worker))
        return sent(self, case, device, worker)

    monkeypatch.setattr(Judge, "called", recording)
    monkeypatch.setattr(Judge, "send", sending)
    start = WorkerClient.start

    def starting(self):
        STARTED_ON[id(self)] = threading.current_thread().name
        return start(self)

    monkeypatch.setattr(WorkerClient, "start", starting)
    exercise = ring_exercise()
    examples = {case.name for case in load_trusted(exercise, "run").cases}
    report = grade(Run(exercise, learner, "submit", "cpu", only={AUDITED, *HIDDEN, *examples}))
    return report.results, calls


@pytest.mark.skipif(not sandboxes_apart(), reason="sandboxes here are not kept apart: the audited cases run in turn")
def test_the_memory_case_runs_in_a_worker_of_its_own_and_is_reported_in_its_place(monkeypatch):
    results, calls = graded_with_calls(monkeypatch, FIXTURES / "keep_all_blocks.py")
    audited = next(result for result in results if result.name == AUDITED)
    assert audited.outcome is Outcome.FAILED and audited.extra["violates"] == "peak-memory", audited.message
    thread, worker = calls[AUDITED]
    assert thread == "grader-audit-lane"
    assert all(calls[name][0] == threading.main_thread().name and calls[name][1] != worker for name in HIDDEN)
    # The hidden cases' worker was started, and imported the file, while the examples ran; never the examples' own.
    hidden_worker = calls[next(iter(HIDDEN))][1]
    assert STARTED_ON[hidden_worker] == "grader-next-worker" and STARTED_ON[worker] == "grader-audit-lane"
    examples = {calls[result.name][1] for result in results if result.suite != "hidden"}
    assert len(examples) == 1 and hidden_worker not in examples
    # The order the case files give, whichever case ended first.
    exercise = ring_exercise()
    trusted = load_trusted(exercise, "submit")
    names = {result.name for result in results}
    assert [result.name for result in results] == [case.name for case, _ in _expected(trusted.cases, ["cpu"])
                                                   if case.name in names]


@pytest.mark.parametrize("learner", [ring_exercise().solution, FIXTURES / "keep_all_blocks.py"],
                         ids=["reference", "keep_all_blocks"])
def test_beside_or_in_turn_the_verdicts_are_the_same(monkeypatch, learner):
    beside, _ = graded_with_calls(monkeypatch, learner)
    monkeypatch.setattr(phases_module, "sandboxes_apart", lambda use_cuda=False: False)
    in_turn, calls = graded_with_calls(monkeypatch, learner)
    assert calls[AUDITED][0] == threading.main_thread().name  # in turn: the grader's own thread, as every case
    assert [(r.name, r.outcome, r.message, r.extra.get("violates")) for r in beside] == \
        [(r.name, r.outcome, r.message, r.extra.get("violates")) for r in in_turn]


def test_a_file_that_does_not_import_in_the_examples_starts_no_lane(monkeypatch, tmp_path):
    started = []
    start = AuditLane.start
    monkeypatch.setattr(AuditLane, "start", lambda self: started.append(self) or start(self))
    learner = tmp_path / "ring_attention.py"
    learner.write_text("import no_such_module_here\n")
    examples = {case.name for case in load_trusted(ring_exercise(), "run").cases}
    report = grade(Run(ring_exercise(), learner, "submit", "cpu", only={AUDITED, *HIDDEN, *examples}))
    assert started == [] and report.load_error
    assert all(result.outcome is Outcome.ERROR and result.load_failed for result in report.results)
    # With no example to import it first, the lane's worker finds the same error, said the same way.
    report = grade(Run(ring_exercise(), learner, "submit", "cpu", only={AUDITED, *HIDDEN}))
    assert len(started) == (1 if sandboxes_apart() else 0)
    assert {(result.outcome, result.load_failed, result.message) for result in report.results} == \
        {(Outcome.ERROR, True, report.load_error.splitlines()[0])}


def test_stopping_the_lane_ends_a_call_that_never_returns_and_its_worker(scale_course, tmp_path):
    """Ctrl-C, or a run that ends early, while the lane waits on a call: the call is abandoned within a poll."""
    learner = tmp_path / "scale.py"
    learner.write_text("import time\n\n\ndef scale(x, factor):\n    while True:\n        time.sleep(0.01)\n")
    exercise = find_exercise(scale_course, "02")
    trusted = load_trusted(exercise, "submit")
    case = next(case for case in trusted.cases if case.hidden)
    worker = WorkerClient(learner, exercise.root, exercise.memory_limit_mb, use_cuda=False)
    lane = AuditLane(Judge(exercise, trusted.checker, "scale.py", load_reference(exercise)), worker, [(case, "cpu")],
                     exercise.time_limit).start()
    deadline = time.monotonic() + 20
    while worker.sandbox is None or worker.load_result is None:  # the call is under way
        assert time.monotonic() < deadline
        time.sleep(0.02)
    time.sleep(0.3)
    stopping = time.monotonic()
    lane.stop()
    assert time.monotonic() - stopping < 3
    assert not worker.alive
    made = lane.made(case, "cpu", wait=True)
    assert made is not None and made.raw.kind == "crashed" and "stopped waiting" in made.raw.detail


# ---------------------------------------------------------------- the distributed suite beside the hidden cases

RING = Path(__file__).resolve().parent / "fixtures" / "ring_wrong_merge.py"


def graded_ring(monkeypatch: pytest.MonkeyPatch, learner: Path) -> tuple[list, set[str]]:
    """A submission's results (a few hidden cases and the ring suite), and the threads its ring cases ran on."""
    import grader.grading.distributed as distributed

    threads: set[str] = set()
    run_case = distributed.run_case

    def recording(*args, **kwargs):
        threads.add(threading.current_thread().name)
        return run_case(*args, **kwargs)

    monkeypatch.setattr(distributed, "run_case", recording)
    report = grade(Run(ring_exercise(), learner, "submit", "cpu", only={*HIDDEN, "ring2-uneven", "ring2-even-split"}))
    return report.results, threads


@pytest.mark.parametrize("learner", [ring_exercise().solution, RING], ids=["reference", "ring_wrong_merge"])
def test_the_ring_suite_beside_the_hidden_cases_reports_what_it_reports_in_turn(monkeypatch, learner):
    import grader.grading.pipeline as pipeline

    beside, threads = graded_ring(monkeypatch, learner)
    assert threads == {"grader-distributed-suite" if sandboxes_apart() else threading.main_thread().name}
    monkeypatch.setattr(pipeline, "sandboxes_apart", lambda use_cuda=False: False)
    in_turn, threads = graded_ring(monkeypatch, learner)
    assert threads == {threading.main_thread().name}
    # The suite's results come after every hidden case, as they did, with the same verdicts.
    assert [result.name for result in beside][-2:] == ["ring2-uneven", "ring2-even-split"]
    assert not {"ring2-uneven", "ring2-even-split"} & {result.name for result in beside[:-2]}
    assert [(r.name, r.outcome, r.message) for r in beside] == [(r.name, r.outcome, r.message) for r in in_turn]


def test_a_suite_beside_is_abandoned_within_a_poll_and_its_error_is_raised_where_it_is_taken():
    from grader.grading.request import UNHEARD
    from grader.grading.distributed_beside import DistributedBeside
    from grader.results import Report

    waiting = DistributedBeside(lambda scratch, on_result, stop: stop.wait(30), Report("x", "submit", "f.py")).start()
    started = time.monotonic()
    waiting.abandon()
    assert time.monotonic() - started < 2

    def broken(scratch, on_result, stop):
        raise RuntimeError("the suite's own bug")

    failing = DistributedBeside(broken, Report("x", "submit", "f.py")).start()
    with pytest.raises(RuntimeError, match="the suite's own bug"):
        failing.take(Report("x", "submit", "f.py"), UNHEARD)
