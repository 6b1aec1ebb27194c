"""A live progress bar while cases run on a terminal: cases done of planned, the suite running, time left."""

from __future__ import annotations

from collections import Counter
from types import TracebackType

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from grader.results import CaseResult


class TimeLeft(ProgressColumn):
    """'0:30 left' once the pace is known; nothing while it is not (before the plan, or the first cases)."""

    def render(self, task: Task) -> Text:
        left = task.time_remaining
        if task.total is None or left is None:
            return Text("")
        minutes, seconds = divmod(int(left + 0.5), 60)
        return Text(f"· {minutes // 60}:{minutes % 60:02d}:{seconds:02d} left", style="progress.remaining")


class LiveProgress:
    """A transient bar, on a terminal only: it is gone when the run ends, and never reaches a pipe or a file.

    Lines printed on the same console while it runs appear above it, so failures still show as they come.
    """

    def __init__(self, console: Console) -> None:
        self.console = console
        self.planned: dict[str, int] = {}
        self.done: Counter[str] = Counter()
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    @staticmethod
    def wanted(console: Console) -> bool:
        """Only where a person watches: a terminal that can redraw a line (not piped, not TERM=dumb)."""
        return console.is_terminal and not console.is_dumb_terminal

    def __enter__(self) -> LiveProgress:
        if self.wanted(self.console):
            # "hidden 40/152 ━━━━╸━━━ 47/159 cases 0:00:12 · 0:00:30 left"
            self._bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(bar_width=None),
                                 MofNCompleteColumn(), TextColumn("cases"), TimeElapsedColumn(), TimeLeft(),
                                 console=self.console, transient=True)
            # Before the plan is known (the course loads, torch starts), a pulsing bar says it is alive.
            self._task = self._bar.add_task("starting", total=None)
            self._bar.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.stop()  # on an error or Ctrl-C too: the cursor and the screen are given back
            self._bar = None

    def start(self, planned: dict[str, int]) -> None:
        """How many results each suite will give, in the order the suites run."""
        self.planned = dict(planned)
        self._update(total=sum(self.planned.values()))

    def advance(self, result: CaseResult) -> None:
        """One more result of `result.suite`."""
        self.done[result.suite] += 1
        self._update(advance=1)

    def describe(self) -> str:
        """The suite running now and how far it is: the first one in run order that is not finished."""
        for suite, total in self.planned.items():
            if self.done[suite] < total:
                return f"{suite} {self.done[suite]}/{total}"
        return "finishing" if self.planned else "starting"

    def _update(self, **changes: float) -> None:
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, description=escape(self.describe()), **changes)
