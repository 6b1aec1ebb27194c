"""When to stop waiting on a submission: once a function timed out (or ran out of memory), or at the command's time
budget.

A function with an endless loop would otherwise cost its full time limit on every one of its cases (a
hundred ring cases at ten seconds each is most of an hour), and one that runs out of memory costs a worker
and its limit each time. Once a function has timed out, or run out of memory, on GIVE_UP_AFTER cases, it is
stopped for the rest of the run: its remaining cases are reported as such without running, and a case of
another function whose call reaches it is stopped there by the worker and reported as depending on it (so is a
distributed case whose program calls it). Once the whole command has used its budget, every remaining case is
reported so. The budget is CPU seconds, counted by the kernel for the learner's processes, so that a
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

GIVE_UP_AFTER = 1          # timeouts (or out-of-memory failures) of one function before it is not called again
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
        # function -> how it failed, on which case first, whether that case is hidden: not called again in this run
        self.stopped: dict[str, tuple[Outcome, str, bool]] = {}
        self.skipped: dict[str, int] = {"timeouts": 0, "memory": 0, "depends": 0, "budget": 0}
        self.kept_from: dict[str, list[int]] = {}  # stopped function -> [its own cases, its callers' cases] not run
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

    def _stopped_call(self, calls: tuple[str, ...]) -> str:
        return next((name for name in calls if name in self.stopped), "")

    def refusal(self, case: Case, calls: tuple[str, ...] = ()) -> str:
        """Why `case` should not run now ("" when it should); `calls`: the learner's functions it is known to call (a
        distributed case's program: the course's own code)."""
        given_up = self._given_up(case)
        if given_up:
            names = (self.timed_out if given_up == "timeouts" else self.out_of_memory)[case.function]
            return f"not run: {case.function} already {self._failed(case.function, len(names))}; it is not called " \
                   f"again in this run"
        stopped = self._stopped_call(calls)
        if stopped:
            return f"not run: it calls {stopped}, which {self._failed(stopped)}; fix that first"
        if self.reached():
            return f"not run: the time budget of {self.seconds:g} s of CPU for the whole command was used up"
        return ""

    def _failed(self, function: str, count: int = 1) -> str:
        """'timed out on merge-a', 'ran out of memory on 2 cases (a hidden case and b)'."""
        outcome, first, hidden = self.stopped.get(function, (Outcome.TIMED_OUT, "", True))
        what = "timed out" if outcome is Outcome.TIMED_OUT else "ran out of memory"
        on = "a hidden case" if hidden or not first else first
        return f"{what} on {on}" if count <= 1 else f"{what} on {count} cases, the first {on}"

    def worth_preparing(self, case: Case) -> bool:
        """Whether to build the case's inputs ahead of time: not for a case that will not run."""
        return not self._given_up(case) and not self.reached()

    def not_run(self, case: Case, device: str, reason: str, calls: tuple[str, ...] = ()) -> CaseResult:
        """The verdict on a case that was not run: timed out (or out of memory), with the reason as its message."""
        stopped = "" if self._given_up(case) else self._stopped_call(calls)
        why = self._given_up(case) or ("depends" if stopped else "budget")
        with self._lock:
            self.skipped[why] += 1
            self._kept(stopped or case.function, own=not stopped, counted=why != "budget")
        outcome = Outcome.OUT_OF_MEMORY if why == "memory" else self.stopped[stopped][0] if stopped \
            else Outcome.TIMED_OUT
        how = "timed out" if outcome is Outcome.TIMED_OUT else "ran out of memory"
        cause = {"timeouts": "not run: it timed out before", "memory": "not run: it ran out of memory before",
                 "budget": "not run: the time budget was used up"}.get(why, f"not run: it calls {stopped}, which {how} "
                                                                             f"before")
        return CaseResult(case.name, case.suite, case.function, device, outcome, reason,
                          about=case.about, points=case.points, visibility=case.visibility, required=case.required,
                          not_run=why, cause=cause, reached=[stopped] if stopped else [])

    def _kept(self, function: str, own: bool, counted: bool) -> None:
        if counted:
            self.kept_from.setdefault(function, [0, 0])[0 if own else 1] += 1

    def count(self, result: CaseResult) -> CaseResult:
        """Note a case that ran: its CPU time toward the budget, a timeout or a memory failure toward giving up."""
        with self._lock:
            self.used += result.cpu_seconds
            if result.not_run:  # stopped in the worker where it called a function stopped before
                self.skipped["depends"] += result.not_run == "depends"
                if result.not_run == "depends" and result.reached:
                    self._kept(result.reached[-1], own=False, counted=True)
                return result
            failures = {Outcome.TIMED_OUT: self.timed_out,
                        Outcome.OUT_OF_MEMORY: self.out_of_memory}.get(result.outcome)
            if failures is not None:
                failures.setdefault(result.function, []).append(result.name)
                if len(failures[result.function]) >= self.give_up_after:
                    self.stopped.setdefault(result.function, (result.outcome, result.name, result.hidden))
        return result

    def notes(self) -> list[str]:
        """What the report says about cases that did not run, if any did not."""
        notes = []
        for function, (own, callers) in self.kept_from.items():
            outcome = self.stopped.get(function, (Outcome.TIMED_OUT,))[0]
            kept = [f"{own} more of its cases"] * bool(own) + \
                [f"{callers} case{'s that call' if callers != 1 else ' that calls'} it"] * bool(callers)
            what, how = ("timed out", "fix the endless loop or the slow step") if outcome is Outcome.TIMED_OUT else \
                ("ran out of memory", "look for what grows with the input")
            notes.append(f"{function} {what} and was not called again: {' and '.join(kept)} did not run, and count as "
                         f"{outcome.value}. {how[0].upper()}{how[1:]} first, then run again.")
        if self.skipped["budget"]:
            notes.append(f"The time budget of {self.seconds:g} s of CPU for the whole command was used up: "
                         f"{self.skipped['budget']} cases were not run and count as timed out.")
        return notes
