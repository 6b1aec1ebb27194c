"""A live progress bar while cases run on a terminal: cases done of planned, the suite running, time left."""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from types import TracebackType
from typing import Callable

from rich.console import Console, RenderableType
from rich.constrain import Constrain
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


class Pace:
    """Time left, from what each case has cost so far in its suite (the time between one result and the next).

    Unknown until every suite still to run has a case measured: a ring's case costs a hundred of an example's,
    and a guess from the examples would be off by as much. The case running now counts as it goes: time left
    falls while it runs, and rises, slowly, once it runs longer than its suite's cases did."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.costs: dict[str, list[float]] = defaultdict(list)
        self.last: float | None = None  # when the last result came; None before the first one
        self.planned: dict[str, int] = {}
        self.done: Counter[str] = Counter()

    def start(self, planned: dict[str, int]) -> None:
        self.planned = dict(planned)

    def advance(self, suite: str) -> None:
        now = self.clock()
        # The first result's time is the worker's start and the file's import as much as its own: not a case's cost.
        if self.last is not None:
            self.costs[suite].append(now - self.last)
        self.last = now
        self.done[suite] += 1

    def left(self) -> float | None:
        """Seconds left, or None while they cannot be told."""
        remaining = {suite: total - self.done[suite] for suite, total in self.planned.items()
                     if total > self.done[suite]}
        if not remaining or self.last is None or any(not self.costs[suite] for suite in remaining):
            return None
        running = next(iter(remaining))  # suites run in plan order: the first unfinished one is running now
        so_far = max(self.clock() - self.last, 0.0)
        total = 0.0
        for suite, count in remaining.items():
            costs = self.costs[suite]
            mean = sum(costs) / len(costs)
            if suite == running:
                if so_far >= mean and len(remaining) == count == 1:
                    return None  # the last case, running longer than any before it: nothing honest to say
                mean = max(mean, (sum(costs) + so_far) / (len(costs) + 1))
                total += count * mean - min(so_far, mean)
            else:
                total += count * mean
        return max(total, 0.0)


class TimeLeft(ProgressColumn):
    """'· 0:00:30 left' once the pace is known (Pace); nothing while it is not. Asked at every redraw, so it moves
    while a long case runs instead of standing still between results."""

    def __init__(self, pace: Pace) -> None:
        super().__init__()
        self.pace = pace

    def render(self, task: Task) -> Text:
        left = self.pace.left()
        if task.total is None or left is None:
            return Text("")
        minutes, seconds = divmod(int(left + 0.5), 60)
        return Text(f"· {minutes // 60}:{minutes % 60:02d}:{seconds:02d} left", style="progress.remaining")


# Columns the bar leaves free at the end of its line. A Ctrl-C is echoed there as "^C": on a full line it would
# wrap, and the redraw would then erase the line below the bar and leave the bar itself on the screen.
ECHO_ROOM = 3


class _ShortOfTheEdge(Progress):
    """A Progress whose line stops ECHO_ROOM columns short of the terminal's edge."""

    def __init__(self, *columns: ProgressColumn, console: Console, transient: bool) -> None:
        self.screen = console  # kept here: Progress asks for its renderable before its own console is set
        super().__init__(*columns, console=console, transient=transient)

    def get_renderable(self) -> RenderableType:
        return Constrain(super().get_renderable(), max(self.screen.width - ECHO_ROOM, 20))


class LiveProgress:
    """A transient bar, on a terminal only: it is gone when the run ends, and never reaches a pipe or a file.

    Lines printed on the same console while it runs appear above it, so failures still show as they come.
    """

    def __init__(self, console: Console) -> None:
        self.console = console
        self.planned: dict[str, int] = {}
        self.done: Counter[str] = Counter()
        self.pace = Pace()
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    @staticmethod
    def wanted(console: Console) -> bool:
        """Only where a person watches: a terminal that can redraw a line (not piped, not TERM=dumb)."""
        return console.is_terminal and not console.is_dumb_terminal

    def __enter__(self) -> LiveProgress:
        if self.wanted(self.console):
            # "hidden 40/152 ━━━━╸━━━ 47/159 cases 0:00:12 · 0:00:30 left"
            self._bar = _ShortOfTheEdge(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(bar_width=None),
                                 MofNCompleteColumn(), TextColumn("cases"), TimeElapsedColumn(), TimeLeft(self.pace),
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
        self.pace.start(planned)
        self._update(total=sum(self.planned.values()))

    def advance(self, result: CaseResult) -> None:
        """One more result of `result.suite`."""
        self.done[result.suite] += 1
        self.pace.advance(result.suite)
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
