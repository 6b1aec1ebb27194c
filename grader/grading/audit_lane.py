"""Memory-audited hidden cases in a worker of their own, run beside the other hidden cases.

A memory-audited call is the longest of a submission (a quarter of a second for 07's), and its
worker may run nothing else meanwhile: what the kernel measures must be that call's alone. Run in
turn, every other hidden case waited for it with a core idle. Here the audited cases are called in a
second worker, from a thread of the grader's that only makes the calls (Judge.called); the grader's
own thread judges each (Judge.judged) and reports it at its turn, so the report's order, verdicts and
clocks are what they were.

Only where two sandboxes are kept from each other (grader/sandbox/machine.py, sandboxes_apart);
elsewhere the audited cases run in turn, as every other case does.
"""

from __future__ import annotations

import threading

from grader.course.cases import Case
from grader.grading.case import Called, Judge
from grader.grading.worker_client import RawResult, WorkerClient


class AuditLane:
    """The calls on some cases, made in order on a thread of their own, each awaited by the grader's thread."""

    def __init__(self, judge: Judge, worker: WorkerClient, runs: list[tuple[Case, str]], import_limit: float) -> None:
        self.judge = judge
        self.worker = worker  # this lane's alone: no other thread uses it until the lane has stopped
        self.runs = runs
        self.import_limit = import_limit
        self._made: dict[tuple[str, str], Called | RawResult | BaseException] = {}
        self._finished = False
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._make_all, name="grader-audit-lane", daemon=True)

    def start(self) -> "AuditLane":
        self._thread.start()
        return self

    def made(self, case: Case, device: str, wait: bool) -> Called | RawResult | None:
        """The call on `case` (a Called), or how its worker failed to start or import the file (a RawResult);
        None while it is still to come and not `wait`, or where the lane stopped first. Raises what making it
        raised (a course's bug, as CourseBroken), in the grader's thread."""
        key = (case.name, device)
        with self._changed:
            while wait and key not in self._made and not self._finished:
                self._changed.wait()
            found = self._made.get(key)
        if isinstance(found, BaseException):
            raise found
        return found

    def stop(self) -> None:
        """Abandon what is still running, wait for the thread, and stop the lane's worker."""
        self.worker.abandon()
        self._thread.join()
        self.worker.stop()

    def _make_all(self) -> None:
        try:
            for case, device in self.runs:
                if self.worker.abandoned.is_set():
                    return
                try:
                    made: Called | RawResult | BaseException = self._make(case, device)
                except BaseException as error:  # noqa: BLE001  (raised again in the grader's thread, at its turn)
                    made = error
                with self._changed:
                    self._made[(case.name, device)] = made
                    self._changed.notify_all()
        finally:
            with self._changed:
                self._finished = True
                self._changed.notify_all()

    def _make(self, case: Case, device: str) -> Called | RawResult:
        """One case's call; a worker stopped by the case before (it timed out, crashed) is started again first."""
        if not self.worker.alive:
            self.worker.start()
        loaded = self.worker.wait_ready(self.import_limit)
        if loaded.kind != "ready":
            return loaded
        return self.judge.called(case, device, self.worker)
