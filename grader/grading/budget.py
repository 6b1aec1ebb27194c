"""When to stop waiting on a submission: after a few timeouts (or memory failures) of one function, or at the
command's time budget.

A function with an endless loop would otherwise cost its full time limit on every one of its cases (a
hundred ring cases at ten seconds each is most of an hour), and one that runs out of memory costs a worker
and its limit each time. Once a function has timed out, or run out of memory, on GIVE_UP_AFTER cases, its
remaining cases are reported as such without running; once the whole command has used its budget, every
remaining case is. The budget is CPU seconds, counted by the kernel for the learner's processes, so that a
busy machine does not run fewer cases than a quiet one (the same file, the same score); wall-clock time is
only a backstop, at WALL_FACTOR times the budget plus WALL_ALLOWANCE. Either way the case counts as a failure, never as a
pass, and its message says why it did not run.
"""

from __future__ import annotations

import threading
import time

from grader.course.cases import Case
from grader.errors import UsageError
from grader.results import CaseResult, Outcome

GIVE_UP_AFTER = 3          # timeouts (or out-of-memory failures) of one function before its other cases are not run
WALL_FACTOR = 3.0          # the wall-clock backstop, in times the budget ...
WALL_ALLOWANCE = 60.0      # ... plus this, for starting workers and the grader's own work
DEFAULT_SECONDS = 300.0    # a whole `run` or `submit`; an exercise.yaml `time_budget` or --time-budget replaces it


def checked_seconds(seconds: float | None) -> float | None:
    """A --time-budget as given (None: the exercise's own); UsageError unless it is a positive number of seconds."""
    if seconds is not None and seconds <= 0:
        raise UsageError(f"--time-budget must be a positive number of seconds, not {seconds:g}")
    return seconds


class Budget:
    """Counts each function's timeouts and the command's time; says which cases are no longer worth running."""

    def __init__(self, seconds: float | None = DEFAULT_SECONDS, give_up_after: int = GIVE_UP_AFTER) -> None:
        self.seconds = seconds
        self.give_up_after = give_up_after
        self.started = time.monotonic()
        self.used = 0.0  # CPU seconds the learner's processes used so far
        self.timed_out: dict[str, list[str]] = {}  # function -> the cases it timed out on, in order
        self.out_of_memory: dict[str, list[str]] = {}  # function -> the cases it ran out of memory on
        self.skipped: dict[str, int] = {"timeouts": 0, "memory": 0, "budget": 0}
        self._lock = threading.Lock()  # the distributed suite may count its cases from a thread of its own

    def reached(self) -> bool:
        if self.seconds is None:
            return False
        return self.used >= self.seconds or time.monotonic() - self.started >= self.seconds * WALL_FACTOR + WALL_ALLOWANCE

    def _given_up(self, case: Case) -> str:
        """'timeouts' or 'memory' once the case's function failed so too often; '' while it is worth running."""
        if len(self.timed_out.get(case.function, [])) >= self.give_up_after:
            return "timeouts"
        if len(self.out_of_memory.get(case.function, [])) >= self.give_up_after:
            return "memory"
        return ""

    def refusal(self, case: Case) -> str:
        """Why `case` should not run now ("" when it should)."""
        given_up = self._given_up(case)
        if given_up:
            names = (self.timed_out if given_up == "timeouts" else self.out_of_memory)[case.function]
            shown = ", ".join(names[:self.give_up_after])
            what = "timed out" if given_up == "timeouts" else "ran out of memory"
            return (f"not run: {case.function} already {what} on {len(names)} cases ({shown}); "
                    f"its other cases would most likely fail the same way")
        if self.reached():
            return f"not run: the time budget of {self.seconds:g} s of CPU for the whole command was used up"
        return ""

    def worth_preparing(self, case: Case) -> bool:
        """Whether to build the case's inputs ahead of time: not for a case that will not run."""
        return not self._given_up(case) and not self.reached()

    def not_run(self, case: Case, device: str, reason: str) -> CaseResult:
        """The verdict on a case that was not run: timed out, with the reason as its message."""
        why = self._given_up(case) or "budget"
        self.skipped[why] += 1
        outcome = Outcome.OUT_OF_MEMORY if why == "memory" else Outcome.TIMED_OUT
        return CaseResult(case.name, case.suite, case.function, device, outcome, reason,
                          about=case.about, points=case.points, visibility=case.visibility, required=case.required,
                          not_run=why)

    def count(self, result: CaseResult) -> CaseResult:
        """Note a case that ran: its CPU time toward the budget, a timeout or a memory failure toward giving up."""
        with self._lock:
            self.used += result.cpu_seconds
            if result.outcome is Outcome.TIMED_OUT:
                self.timed_out.setdefault(result.function, []).append(result.name)
            elif result.outcome is Outcome.OUT_OF_MEMORY:
                self.out_of_memory.setdefault(result.function, []).append(result.name)
        return result

    def notes(self) -> list[str]:
        """What the report says about cases that did not run, if any did not."""
        notes = []
        if self.skipped["timeouts"]:
            given_up = [name for name, cases in self.timed_out.items() if len(cases) >= self.give_up_after]
            notes.append(f"{self.skipped['timeouts']} cases were not run: {', '.join(given_up)} had already timed "
                         f"out {self.give_up_after} times. They count as timed out; fix the endless loop or the "
                         f"slow step, then run again.")
        if self.skipped["memory"]:
            given_up = [name for name, cases in self.out_of_memory.items() if len(cases) >= self.give_up_after]
            notes.append(f"{self.skipped['memory']} cases were not run: {', '.join(given_up)} had already run out of "
                         f"memory {self.give_up_after} times. They count as out of memory; look for what grows "
                         f"with the input, then run again.")
        if self.skipped["budget"]:
            notes.append(f"The time budget of {self.seconds:g} s of CPU for the whole command was used up: "
                         f"{self.skipped['budget']} cases were not run and count as timed out.")
        return notes
