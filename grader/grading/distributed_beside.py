"""An exercise's distributed suite (07's ring), run beside the hidden cases where sandboxes are kept apart.

Its ranks spend most of a case waiting: on their own start, on each other, on the store they meet
at. Run after the hidden cases, that wait was added to every submission. Here the suite starts on a
thread of its own as the hidden cases begin (the learner's file imported by then), gathers what it
finds into a report of its own, and hands that over after the last hidden case, in the order it came:
the report is the one the suite would have written in turn. Where sandboxes share the machine's
network and /proc (grader/sandbox/machine.py, sandboxes_apart), the suite runs in turn, as before.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Callable

from grader.course.blame import course_frame, where
from grader.errors import CourseBroken
from grader.grading.background import Background
from grader.grading.budget import Budget
from grader.grading.request import UNHEARD, Listener, Run
from grader.results import Report

if TYPE_CHECKING:
    from grader.grading.distributed import DistributedRun

RunSuite = Callable[[Report, Listener, threading.Event], None]


class DistributedBeside:
    """One run of a suite on a thread of its own, its results kept apart until taken."""

    def __init__(self, run: RunSuite, scratch: Report) -> None:
        self.scratch = scratch  # the suite's own results, notes and not-graded reason, until taken
        self.stop = threading.Event()
        self._run = run

    def start(self) -> "DistributedBeside":
        self._call = Background(lambda: self._run(self.scratch, UNHEARD, self.stop), "grader-distributed-suite")
        return self

    def take(self, report: Report, listener: Listener) -> None:
        """Wait for the suite to end; its results into `report`, each handed to `listener`, and its notes after
        the report's own. Raises what the suite raised, here, in the grader's thread."""
        self._call.finish()
        for result in self.scratch.results:
            report.results.append(result)
            listener.finished(result)
        report.notes.extend(self.scratch.notes)
        report.not_graded = report.not_graded or self.scratch.not_graded

    def abandon(self) -> None:
        """The run ends without the suite (Ctrl-C, a file that did not import): its case stops within a poll."""
        self.stop.set()
        self._call.join()


def run_suite(run: Run, listener: Listener, suite_run: DistributedRun, report: Report, budget: Budget,
              stop: threading.Event | None = None) -> None:
    """The distributed suite into `report`; the course's own faults in it make the run not graded, with file and line."""
    from grader.grading.distributed import run_distributed_suite

    try:
        run_distributed_suite(run, listener, suite_run, report, budget, stop)
    except CourseBroken as error:  # the suite's rank program raised
        report.not_graded = str(error)
    except Exception as error:  # the suite's own code (its cases, its inputs) raised: the course's, if it is there
        if course_frame(error, run.exercise.root) is None:
            raise
        report.not_graded = str(CourseBroken(where(error, run.exercise.root)))
