"""The terminal view of a report: failures in full as they come, a live bar, per suite counts, a verdict."""

from __future__ import annotations

import time
from typing import Callable

from rich.console import Console
from rich.markup import escape

from grader.inert import cut, inert, one_line, show
from grader.report import grouped, summary
from grader.report.console import THEME, in_place, make_console  # noqa: F401  (the views' console, named here too)
from grader.report.layout import code, frame_line, say, table, verbatim
from grader.report.progress_bar import LiveProgress
from grader.results import CaseResult, Outcome, Report
from grader.results.groups import under_label, who

LABELS = {
    Outcome.PASSED: "PASS", Outcome.FAILED: "FAIL", Outcome.ERROR: "ERROR", Outcome.TIMED_OUT: "TIMEOUT",
    Outcome.CRASHED: "CRASH", Outcome.OUT_OF_MEMORY: "OOM", Outcome.SKIPPED: "SKIP",
    Outcome.NOT_ATTEMPTED: "TODO", Outcome.NOT_JUDGED: "UNJUDGED",
}
OUTPUT_LINES = 20
OUTPUT_WIDTH = 200
INDENT = " " * 8      # a case's own lines
CONTINUED = " " * 10  # the later lines of one text, and the rest of a line wrapped: no column the grader starts at


def print_indented(console: Console, markup: str, first: str = INDENT) -> None:
    """Print `markup` (its learner text already shown inert) so that none of it starts a line of its own: its
    first line after `first`, every later line, its own or the rest of one wrapped at the width, at CONTINUED."""
    say(console, markup, first, CONTINUED)


class TerminalRenderer:
    """Prints results as they arrive in a run, a submission's verdict on one screen, and the closing count line.

    A run (a few examples) gets a line for every case and every failure in full, once: a case that fails with the
    same error as the one printed just before it is named on one line under it instead ("same error in 4 more
    cases: ..."). A submission, hundreds of cases, is shown once it is done (grader/report/grouped.py): its likely
    mistake, each cause of failure once with its count and one case, the counts per suite and the verdict. With
    `verbose` every case of either is printed in full as it comes, with what torch printed on its own.
    `started`: when the command began (time.monotonic()), for the closing duration; else the grading's own.
    """

    def __init__(self, console: Console, stub_hint: str = "", verbose: bool = False,
                 started: float | None = None, exercise_word: str = "") -> None:
        self.console = console
        self.stub_hint = stub_hint
        self.verbose = verbose
        self.started = started
        # What follows `grader hint` or `grader submit` in a suggested command (" 07-ring-attention" where the
        # current folder would not choose the exercise), and what an acceptance says to do next.
        self.exercise_word = exercise_word
        self.next_step = ""
        self._header = ""
        self._file = ""
        self._containment: str | Callable[[], str] = ""
        self._every_case = True
        self._report: Report | None = None
        self._failed: set[str] = set()  # functions with a failure printed so far
        self._errors: dict[tuple, str] = {}  # each error printed in full, and the case it was printed for
        self._folding: tuple[tuple, list[str]] | None = None  # the error printed last, and the cases since with it
        self._live = LiveProgress(console)
        # Whether the containment line is new to this learner (once per machine: grader/learner/state.py); shown
        # every time where nobody says, and with `verbose`.
        self.first_sight: Callable[[str], bool] = lambda said: True

    def live(self) -> LiveProgress:
        """`with renderer.live(): grade(...)`: a progress bar on a terminal while the cases run, gone after."""
        return self._live

    def start(self, report: Report) -> None:
        """Before the first case: the header (above the bar), what is planned and which functions call which."""
        self._print_header()
        self._report = report
        self._file = report.file or self._file
        self._live.start(report.planned)

    def header(self, exercise: str, mode: str, file: str, containment: str | Callable[[], str] = "") -> None:
        # Printed once the cases are about to run (or with the first result), so that an error before any
        # case stays one line; `containment` may be a function, asked then, so that the sandbox's probe
        # need not finish before grading starts.
        self._every_case = self.verbose or mode != "submit"
        what = "examples" if mode == "run" else "every test, hidden ones included"
        self._header = f"[heading]{show(one_line(exercise))}[/]: {show(one_line(file))} on {what}"
        self._file = self._file or file
        self._containment = containment

    def announce(self) -> None:
        """Print the header's first line now, before anything slow; the containment line waits for the first result."""
        if self._header:
            say(self.console, self._header)
            self._header = ""

    def begin(self, exercise: str, mode: str, file: str, containment: str | Callable[[], str] = "") -> None:
        """The header, announced at once on a terminal, before torch is imported: the learner sees what is being
        graded. Piped, it waits for the first result, so that an error before any case stays one line for scripts."""
        self.header(exercise, mode, file, containment)
        if self.console.is_terminal:
            self.announce()

    def _print_header(self) -> None:
        self.announce()
        if self._containment:
            containment = self._containment() if callable(self._containment) else self._containment
            if containment and (self.verbose or self.first_sight(containment)):
                say(self.console, f"[muted]{show(containment)}[/]")
            self._containment = ""

    def finished(self, result: CaseResult) -> None:
        """One case's result, as soon as it is known (grader/grading/request.py, Listener)."""
        self._live.advance(result)
        if result.load_failed or not self._every_case:
            # A file that could not be imported is said once, with the count, at the end; a submission's cases are
            # shown together once all are known, each cause once (grader/report/grouped.py).
            return
        quiet = result.outcome in (Outcome.PASSED, Outcome.SKIPPED, Outcome.NOT_ATTEMPTED)
        self._print_header()
        note = "" if quiet else summary.follows_note(result, self._failed, short=result.hidden)
        error = None if quiet or self.verbose else _error_key(result, note)
        if error is not None and self._folding is not None and self._folding[0] == error:
            self._folding[1].append(result.name)  # said in one line once the run of them ends
            return
        self._fold_done()
        self._import_output()
        style = result.outcome.value
        where = f"{who(result.function, result.suite, result.extra)}, {result.device}" + \
            (", hidden" if result.hidden else "")
        print_indented(self.console, f"[{style}]{LABELS[result.outcome]:<7}[/] {show(one_line(result.name))} "
                                     f"[muted]({show(one_line(where))})[/]", first="")
        if result.extra.get("table"):
            table(self.console, result.extra["table"], INDENT)
        if quiet:
            return
        self._failed.add(result.function)
        if error in self._errors:  # printed in full further up, with other cases between
            print_indented(self.console, f"[muted]same error as {show(one_line(self._errors[error]))} above[/]")
            return
        if error is not None:
            self._errors[error] = result.name
            self._folding = (error, [])
        self._failure(result, note)

    def _failure(self, result: CaseResult, note: str, details: bool = True) -> None:
        """Everything a failing case has to show: its message, what it checks, its inputs, traceback and output (with
        `details`: the detail lines too, and all it printed)."""
        message = show(under_label(result.outcome.value, result.message))  # the label above names the outcome
        if result.hidden and not details:
            return  # a submission's screen named it with its message already (grouped.py)
        if result.hidden:
            line = " ".join(part for part in (message, note) if part)
            if line:
                print_indented(self.console, line)
            return
        for text in (message if details else "", note, f"[muted]checks: {show(result.about)}[/]" if result.about else "",
                     f"[muted]inputs: {show(result.inputs)}[/]" if result.inputs and details else "",
                     *(show(line) for line in (result.details if details else ()))):
            if text:
                print_indented(self.console, text)
        # A diagnosis is named once, after the cases, with every case it explains (render_summary).
        if result.traceback:
            self._traceback(result.traceback)
        for name, text in (("your code printed", result.stdout), ("your code printed to stderr", result.stderr)):
            if text.strip():
                self._output(name, text, shown=OUTPUT_LINES if details else grouped.OUTPUT_SHOWN)
        if self.verbose and result.platform_output.strip():
            self._output("torch printed on its own (about the sandbox, not your code)", result.platform_output)

    def _traceback(self, traceback: str) -> None:
        """The learner's traceback: its frames as `path:line` an editor opens, its code lines cut, never wrapped."""
        self.console.print("        [muted]your code's traceback:[/]")
        lines = inert(traceback).splitlines()  # every line the learner's, the exception's too
        for number, line in enumerate(lines):
            frame = frame_line(line, self._file)
            if frame is not None:
                say(self.console, f"[code]{escape(frame)}[/]", first=CONTINUED, rest=CONTINUED + "    ")
            elif number == len(lines) - 1 or not line.startswith("    "):
                print_indented(self.console, f"[code]{escape(line)}[/]", first=CONTINUED)  # the exception: text
            else:
                code(self.console, line, CONTINUED)

    def _fold_done(self) -> None:
        """Name in one line the cases that failed with the error printed just before them, if any did."""
        if self._folding is not None and self._folding[1]:
            names = self._folding[1]
            shown = ", ".join(show(one_line(name)) for name in names[:summary.NAMES_SHOWN])
            more = f" and {len(names) - summary.NAMES_SHOWN} more" if len(names) > summary.NAMES_SHOWN else ""
            print_indented(self.console, f"[muted]same error in {len(names)} more case{'s' * (len(names) != 1)}: "
                                         f"{shown}{more}[/]")
        self._folding = None

    def _import_output(self) -> None:
        """What the learner's file printed while it was imported, once: in full with `verbose`, else counted."""
        report = self._report
        if report is None or not (report.import_stdout.strip() or report.import_stderr.strip()):
            return
        if self.verbose:
            for name, text in (("your file printed when imported", report.import_stdout),
                               ("your file printed to stderr when imported", report.import_stderr)):
                if text.strip():
                    self._output(name, text, first="")
        else:
            count = len((report.import_stdout + report.import_stderr).splitlines())
            say(self.console, f"[muted]Your file printed {count} line{'s' * (count != 1)} when imported "
                              f"(--verbose shows {'them' if count != 1 else 'it'}).[/]")
        report.import_stdout = report.import_stderr = ""

    def _output(self, name: str, text: str, first: str = INDENT, shown: int = OUTPUT_LINES) -> None:
        # Split at newlines only: a carriage return or form feed is the learner's character, shown
        # escaped on its line, not a line break of ours (a CR-LF pair still ends a line).
        lines = text.replace("\r\n", "\n").rstrip("\n").split("\n")
        print_indented(self.console, f"[muted]{name}:[/]", first=first)
        for line in lines[:shown]:
            verbatim(self.console, f"| {inert(cut(line, OUTPUT_WIDTH))}", INDENT, CONTINUED)
        if len(lines) > shown:
            self.console.print(f"        | [muted]... {len(lines) - shown} more lines[/]")

    def finish(self, report: Report) -> None:
        self._print_header()
        self._fold_done()
        self._report = self._report or report
        self._import_output()
        console = self.console
        # A submission whose cases ran shows its verdict on one screen, its notes among it (grouped.py).
        one_screen = not self._every_case and report.mode == "submit" and report.ran and not (
            report.integrity_error or report.not_graded or report.load_error or report.all_not_attempted)
        for note in [] if one_screen else report.notes:
            say(console, f"[muted]{show(note)}[/]")
        if one_screen:
            grouped.screen(console, report, f"grader hint{self.exercise_word}",
                           lambda result: self._failure(result, "", details=False), self.next_step)
        elif report.integrity_error or report.not_graded:
            say(console, f"[error]Not graded:[/] {show(report.integrity_error or report.not_graded)}")
        elif report.load_error:
            self._load_error(report)
        elif not report.ran:
            say(console, "[error]Nothing ran:[/] no case could run on this machine, so nothing was checked.")
        elif report.all_not_attempted:
            say(console, f"[not attempted]Not attempted yet.[/] Write the functions in "
                         f"[code]{show(self.stub_hint or report.file)}[/], then run this again. "
                         f"Stuck? [code]grader hint{show(self.exercise_word)}[/] opens one hint at a time.")
        else:
            self._summary(report)
        seconds = report.seconds if self.started is None else max(time.monotonic() - self.started, report.seconds)
        console.print(f"[muted]{seconds:.1f} s[/]")
        # The last line stays plain so that scripts and CI can read it.
        console.print(report.summary_line(), style=None, markup=False)

    def archived(self, written: str, hand_in: str) -> None:
        """After a learner bundle's submit: the archive written for the course (`written`), and how to hand it in."""
        self.console.print(f"Wrote {escape(written)} (your file and its manifest, verified): {show(hand_in)}.")

    def _load_error(self, report: Report) -> None:
        """The import error once, with how many cases it kept from running (every case, or the hidden ones)."""
        unrun = sum(result.load_failed for result in report.results)
        total = len(report.results)
        which = f"none of its {total} cases ran" if unrun == total else f"{unrun} of its {total} cases did not run"
        say(self.console, f"[error]Your file could not be imported[/]{f', so {which}' if unrun else ''}:")
        for line in inert(report.load_error).splitlines():
            frame = frame_line(line, self._file or report.file)
            say(self.console, escape(frame if frame is not None else line), first="  ", rest="    ")

    def _summary(self, report: Report) -> None:
        """After the cases: per suite counts, each likely mistake once, what to fix first, then the verdict."""
        console = self.console
        if report.mode == "submit" or len({result.suite for result in report.results}) > 1:
            summary.suite_counts(console, report)
        summary.likely_mistakes(console, report, f"grader hint{self.exercise_word}")
        summary.fix_first(console, report)
        summary.not_attempted(console, report)
        if report.mode == "submit":
            grouped.verdict(console, report, self.next_step)
        elif not report.failed:
            say(console, f"[passed]All examples pass.[/] Run [code]grader submit{show(self.exercise_word)}[/] to run "
                         f"every test.")


def _error_key(result: CaseResult, note: str) -> tuple:
    """What a failing case shows beyond its name, what it checks and its inputs: equal keys, the same error."""
    return (result.outcome, result.hidden, result.function, result.message, note, tuple(result.details),
            result.traceback, result.stdout, result.stderr)
