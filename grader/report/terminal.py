"""The terminal view of a report: failures in full as they come, a live bar, per suite counts, a verdict."""

from __future__ import annotations

import os
import sys
from typing import Callable

from rich.console import Console
from rich.markup import escape
from rich.text import Text
from rich.theme import Theme

from grader.grading.budget import NOT_RUN
from grader.inert import cut, indented, inert, one_line, show
from grader.report import summary
from grader.report.progress_bar import LiveProgress
from grader.results import CaseResult, Outcome, Report

THEME = Theme({
    "passed": "bold green", "failed": "bold red", "error": "bold magenta", "timed out": "bold yellow",
    "crashed": "bold red", "out of memory": "bold yellow", "skipped": "dim", "not attempted": "bold cyan",
    "detail": "default", "muted": "dim", "heading": "bold", "accepted": "bold green", "rejected": "bold red",
    "diagnosis": "bold yellow", "code": "cyan", "not graded": "bold magenta", "follows": "yellow",
    "not judged": "bold magenta",
})
LABELS = {
    Outcome.PASSED: "PASS", Outcome.FAILED: "FAIL", Outcome.ERROR: "ERROR", Outcome.TIMED_OUT: "TIMEOUT",
    Outcome.CRASHED: "CRASH", Outcome.OUT_OF_MEMORY: "OOM", Outcome.SKIPPED: "SKIP",
    Outcome.NOT_ATTEMPTED: "TODO", Outcome.NOT_JUDGED: "UNJUDGED",
}
OUTPUT_LINES = 20
OUTPUT_WIDTH = 200
INDENT = " " * 8      # a case's own lines
CONTINUED = " " * 10  # the later lines of one text, and the rest of a line wrapped: no column the grader starts at


def make_console(file=None, width: int | None = None) -> Console:
    """Colour on a terminal; plain text when piped or when NO_COLOR is set."""
    plain = bool(os.environ.get("NO_COLOR"))
    # With NO_COLOR there are no escape codes at all, bold included: plain text, as when piped.
    extra = {"color_system": None} if plain else {}
    return Console(file=file or sys.stdout, theme=THEME, width=width, no_color=plain, highlight=False,
                   soft_wrap=True, emoji=False, **extra)


def print_indented(console: Console, markup: str, first: str = INDENT) -> None:
    """Print `markup` (its learner text already shown inert) so that none of it starts a line of its own: its
    first line after `first`, every later line at CONTINUED, and on a terminal, which would wrap a long line
    at column 0, each line wrapped here to the terminal's width, the rest at CONTINUED too."""
    if not console.is_terminal:  # piped: nothing wraps it
        console.print(first + indented(markup, CONTINUED))
        return
    width = max(console.width - len(CONTINUED), 20)
    for number, line in enumerate(Text.from_markup(markup, emoji=False).split("\n", allow_blank=True)):
        for index, piece in enumerate(line.wrap(console, width, overflow="fold") or [Text()]):
            console.print(Text.assemble(first if number == index == 0 else CONTINUED, piece))


class TerminalRenderer:
    """Prints results as they arrive, then the summary and the closing count line.

    Every failure is printed in full. Passing, skipped and not attempted cases get a line each in a
    run (a few examples) and with `verbose`; a submission, hundreds of cases, only counts them per suite.
    """

    def __init__(self, console: Console, stub_hint: str = "", verbose: bool = False, exercise_word: str = "") -> None:
        self.console = console
        self.stub_hint = stub_hint
        self.verbose = verbose
        # What follows `grader hint` or `grader submit` in a suggested command (" 07-ring-attention" where the
        # current folder would not choose the exercise), and what an acceptance says to do next.
        self.exercise_word = exercise_word
        self.next_step = ""
        self._header = ""
        self._containment: str | Callable[[], str] = ""
        self._every_case = True
        self._uses: dict[str, tuple[str, ...]] = {}
        self._failed: set[str] = set()  # functions with a failure printed so far
        self._live = LiveProgress(console)

    def live(self) -> LiveProgress:
        """`with renderer.live(): grade(...)`: a progress bar on a terminal while the cases run, gone after."""
        return self._live

    def start(self, report: Report) -> None:
        """Before the first case: the header (above the bar), what is planned and which functions call which."""
        self._print_header()
        self._uses = dict(report.uses)
        self._live.start(report.planned)

    def header(self, exercise: str, mode: str, file: str, containment: str | Callable[[], str] = "") -> None:
        # Printed once the cases are about to run (or with the first result), so that an error before any
        # case stays one line; `containment` may be a function, asked then, so that the sandbox's probe
        # need not finish before grading starts.
        self._every_case = self.verbose or mode != "submit"
        what = "examples" if mode == "run" else "every test, hidden ones included"
        self._header = f"[heading]{show(one_line(exercise))}[/]: {show(one_line(file))} on {what}"
        self._containment = containment

    def announce(self) -> None:
        """Print the header's first line now, before anything slow; the containment line waits for the first result."""
        if self._header:
            print_indented(self.console, self._header, first="")
            self._header = ""

    def _print_header(self) -> None:
        self.announce()
        if self._containment:
            containment = self._containment() if callable(self._containment) else self._containment
            if containment:
                self.console.print(f"[muted]{show(containment)}[/]")
            self._containment = ""

    def case(self, result: CaseResult) -> None:
        self._live.advance(result)
        if result.load_failed:
            return  # the file could not be imported: said once, with the count, at the end
        quiet = result.outcome in (Outcome.PASSED, Outcome.SKIPPED, Outcome.NOT_ATTEMPTED)
        # A case the time budget kept from running has nothing of its own to show: the report's note
        # says once how many there were and why (grader/grading/budget.py).
        if (quiet or NOT_RUN in result.extra) and not self._every_case:
            return
        self._print_header()
        style = result.outcome.value
        where = f"{result.function}, {result.device}" + (", hidden" if result.hidden else "")
        print_indented(self.console, f"[{style}]{LABELS[result.outcome]:<7}[/] {show(one_line(result.name))} "
                                     f"[muted]({show(one_line(where))})[/]", first="")
        if result.extra.get("table"):
            self._table(result.extra["table"])
        if quiet:
            return
        note = summary.follows_note(result, self._failed, self._uses, short=result.hidden)
        self._failed.add(result.function)
        if result.hidden:
            line = " ".join(part for part in (show(result.message), note) if part)
            if line:
                print_indented(self.console, line)
            return
        for text in (show(result.message), note, f"[muted]checks: {show(result.about)}[/]" if result.about else "",
                     f"[muted]inputs: {show(result.inputs)}[/]" if result.inputs else "",
                     *(show(line) for line in result.details)):
            if text:
                print_indented(self.console, text)
        # A diagnosis is named once, after the cases, with every case it explains (render_summary).
        if result.traceback:
            self.console.print("        [muted]your code's traceback:[/]")
            for line in inert(result.traceback).splitlines():  # every line the learner's, the exception's too
                print_indented(self.console, f"[code]{escape(line)}[/]", first=CONTINUED)
        for name, text in (("printed", result.stdout), ("printed to stderr", result.stderr)):
            if text.strip():
                self._output(name, text)

    def _table(self, table: dict) -> None:
        """A group case's table (per rank of a ring: what it held, sent and received, time per step)."""
        from rich.padding import Padding
        from rich.table import Table

        shown = Table(box=None, padding=(0, 1), header_style="muted", caption=show(str(table.get("caption", ""))),
                      caption_style="muted", caption_justify="left")
        for column in table.get("columns", []):
            shown.add_column(show(str(column)), justify="right")
        for row in table.get("rows", []):
            shown.add_row(*(show(str(cell)) for cell in row))
        self.console.print(Padding(shown, (0, 0, 0, 8), expand=False))

    def _output(self, name: str, text: str) -> None:
        # Split at newlines only: a carriage return or form feed is the learner's character, shown
        # escaped on its line, not a line break of ours (a CR-LF pair still ends a line).
        lines = text.replace("\r\n", "\n").rstrip("\n").split("\n")
        self.console.print(f"        [muted]your code {name}:[/]")
        for line in lines[:OUTPUT_LINES]:
            print_indented(self.console, f"| {show(cut(line, OUTPUT_WIDTH))}")
        if len(lines) > OUTPUT_LINES:
            self.console.print(f"        | [muted]... {len(lines) - OUTPUT_LINES} more lines[/]")

    def finish(self, report: Report) -> None:
        self._print_header()
        console = self.console
        for note in report.notes:
            console.print(f"[muted]{show(note)}[/]")
        if report.integrity_error or report.not_graded:
            console.print(f"[error]Not graded:[/] {show(report.integrity_error or report.not_graded)}")
        elif report.load_error:
            self._load_error(report)
        elif not report.ran:
            console.print("[error]Nothing ran:[/] no case could run on this machine, so nothing was checked.")
        elif report.all_not_attempted:
            console.print(f"[not attempted]Not attempted yet.[/] Write the functions in "
                          f"[code]{show(self.stub_hint or report.file)}[/], then run this again. "
                          f"Stuck? [code]grader hint{show(self.exercise_word)}[/] opens one hint at a time.")
        else:
            self._summary(report)
        console.print(f"[muted]{report.seconds:.1f} s[/]")
        # The last line stays plain so that scripts and CI can read it.
        console.print(report.summary_line(), style=None, markup=False)

    def _load_error(self, report: Report) -> None:
        """The import error once, with how many cases it kept from running (every case, or the hidden ones)."""
        unrun = sum(result.load_failed for result in report.results)
        total = len(report.results)
        which = f"none of its {total} cases ran" if unrun == total else f"{unrun} of its {total} cases did not run"
        self.console.print(f"[error]Your file could not be imported[/]{f', so {which}' if unrun else ''}:")
        for line in inert(report.load_error).splitlines():
            print_indented(self.console, escape(line), first="  ")

    def _summary(self, report: Report) -> None:
        """After the cases: per suite counts, each likely mistake once, what to fix first, then the verdict."""
        console = self.console
        if report.mode == "submit" or len({result.suite for result in report.results}) > 1:
            summary.suite_counts(console, report)
        summary.likely_mistakes(console, report, f"grader hint{self.exercise_word}")
        summary.fix_first(console, report)
        summary.not_attempted(console, report)
        if report.mode == "submit":
            if report.failed:
                console.print(summary.verdict(report))
            else:
                console.print("[accepted]Accepted.[/] Every test passes.")
            required = report.required_failed
            if required:
                console.print(f"[rejected]Score 0 of {report.max_score:g}:[/] {show(required[0].name)} is required "
                              f"for acceptance and it failed, whatever the other cases score.")
            else:
                console.print(f"Score {report.score:.4g} of {report.max_score:g}.")
            if not report.failed and not required and self.next_step:
                console.print(show(self.next_step))
        elif not report.failed:
            console.print(f"[passed]All examples pass.[/] Run [code]grader submit{show(self.exercise_word)}[/] to run "
                          f"every test.")
