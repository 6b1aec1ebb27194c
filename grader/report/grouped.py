"""A submission's verdict on one screen: the likely mistake first, then each cause of failure once, counted, one case
of it shown, then the counts and the score.

Whatever the mistake, a submission's screen stays short: a hundred cases that fail the same way anywhere in the run
are one cause (grader/results/groups.py), printed once with how many cases it took and one of them, a visible one
where there is one (its message, what it checks, its inputs, its traceback). `grader run` shows every example in
full, and `--verbose` every case.
"""

from __future__ import annotations

from typing import Callable

from rich.console import Console

from grader.inert import one_line, show
from grader.report.layout import say
from grader.results import CaseResult, Outcome, Report
from grader.results.groups import Group, cases, failure_groups, headline, named, under_label

INDENT = " " * 8
CONTINUED = " " * 10
LABELS = {
    Outcome.FAILED: "FAIL", Outcome.ERROR: "ERROR", Outcome.TIMED_OUT: "TIMEOUT", Outcome.CRASHED: "CRASH",
    Outcome.OUT_OF_MEMORY: "OOM", Outcome.NOT_JUDGED: "UNJUDGED",
}
OUTPUT_SHOWN = 5  # lines of what the shown case printed


def print_groups(console: Console, report: Report, example: Callable[[CaseResult], None]) -> None:
    """Each cause of the report's failures once: a heading with its count, one of its cases named with what it
    says beyond the cause, then `example` shows the rest of that case (what it checks, its traceback)."""
    groups = failure_groups(report.results)
    if not groups:
        return
    total = sum(group.count for group in groups)
    if len(groups) > 1:
        say(console, f"[heading]{total} cases failed, for {len(groups)} causes:[/]")
    for group in groups:
        _group(console, group, example)
    if any(group.count > 1 for group in groups) or any(not group.example.hidden for group in groups):
        say(console, "[muted]grader run shows each example in full; --verbose, every case.[/]")


def _group(console: Console, group: Group[CaseResult], example: Callable[[CaseResult], None]) -> None:
    cause, shown = group.cause, group.example
    outcome = Outcome(cause.outcome)
    label = LABELS.get(outcome, outcome.value.upper())
    what, count = cause.what, cases(group.count)
    if what.startswith(outcome.value):  # 'crashed (SIGSEGV)' under CRASH: the outcome named once, by the label
        rest = what[len(outcome.value):].strip()
        rest = rest[1:-1] if rest.startswith("(") and rest.endswith(")") else rest.lstrip(": ")
        heading = f"{show(one_line(cause.who))} [muted]({show(one_line(rest)) + ', ' if rest else ''}{count})[/]"
    else:
        heading = f"{show(one_line(cause.who))}: {show(one_line(what))} [muted]({count})[/]"
    say(console, f"[{outcome.value}]{label:<7}[/] {heading}", rest=CONTINUED)
    where = ", ".join(part for part in ("hidden" if shown.hidden else "", "" if shown.device == "cpu" else shown.device)
                      if part)
    said = _beyond(under_label(outcome.value, shown.message), cause.what)
    say(console, f"[muted]e.g.[/] {show(one_line(shown.name))}" + (f" [muted]({where})[/]" if where else "") +
        (f": {show(said)}" if said else ""), first=INDENT, rest=CONTINUED)
    example(shown)
    others = [case.name for case in group.cases if not case.hidden and case is not shown]
    hidden = group.hidden - shown.hidden
    if others or hidden:
        also = named(list(dict.fromkeys(map(one_line, others))))
        hidden_part = f"{hidden} hidden case{'s' * (hidden != 1)}" if hidden else ""
        say(console, f"[muted]also: {show(also)}{' and ' if also and hidden else ''}{hidden_part}[/]",
            first=INDENT, rest=CONTINUED)


def _beyond(message: str, cause: str) -> str:
    """What a case's message says that its cause does not: '' where it says nothing more, its figures where it
    starts as the cause does ('largest error 0.5 at [1] (allowed 1e-09)' of 'output is wrong: largest ...')."""
    first = headline(message)
    if message == cause or message in cause:
        return ""
    if first and cause.startswith(first) and message.startswith(first + ": "):
        return message[len(first) + 2:]
    return message


def screen(console: Console, report: Report, hint: str, example: Callable[[CaseResult], None],
           next_step: str = "") -> None:
    """A submission's summary in this order: the likely mistake, what to fix first, each cause, the notes, the
    counts per suite, the verdict and the score."""
    from grader.report import summary

    summary.likely_mistakes(console, report, hint)
    summary.fix_first(console, report)
    print_groups(console, report, example)
    for note in report.notes:
        say(console, f"[muted]{show(note)}[/]")
    summary.suite_counts(console, report)
    summary.not_attempted(console, report)
    verdict(console, report, next_step)


def verdict(console: Console, report: Report, next_step: str = "") -> None:
    """A submission's verdict and score: a required case that failed is named with what it failed on."""
    from grader.report import summary
    from grader.results.groups import result_blame

    if report.failed:
        say(console, summary.verdict(report))
    else:
        say(console, "[accepted]Accepted.[/] Every test passes.")
    required = report.required_failed
    if required:
        first = required[0]
        say(console, f"[rejected]Score 0 of {report.max_score:g}:[/] the required case {show(one_line(first.name))}"
                     f"{' (hidden)' if first.hidden else ''} {show(result_blame(first))}.")
    else:
        console.print(f"Score {report.score:.4g} of {report.max_score:g}.")
    if next_step:  # after an acceptance, the next exercise; after a rule `grader scale` draws, that command
        say(console, show(next_step))
