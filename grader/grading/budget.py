"""When to stop waiting on a submission: after a few timeouts of one function, or at the command's time budget.

A function with an endless loop would otherwise cost its full time limit on every one of its cases (a
hundred ring cases at ten seconds each is most of an hour). Once a function has timed out on GIVE_UP_AFTER
cases, its remaining cases are reported as timed out without running; once the whole command has used its
budget, every remaining case is. Either way the case counts as a failure, never as a pass, and its message
says why it did not run, so the report cannot be mistaken for one where the code was tried and failed.
"""

from __future__ import annotations

import time

from grader.course.cases import Case
from grader.errors import UsageError
from grader.results import CaseResult, Outcome

GIVE_UP_AFTER = 3          # timeouts of one function before its other cases are not run
DEFAULT_SECONDS = 300.0    # a whole `run` or `submit`; an exercise.yaml `time_budget` or --time-budget replaces it
NOT_RUN = "not_run"        # CaseResult.extra key: why the case was reported without running


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
        self.timed_out: dict[str, list[str]] = {}  # function -> the cases it timed out on, in order
        self.skipped: dict[str, int] = {"timeouts": 0, "budget": 0}

    def reached(self) -> bool:
        return self.seconds is not None and time.monotonic() - self.started >= self.seconds

    def _given_up(self, case: Case) -> bool:
        return len(self.timed_out.get(case.function, [])) >= self.give_up_after

    def refusal(self, case: Case) -> str:
        """Why `case` should not run now ("" when it should)."""
        if self._given_up(case):
            names = self.timed_out[case.function]
            shown = ", ".join(names[:self.give_up_after])
            return (f"not run: {case.function} already timed out on {len(names)} cases ({shown}); "
                    f"its other cases would most likely time out too")
        if self.reached():
            return f"not run: the time budget of {self.seconds:g} s for the whole command was used up"
        return ""

    def worth_preparing(self, case: Case) -> bool:
        """Whether to build the case's inputs ahead of time: not for a case that will not run."""
        return not self._given_up(case) and not self.reached()

    def not_run(self, case: Case, device: str, reason: str) -> CaseResult:
        """The verdict on a case that was not run: timed out, with the reason as its message."""
        why = "timeouts" if self._given_up(case) else "budget"
        self.skipped[why] += 1
        return CaseResult(case.name, case.suite, case.function, device, Outcome.TIMED_OUT, reason,
                          about=case.about, points=case.points, visibility=case.visibility, required=case.required,
                          extra={NOT_RUN: why})

    def count(self, result: CaseResult) -> CaseResult:
        """Note a case that ran; a timeout counts towards giving up on its function."""
        if result.outcome is Outcome.TIMED_OUT:
            self.timed_out.setdefault(result.function, []).append(result.name)
        return result

    def notes(self) -> list[str]:
        """What the report says about cases that did not run, if any did not."""
        notes = []
        if self.skipped["timeouts"]:
            given_up = [name for name, cases in self.timed_out.items() if len(cases) >= self.give_up_after]
            notes.append(f"{self.skipped['timeouts']} cases were not run: {', '.join(given_up)} had already timed "
                         f"out {self.give_up_after} times. They count as timed out; fix the endless loop or the "
                         f"slow step, then run again.")
        if self.skipped["budget"]:
            notes.append(f"The time budget of {self.seconds:g} s for the whole command was used up: "
                         f"{self.skipped['budget']} cases were not run and count as timed out.")
        return notes
