"""Running one file's cases in its workers: visible, then hidden ones, each in report order as soon as known."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from grader.course.cases import Case
from grader.course.exercise import Exercise
from grader.grading.audit_lane import AuditLane
from grader.grading.background import Background
from grader.grading.budget import Budget
from grader.grading.case import MEMORY_AUDIT, Judge, Sending
from grader.grading.request import Listener, Run
from grader.grading.worker_client import RawResult, WorkerClient
from grader.inert import inert
from grader.sandbox.machine import sandboxes_apart
from grader.results import CaseResult, Outcome, Report


@dataclass
class Schedule:
    """Where and in what order one file's cases run: the devices, the runs phase by phase (phases() below), the
    first phase's worker (the later phases and the audit lane run in its twins), the order results are reported
    in, and what starts as the hidden cases begin, once the learner's file imported (the suite beside them)."""

    devices: list[str]
    phases: list[list[tuple[Case, str]]]
    worker: WorkerClient
    expected: list[tuple[str, str]]  # (case, device) in report order
    on_hidden: Callable[[], None] | None = None


def run_phases(run: Run, listener: Listener, judge: Judge, schedule: Schedule, report: Report,
               budget: Budget) -> None:
    """Each phase in its own worker; every result handed to `listener` in report order as soon as it is. A hidden
    case is handed to the worker while the one before it is judged (Judge.send), so that the worker computes
    while the grader judges; each keeps its own clock and verdict, and one sent to a worker that was then
    stopped runs again on the next. The hidden memory-audited cases run beside the others, in a worker of
    their own, where sandboxes are kept apart (grader/grading/audit_lane.py). The schedule's `on_hidden` is called
    once, as the hidden cases begin, where the learner's file imported: what else may run beside them then starts."""
    exercise, worker, phases, on_hidden = run.exercise, schedule.worker, schedule.phases, schedule.on_hidden
    expected = schedule.expected
    done: dict[tuple[str, str], CaseResult] = {}
    imported = False
    ahead: Sending | None = None  # the next hidden case, handed to the worker while this one is judged
    lane: AuditLane | None = None
    upcoming: _NextWorker | None = None  # the next phase's worker, readied while this phase runs
    mine: list[WorkerClient] = []  # workers started here for a later phase, stopped here
    retiring: list[Background] = []  # the workers of phases that ended, stopped beside the next
    try:
        for phase, runs in enumerate(phases):
            # Hidden cases never share a worker with a visible one: nothing they saw can be printed later.
            if upcoming is not None:
                previous, worker, upcoming = worker, upcoming.taken(), None
                mine.append(worker)
                retiring.append(Background(previous.stop, "grader-stop"))
            elif phase and worker.alive:
                worker.stop()
            if on_hidden is not None and runs and runs[0][0].hidden and not report.load_error:
                on_hidden()
                on_hidden = None
            if not report.load_error and any(_beside(case) for case, _ in runs) and sandboxes_apart(worker.use_cuda):
                lane = _lane(exercise, worker, judge, [pair for pair in runs if _beside(pair[0])], budget, done)
                runs = [pair for pair in runs if not _beside(pair[0])]
            for index, (case, device) in enumerate(runs):
                refusal = "" if report.load_error else budget.refusal(case)
                sending, ahead = ahead, None
                if sending is not None and (sending.case is not case or refusal or not worker.sent_to(sending.sent)):
                    judge.receive(sending, worker)  # not to be judged now: its reply is read and set aside
                    sending = None
                # A file that cannot be imported is imported once: every case then gets the same error.
                loaded = None if report.load_error or refusal else _readied(worker, exercise)
                if loaded is not None and not _taken(loaded, report, judge):
                    return
                if loaded is not None and phase == 0 and not case.hidden and not imported:
                    # What the file printed at import, from the examples' worker only: a hidden phase shows nothing.
                    imported = True
                    report.import_stdout, report.import_stderr = inert(loaded.stdout), inert(loaded.stderr)
                    if loaded.kind == "ready" and phase + 1 < len(phases) and sandboxes_apart(worker.use_cuda):
                        upcoming = _NextWorker(worker, exercise)
                if report.load_error:
                    result = _not_imported(case, device, report.load_error)
                elif refusal:
                    result = budget.not_run(case, device, refusal)
                else:
                    if sending is None and _overlaps(case):
                        sending = judge.send(case, device, worker)
                    following = runs[index + 1] if index + 1 < len(runs) else None
                    if sending is not None and following is not None and _overlaps(following[0]) \
                            and worker.sent_to(sending.sent) and not budget.refusal(following[0]):
                        ahead = judge.send(*following, worker)
                        if not worker.sent_to(ahead.sent):  # it could not be sent: run in its own turn, not judged now
                            ahead.discard()
                            ahead = None
                    found = judge.receive(sending, worker) if sending is not None else None
                    if found is None:  # not sent ahead, or its worker was stopped since (the next could not be sent)
                        if not _taken(_readied(worker, exercise), report, judge):
                            return
                        found = None if report.load_error else judge.run(case, device, worker)
                    result = budget.count(found) if found is not None else \
                        _not_imported(case, device, report.load_error)
                done[(case.name, device)] = result
                if lane is not None and not _gathered(lane, report, judge, budget, done, wait=False):
                    return
                _flush(report, expected, done, listener)
            if lane is not None:
                if not _gathered(lane, report, judge, budget, done, wait=True):
                    return
                _flush(report, expected, done, listener)
    finally:
        if ahead is not None:
            ahead.discard()
        # Each waits a moment for its worker to leave: all at once.
        stops = [call.finish for call in retiring] + [started.stop for started in mine]
        stops += [lane.stop] if lane is not None else []
        stops += [upcoming.stop] if upcoming is not None else []
        _all_at_once(stops)


def _all_at_once(calls: list[Callable[[], None]]) -> None:
    """Make every call, each but the last on a thread of its own; once all have returned, raise what one raised."""
    beside = [Background(call, "grader-stop") for call in calls[:-1]]
    try:
        if calls:
            calls[-1]()
    finally:
        for call in beside:
            call.join()
        for call in beside:
            call.finish()  # the first error, once every call has returned


class _NextWorker:
    """The next phase's worker, started and importing the learner's file on a thread of its own while this phase
    runs (where sandboxes are kept apart): the switch between phases then waits for neither."""

    def __init__(self, worker: WorkerClient, exercise: Exercise) -> None:
        self.worker = worker.twin()
        self._call = Background(lambda: _readied(self.worker, exercise), "grader-next-worker")

    def taken(self) -> WorkerClient:
        """The worker, once readied (or stopped, to be started again in turn, which meets what readying it raised)."""
        self._call.join()
        if self._call.error is not None:
            self.worker.stop()
        return self.worker

    def stop(self) -> None:
        self.worker.abandon()
        self._call.join()
        self.worker.stop()


def _beside(case: Case) -> bool:
    """Whether a case runs in the audit lane: a hidden one (shown nowhere, as the other hidden cases) that measures
    memory (the one kind that may share its worker with no other call)."""
    return case.hidden and MEMORY_AUDIT in case.audit


def _lane(exercise: Exercise, worker: WorkerClient, judge: Judge, runs: list[tuple[Case, str]], budget: Budget,
          done: dict[tuple[str, str], CaseResult]) -> AuditLane:
    """The lane for `runs`, started; those the budget refuses now are reported as not run, as in their own turn."""
    kept = []
    for case, device in runs:
        refusal = budget.refusal(case)
        if refusal:
            done[(case.name, device)] = budget.not_run(case, device, refusal)
        else:
            kept.append((case, device))
    return AuditLane(judge, worker.twin(use_cuda=False), kept, exercise.time_limit).start()


def _gathered(lane: AuditLane, report: Report, judge: Judge, budget: Budget, done: dict[tuple[str, str], CaseResult],
              wait: bool) -> bool:
    """The lane's calls that have ended (every one, if `wait`), judged into `done`; False where its worker could not
    run learner code on this machine (the run is then not graded)."""
    for case, device in lane.runs:
        if (case.name, device) in done:
            continue
        if report.load_error:  # the examples' worker could not import the file: every case says so
            done[(case.name, device)] = _not_imported(case, device, report.load_error)
            continue
        made = lane.made(case, device, wait)
        if made is None:
            if wait:  # the lane stopped before making it (it was abandoned): said so, never a pass
                done[(case.name, device)] = CaseResult(
                    case.name, case.suite, case.function, device, Outcome.CRASHED,
                    "not run: the grader stopped this case's worker before it answered", points=case.points,
                    visibility=case.visibility, required=case.required)
            continue
        if isinstance(made, RawResult):  # its worker did not start, or the file did not import there
            if made.kind == "sandbox-error":
                report.not_graded = f"{made.detail}: this is about this machine, not your code"
                return False
            done[(case.name, device)] = _not_imported(case, device, judge.load_error(made))
            continue
        done[(case.name, device)] = budget.count(judge.judged(case, device, made))
    return True


def _flush(report: Report, expected: list[tuple[str, str]], done: dict[tuple[str, str], CaseResult],
           listener: Listener) -> None:
    """Results handed on in the order the case files give, whatever order they ran in."""
    while len(report.results) < len(expected) and expected[len(report.results)] in done:
        report.results.append(done[expected[len(report.results)]])
        listener.finished(report.results[-1])


def _readied(worker: WorkerClient, exercise: Exercise) -> RawResult:
    """The worker started if it is not running, and how importing the learner's file went in it."""
    if not worker.alive:
        worker.start()
    return worker.wait_ready(exercise.time_limit)


def _taken(loaded: RawResult, report: Report, judge: Judge) -> bool:
    """What the import said, taken into the report; False where this machine could not run the learner's code as
    promised (nothing found here would mean anything: the run is not graded)."""
    if loaded.kind == "sandbox-error":
        report.not_graded = f"{loaded.detail}: this is about this machine, not your code"
        return False
    if loaded.kind != "ready":
        report.load_error = judge.load_error(loaded)
    return True


def _not_imported(case: Case, device: str, load_error: str) -> CaseResult:
    """A case's result when the file could not be imported: every case gets the same error."""
    return CaseResult(case.name, case.suite, case.function, device, Outcome.ERROR, load_error.splitlines()[0],
                      points=case.points, visibility=case.visibility, required=case.required, load_failed=True)


def _overlaps(case: Case) -> bool:
    """Whether a case may be handed to the worker while the one before is judged: a hidden one, whose output nobody
    sees (what a visible case printed is read at its reply, and must be its own), measuring no memory."""
    return case.hidden and MEMORY_AUDIT not in case.audit


def phases(cases: list[Case], devices: list[str]) -> list[list[tuple[Case, str]]]:
    """The runs, visible cases first and hidden ones after in a worker of their own; in each, the memory-audited
    cases first (on the CPU only), while the worker holds nothing but torch and the learner's module."""
    phases = []
    for hidden in (False, True):
        chosen = [case for case in cases if case.hidden == hidden]
        audited = [case for case in chosen if MEMORY_AUDIT in case.audit]
        plain = [case for case in chosen if MEMORY_AUDIT not in case.audit]
        # The CPU comes first in `devices` when it is there at all; the audited cases run on it either way.
        runs = [(case, "cpu") for case in audited] + [(case, device) for device in devices for case in plain]
        if runs:
            phases.append(runs)
    return phases
