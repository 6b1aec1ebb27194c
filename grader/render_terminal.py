"""The terminal view of a report: one line per case as it finishes, detail for failures, a verdict."""

from __future__ import annotations

import os
import sys
from typing import Callable

from rich.console import Console
from rich.markup import escape
from rich.theme import Theme

from grader.results import CaseResult, Outcome, Report
from grader.text import cut, inert

THEME = Theme({
    "passed": "bold green", "failed": "bold red", "error": "bold magenta", "timed out": "bold yellow",
    "crashed": "bold red", "out of memory": "bold yellow", "skipped": "dim", "not attempted": "bold cyan",
    "detail": "default", "muted": "dim", "heading": "bold", "accepted": "bold green", "rejected": "bold red",
    "diagnosis": "bold yellow", "code": "cyan", "not graded": "bold magenta",
})
LABELS = {
    Outcome.PASSED: "PASS", Outcome.FAILED: "FAIL", Outcome.ERROR: "ERROR", Outcome.TIMED_OUT: "TIMEOUT",
    Outcome.CRASHED: "CRASH", Outcome.OUT_OF_MEMORY: "OOM", Outcome.SKIPPED: "SKIP",
    Outcome.NOT_ATTEMPTED: "TODO",
}
OUTPUT_LINES = 20
OUTPUT_WIDTH = 200


def make_console(file=None, width: int | None = None) -> Console:
    """Colour on a terminal; plain text when piped or when NO_COLOR is set."""
    plain = bool(os.environ.get("NO_COLOR"))
    # With NO_COLOR there are no escape codes at all, bold included: plain text, as when piped.
    extra = {"color_system": None} if plain else {}
    return Console(file=file or sys.stdout, theme=THEME, width=width, no_color=plain, highlight=False,
                   soft_wrap=True, emoji=False, **extra)


class TerminalRenderer:
    """Prints results as they arrive, then the summary and the closing count line."""

    def __init__(self, console: Console, stub_hint: str = "") -> None:
        self.console = console
        self.stub_hint = stub_hint
        self._header = ""
        self._containment: str | Callable[[], str] = ""

    def header(self, exercise: str, mode: str, file: str, containment: str | Callable[[], str] = "") -> None:
        # Printed with the first result, so that an error before any case stays one line; `containment`
        # may be a function, asked then, so that the sandbox's probe need not finish before grading starts.
        what = "examples" if mode == "run" else "every test, hidden ones included"
        self._header = f"[heading]{show(exercise)}[/]: {show(file)} on {what}"
        self._containment = containment

    def _print_header(self) -> None:
        if self._header:
            containment = self._containment() if callable(self._containment) else self._containment
            self.console.print(self._header + (f"\n[muted]{show(containment)}[/]" if containment else ""))
            self._header = ""

    def case(self, result: CaseResult) -> None:
        self._print_header()
        style = result.outcome.value
        where = f"{result.function}, {result.device}" + (", hidden" if result.hidden else "")
        self.console.print(f"[{style}]{LABELS[result.outcome]:<7}[/] {show(result.name)} [muted]({show(where)})[/]")
        if result.extra.get("table"):
            self._table(result.extra["table"])
        if result.outcome in (Outcome.PASSED, Outcome.SKIPPED, Outcome.NOT_ATTEMPTED):
            return
        if result.message:
            self.console.print(f"        {show(result.message)}")
        if result.hidden:
            return
        if result.about:
            self.console.print(f"        [muted]checks: {show(result.about)}[/]")
        if result.inputs:
            self.console.print(f"        [muted]inputs: {show(result.inputs)}[/]")
        for line in result.details:
            self.console.print(f"        {show(line)}")
        if result.diagnosis:
            self._diagnosis(result)
        if result.traceback:
            self.console.print("        [muted]your code's traceback:[/]")
            for line in inert(result.traceback).splitlines():
                self.console.print(f"        [code]{escape(line)}[/]")
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

    def _diagnosis(self, result: CaseResult) -> None:
        diagnosis = result.diagnosis
        self.console.print(f"        [diagnosis]Likely mistake: {show(diagnosis.title)}[/]")
        self.console.print(f"        why: {show(diagnosis.rationale)}")
        self.console.print(f"        help: {show(diagnosis.help)}")

    def _output(self, name: str, text: str) -> None:
        # Split at newlines only: a carriage return or form feed is the learner's character, shown
        # escaped on its line, not a line break of ours (a CR-LF pair still ends a line).
        lines = text.replace("\r\n", "\n").rstrip("\n").split("\n")
        self.console.print(f"        [muted]your code {name}:[/]")
        for line in lines[:OUTPUT_LINES]:
            self.console.print(f"        | {show(cut(line, OUTPUT_WIDTH))}")
        if len(lines) > OUTPUT_LINES:
            self.console.print(f"        | [muted]... {len(lines) - OUTPUT_LINES} more lines[/]")

    def finish(self, report: Report) -> None:
        self._print_header()
        console = self.console
        for note in report.notes:
            console.print(f"[muted]{show(note)}[/]")
        if report.integrity_error:
            console.print(f"[error]Not graded:[/] {show(report.integrity_error)}")
        elif report.load_error:
            console.print("[error]Your file could not be graded:[/]")
            for line in inert(report.load_error).splitlines():
                console.print(f"  {escape(line)}")
        elif not report.ran:
            console.print("[error]Nothing ran:[/] no case could run on this machine, so nothing was checked.")
        elif report.all_not_attempted:
            console.print(f"[not attempted]Not attempted yet.[/] Write the functions in "
                          f"[code]{show(self.stub_hint or report.file)}[/], then run this again. "
                          f"Stuck? [code]grader hint[/] opens one hint at a time.")
        elif report.mode == "submit":
            if report.failed:
                console.print(f"[rejected]Not accepted:[/] {report.failed} of {len(report.results)} cases failed.")
            else:
                console.print("[accepted]Accepted.[/] Every test passes.")
            required = report.required_failed
            if required:
                console.print(f"[rejected]Score 0 of {report.max_score:g}:[/] {show(required[0].name)} is required "
                              f"for acceptance and it failed, whatever the other cases score.")
            else:
                console.print(f"Score {report.score:.4g} of {report.max_score:g}.")
        elif not report.failed:
            console.print("[passed]All examples pass.[/] Run [code]grader submit[/] to run every test.")
        diagnosed = {r.diagnosis.title for r in report.results if r.diagnosis and r.hidden}
        for title in sorted(diagnosed):
            console.print(f"[diagnosis]Hidden cases suggest: {show(title)}[/] (see the examples' help, or "
                          f"[code]grader hint[/])")
        console.print(f"[muted]{report.seconds:.1f} s[/]")
        # The last line stays plain so that scripts and CI can read it.
        console.print(report.summary_line(), style=None, markup=False)


def show(text: str) -> str:
    """Text from outside the grader, ready for Rich: controls escaped visibly, then markup escaped."""
    return escape(inert(text))
