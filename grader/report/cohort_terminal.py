"""The terminal view of cohort grading: a live progress bar (plain lines when not a terminal), then a summary."""

from __future__ import annotations

import statistics
import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, Task, TextColumn, TimeRemainingColumn
from rich.text import Text

from grader.inert import one_line
from grader.report.terminal import print_indented, show
from grader.results.cohort import NOT_GRADED, STATUSES, CohortRun, Finished, Summary


class _Rate(ProgressColumn):
    """Submissions graded per minute, from the bar's own recent speed."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(f"{speed * 60:.1f}/min" if speed else "-/min", style="muted")


class CohortProgress:
    """Shows grading as it goes: a bar with done, failed, rate and time left on a terminal, else one line each."""

    def __init__(self, console: Console, jobs_from: str = "") -> None:
        self.console = console
        self.jobs_from = jobs_from  # where the default --jobs came from ("2 CPUs in this process's affinity mask")
        self.live = console.is_terminal
        self.total = self.done = self.failed = 0
        self._bar: Progress | None = None
        self._task = None
        self._started = time.monotonic()

    def start(self, total: int, skipped: int, jobs: int) -> None:
        self.total = total
        if skipped:
            self.console.print(f"[muted]{skipped} already graded, skipped (--force grades them again)[/]")
        if not total:
            return
        source = f" (--jobs {jobs}: {show(self.jobs_from)})" if self.jobs_from else ""
        self.console.print(f"[muted]grading {total} submission{'s' * (total != 1)}, {jobs} at a time{source}[/]")
        if self.live:
            self._bar = Progress(TextColumn("[heading]grading[/]"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("[failed]{task.fields[failed]} failed[/]"), _Rate(),
                                 TimeRemainingColumn(), console=self.console)
            self._task = self._bar.add_task("grading", total=total, failed=0)
            self._bar.start()

    def finished(self, item: Finished) -> None:
        self.done += 1
        self.failed += item.status != "passed"
        if item.status == NOT_GRADED:
            verdict = f"[not graded]not graded[/]: {show(one_line(item.reason))}"  # it may name a learner's file
        else:
            score = f"{item.score:.4g} of {item.max_score:g}" if item.max_score else f"{item.score:.4g}"
            verdict = f"{score}, [{item.status}]{item.status}[/] [muted]({item.seconds:.1f} s)[/]"
        line = f"[{self.done}/{self.total}] {show(one_line(item.id))}: {verdict}"
        if self._bar is not None:
            self._bar.update(self._task, advance=1, failed=self.failed)
            if item.status == NOT_GRADED:
                print_indented(self._bar.console, line, first="")  # above the bar: what needs a look stays on screen
        else:
            print_indented(self.console, line, first="")

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def print_summary(run: CohortRun, console: Console) -> None:
    """The cohort in a few lines: counts, scores, statuses, the cases most failed, the mistakes most named."""
    summary = run.summary
    out = run.out
    console.print(f"[heading]{show(summary.exercise)}[/]: {summary.count} submission{'s' * (summary.count != 1)}"
                  + (f" ({run.graded + run.not_graded} done now, {run.skipped} kept from earlier runs)"
                     if run.skipped or run.graded or run.not_graded else ""))
    _scores(summary, console)
    counts = ", ".join(f"[{status}]{summary.statuses[status]} {status}[/]" for status in STATUSES
                       if summary.statuses.get(status))
    console.print(f"status: {counts or 'no submission here'}")
    failing = summary.most_failed()
    if failing:
        console.print("[heading]cases most failed[/]" + (f" [muted](not counting {summary.left_out} that did not "
                                                        f"import)[/]" if summary.left_out else ""))
        for name, failed, ran in failing:
            console.print(f"  {failed:>4} of {ran:<4} {show(name)}")
    if summary.mistakes:
        console.print("[heading]mistakes most often diagnosed[/]")
        for title, count in summary.mistakes[:10]:
            console.print(f"  {count:>4}  [diagnosis]{show(title)}[/]")
    if run.others:
        console.print(f"[muted]{len(run.others)} submission{'s' * (len(run.others) != 1)} not given this time "
                      f"kept as graded before (delete results/ID.json to drop one)[/]")
    if run.rows:
        _learners(run, console)
    console.print(f"Gradebook: {show(str(out / 'grades.csv'))}, {show(str(out / 'report.html'))}, "
                  f"{show(str(out / 'results'))}/", markup=True)


def _scores(summary: Summary, console: Console) -> None:
    """The headline: the scores that count (with a roster: late penalties, overrides, a missing learner's 0), then,
    where they differ, the scores as graded."""
    of = f" of {summary.max_score:g}" if summary.max_score else ""
    counted = summary.counted
    if counted is not None and counted.scores:
        console.print(f"score{of} that counts: mean {statistics.fmean(counted.scores):.4g}, median "
                      f"{statistics.median(counted.scores):.4g} [muted]({show(counted.words())})[/]")
    if not summary.scores:
        console.print("score: nothing graded" if counted is None or not counted.scores else "graded: none yet")
        return
    said = "score" if counted is None else "graded score"
    console.print(f"{said}{of}: mean {summary.mean:.4g}, median {summary.median:.4g} "
                  f"[muted]({len(summary.scores)} graded)[/]")


def _learners(run: CohortRun, console: Console) -> None:
    """The roster's view: learners by status, the adjustments applied, and the entries that match no learner."""
    counts: dict[str, int] = {}
    for row in run.rows:
        counts[row.status] = counts.get(row.status, 0) + 1
    shown = ", ".join(f"[{status if status != 'missing' else 'muted'}]{count} {status}[/]"
                      for status, count in sorted(counts.items()))
    adjusted = sum(bool(row.notes) for row in run.rows)
    console.print(f"learners: {len(run.rows)} on the roster: {shown}"
                  + (f" [muted]({adjusted} with adjustments: see grades.csv)[/]" if adjusted else ""))
    if run.unmatched:
        names = ", ".join(show(one_line(row.entry.name)) for row in run.unmatched[:5])
        more = f" and {len(run.unmatched) - 5} more" if len(run.unmatched) > 5 else ""
        console.print(f"[failed]{len(run.unmatched)} entr{'ies' if len(run.unmatched) != 1 else 'y'} no roster row "
                      f"names[/]: {names}{more} (graded, in grades.csv with in_roster no)")


def print_completeness(run: CohortRun, console: Console) -> None:
    """Whether the gradebook is complete, in one line: what the exit status (0 or 1) says, for whoever reads it."""
    not_graded = run.summary.statuses.get(NOT_GRADED, 0)
    if run.to_retry:
        console.print(f"[failed]incomplete[/]: {run.to_retry} submission{'s' * (run.to_retry != 1)} got no verdict "
                      f"that stands (a grader error, a file that could not be read): run the same command again to "
                      f"grade {'them' if run.to_retry != 1 else 'it'} (exit status 1)")
    elif not_graded:
        console.print(f"complete: every submission has its verdict; {not_graded} of them cannot be graded as "
                      f"handed in (the reason column of grades.csv says why; exit status 0)")

