"""Running one file's cases in its workers: visible, then hidden ones, each in report order as soon as known."""

from __future__ import annotations

from typing import Callable

from grader.course.cases import Case
from grader.course.exercise import Exercise
from grader.grading.budget import Budget
from grader.grading.case import MEMORY_AUDIT, Judge, Sending
from grader.grading.worker_client import WorkerClient
from grader.inert import inert
from grader.results import CaseResult, Outcome, Report

OnResult = Callable[[CaseResult], None]


def run_phases(exercise: Exercise, worker: WorkerClient, on_result: OnResult, report: Report, judge: Judge,
                phases: list[list[tuple[Case, str]]], expected: list[tuple[str, str]], budget: Budget) -> None:
    """Each phase in its own worker; every result handed to `on_result` in report order as soon as it is. A hidden
    case is handed to the worker while the one before it is judged (Judge.send), so that the worker computes
    while the grader judges; each keeps its own clock and verdict, and one sent to a worker that was then
    stopped runs again on the next."""
    done: dict[tuple[str, str], CaseResult] = {}
    imported = False
    ahead: Sending | None = None  # the next hidden case, handed to the worker while this one is judged
    try:
        for phase, runs in enumerate(phases):
            if phase and worker.alive:
                # Hidden cases never share a worker with a visible one: nothing they saw can be printed later.
                worker.stop()
            for index, (case, device) in enumerate(runs):
                refusal = "" if report.load_error else budget.refusal(case)
                sending, ahead = ahead, None
                if sending is not None and (sending.case is not case or refusal or not worker.sent_to(sending.sent)):
                    judge.receive(sending, worker)  # not to be judged now: its reply is read and set aside
                    sending = None
                if not report.load_error and not refusal and not worker.alive:
                    worker.start()
                # A file that cannot be imported is imported once: every case then gets the same error.
                loaded = None if report.load_error or refusal else worker.wait_ready(exercise.time_limit)
                if loaded is not None and loaded.kind == "sandbox-error":
                    # This machine could not run the learner's code as promised: nothing found here would mean anything.
                    report.not_graded = f"{loaded.detail}: this is about this machine, not your code"
                    return
                if loaded is not None and loaded.kind != "ready":
                    report.load_error = judge.load_error(loaded)
                if loaded is not None and phase == 0 and not case.hidden and not imported:
                    # What the file printed at import, from the examples' worker only: a hidden phase shows nothing.
                    imported = True
                    report.import_stdout, report.import_stderr = inert(loaded.stdout), inert(loaded.stderr)
                if report.load_error:
                    result = CaseResult(case.name, case.suite, case.function, device, Outcome.ERROR,
                                        report.load_error.splitlines()[0], points=case.points,
                                        visibility=case.visibility, required=case.required, load_failed=True)
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
                    if found is None:  # not sent ahead, or sent to a worker that is gone: run in turn
                        if not worker.alive:
                            worker.start()
                            worker.wait_ready(exercise.time_limit)
                        found = judge.run(case, device, worker)
                    result = budget.count(found)
                done[(case.name, device)] = result
                # Shown in the order the case files give, whatever order they ran in.
                while len(report.results) < len(expected) and expected[len(report.results)] in done:
                    report.results.append(done[expected[len(report.results)]])
                    on_result(report.results[-1])
    finally:
        if ahead is not None:
            ahead.discard()


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
