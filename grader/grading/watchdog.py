"""The run's last bound: past every deadline its waits have, the grading thread is told that the grader stalled.

Every wait in the grader has a deadline of its own (a case's wall-clock cap, the budget's backstop,
a launcher's exit, a reply from the zygote), so a run ends within its budget's backstop plus the
longest one case may be given. Should some wait still outlast that (a bug of the grader's own, never
the learner's code, which is killed at its own limits), the watchdog's thread stops the zygote, whose
sandboxes die with it, and raises Stalled in the grading thread (the main thread, through SIGALRM),
so that its cleanup runs and the run ends "not graded: the grader stalled". A command that is still
stuck GRACE seconds later is ended by the last resort its entry point installed (`last_resort`):
exit status 3, never a hang. Grades run in a thread other than the main one get the first step only.
"""

from __future__ import annotations

import signal
import threading
import time
from types import FrameType
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:  # imported where a run is graded: a command's entry point installs its last resort without them
    from grader.course.exercise import Exercise

GRACE = 20.0  # seconds a stalled run has to unwind once told, before the last resort ends the command
SIGNAL = signal.SIGALRM  # the grader sets no alarm of its own; a caller's handler is kept and called for its own
_last_resort: Callable[[str], None] | None = None


class Stalled(BaseException):
    """Raised in the grading thread once its run outlived every deadline it has: the grader's fault, not the file's.
    A BaseException, so that no handler of ordinary errors on the way up mistakes it for a case's failure."""


def last_resort(action: Callable[[str], None] | None) -> None:
    """What ends a command whose run is still stuck GRACE seconds after being told it stalled (the message is
    its argument): a command's entry point says it once; None (the default): nothing more than the first step."""
    global _last_resort
    _last_resort = action


def stall_after(exercise: Exercise, longest_limit: float | None = None) -> float:
    """Seconds after which a run of `exercise` has stalled: its budget's wall-clock backstop, then the most one
    case still running then may be given (its waiting limit WALL_CAP times over, and a worker's torch import)."""
    from grader.grading.budget import WALL_ALLOWANCE, WALL_FACTOR
    from grader.grading.worker_client import TORCH_IMPORT_LIMIT, WALL_CAP, WALL_EXTRA

    budget = exercise.time_budget * WALL_FACTOR + WALL_ALLOWANCE
    limit = max(longest_limit or 0.0, exercise.time_limit) * exercise.time_factor
    return budget + WALL_CAP * (limit * WALL_FACTOR + WALL_EXTRA) + TORCH_IMPORT_LIMIT


class Watchdog:
    """A deadline for the block it guards; `allow` moves it later (once the cases, and their limits, are known)."""

    def __init__(self, seconds: float, on_stall: Callable[[], None] = lambda: None) -> None:
        self.started = time.monotonic()
        self.seconds = seconds
        self.on_stall = on_stall  # frees what the stuck thread may wait on (the zygote and its sandboxes)
        self.fired = False
        self._done = threading.Event()
        self._moved = threading.Condition()
        self._main = threading.current_thread() is threading.main_thread()
        self._previous: object = None

    def allow(self, seconds: float) -> None:
        """The run may take `seconds` from its start, if that is later than the deadline now."""
        with self._moved:
            self.seconds = max(self.seconds, seconds)
            self._moved.notify_all()

    def __enter__(self) -> "Watchdog":
        if self._main:
            self._previous = signal.signal(SIGNAL, self._interrupt)
        threading.Thread(target=self._watch, name="grader-watchdog", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        with self._moved:
            self._moved.notify_all()
        if self._main:
            signal.signal(SIGNAL, self._previous if self._previous is not None else signal.SIG_DFL)

    def message(self) -> str:
        return (f"the grader stalled: the run outlived every deadline it has ({self.seconds:.0f} s of wall-clock "
                f"time: its budget's backstop and the longest a case may take); this is not about your code")

    def _interrupt(self, signum: int, frame: FrameType | None) -> None:
        if self.fired and not self._done.is_set():
            raise Stalled(self.message())
        if callable(self._previous):  # an alarm of the caller's own
            self._previous(signum, frame)

    def _free(self) -> None:
        try:
            self.on_stall()
        except Exception:  # noqa: BLE001  (freeing what it waits on is a help; the interruption follows anyway)
            pass

    def _watch(self) -> None:
        with self._moved:
            while not self._done.is_set() and time.monotonic() < self.started + self.seconds:
                self._moved.wait(max(self.started + self.seconds - time.monotonic(), 0.001))
        if self._done.is_set():
            return
        self.fired = True
        freeing = threading.Thread(target=self._free, name="grader-watchdog-free", daemon=True)
        freeing.start()
        freeing.join(GRACE / 2)  # a help, never a wait of its own without end
        if self._main:
            signal.pthread_kill(threading.main_thread().ident, SIGNAL)
        if not self._done.wait(GRACE) and _last_resort is not None:
            _last_resort(self.message())
