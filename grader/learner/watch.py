"""`grader watch`: the examples run again each time the learner's file is saved, until Ctrl-C."""

from __future__ import annotations

import queue
import threading
from pathlib import Path
from types import ModuleType
from typing import Callable

from grader.errors import GraderError, UsageError

DEBOUNCE_MS = 1000  # the longest a burst of writes is gathered before a run starts
QUIET_MS = 150  # a save is complete once the file has been left alone this long (an editor writes in steps)
STOP_POLL_S = 0.5  # how often the waiting main thread wakes; signals interrupt the wait anyway


def require() -> ModuleType:
    """watchfiles, or a one-line usage error saying how to install it."""
    try:
        import watchfiles
    except ImportError:
        from grader.learner.repro import python_command

        raise UsageError(f"grader watch needs the watchfiles package: {python_command()} -m pip install watchfiles "
                         f"(the Python the grader runs in)") from None
    return watchfiles


class Saves:
    """Saves of one file, seen by watchfiles on a thread of its own and handed to the main thread in order.

    The waiting happens in the main thread, on a queue, rather than inside watchfiles: there, a Ctrl-C or
    a SIGTERM reaches the grader's own handlers (grader/cli/__init__.py), which stop whatever run is under way and
    say which signal it was. Saves made during a run are kept and start the next run."""

    def __init__(self, file: Path) -> None:
        watchfiles = require()
        self.file = file
        self._stop = threading.Event()
        self._queue: queue.Queue[BaseException | None] = queue.Queue()
        # The folder, not the file: an editor that saves by writing a new file and renaming it over the old
        # one would leave a watch on the old file's inode blind to every later save.
        target = str(file)
        self._thread = threading.Thread(
            target=self._watch, daemon=True, name="grader-watch",
            args=(watchfiles, file.parent, lambda change, path: path == target))
        self._thread.start()

    def _watch(self, watchfiles: ModuleType, folder: Path, wanted: Callable[[object, str], bool]) -> None:
        try:
            for _ in watchfiles.watch(folder, watch_filter=wanted, debounce=DEBOUNCE_MS, step=QUIET_MS,
                                      stop_event=self._stop, recursive=False, rust_timeout=1000):
                self._queue.put(None)
        except BaseException as error:  # noqa: BLE001  (handed to the main thread, which reports it)
            self._queue.put(error)

    def wait(self) -> None:
        """Return once the file has been saved since the last call (several saves count as one)."""
        while True:
            try:
                items = [self._queue.get(timeout=STOP_POLL_S)]
                break
            except queue.Empty:
                if not self._thread.is_alive() and self._queue.empty():
                    raise GraderError(f"{self.file.parent} can no longer be watched") from None
        while not self._queue.empty():  # every save that arrived meanwhile is part of the same change
            items.append(self._queue.get_nowait())
        for error in items:
            if isinstance(error, OSError):
                raise GraderError(f"{self.file.parent} cannot be watched ({error.strerror or error})") from None
            if error is not None:
                raise error

    def close(self) -> None:
        self._stop.set()  # watchfiles looks at it between steps
        self._thread.join(timeout=5)


def watch(file: Path, shown: str, run: Callable[[], object], clear: Callable[[], None],
          say: Callable[[str], None]) -> None:
    """Call `run` now and after every save of `file` (`shown` to the learner), `clear`ing first; a signal ends it.

    A usage error in the first run (an option that does not fit the exercise) ends the watch, as it ends
    `grader run`; in a later one (the file removed for a moment) it is said in one line and the watch goes
    on. Anything else ends it."""
    saves = Saves(file)
    first = True
    try:
        while True:
            clear()
            try:
                run()
            except GraderError as error:
                if first:
                    raise
                say(f"error: {error}")
            first = False
            say(f"Watching {shown}: each save runs the examples again; Ctrl-C stops.")
            saves.wait()
    finally:
        saves.close()
