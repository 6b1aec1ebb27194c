"""What the terminal view says once, after the cases: per suite counts, each likely mistake, what to fix first."""

from __future__ import annotations

from rich.console import Console

from grader.inert import show
from grader.report.layout import say
from grader.results import CaseResult, Outcome, Report
from grader.results.groups import NAMES_SHOWN, failing, follows


def suite_counts(console: Console, report: Report) -> None:
    """One line per suite, 'hidden   140/152 passed', in the order the suites ran."""
    suites = list(dict.fromkeys([*report.planned, *(r.suite for r in report.results)]))
    width = max(map(len, suites), default=0)
    for suite in suites:
        results = [r for r in report.results if r.suite == suite]
        if not results:
            continue
        passed = sum(r.passed for r in results)
        style = "passed" if passed == len(results) - _count(results, Outcome.SKIPPED) else "failed"
        line = f"[{style}]{show(suite):<{width}}[/]  {passed}/{len(results)} passed"
        for outcome in (Outcome.NOT_ATTEMPTED, Outcome.SKIPPED):
            if _count(results, outcome):
                line += f", {_count(results, outcome)} {outcome.value}"
        say(console, line)


def likely_mistakes(console: Console, report: Report, hint: str = "grader hint") -> None:
    """Each catalogued mistake once, with the cases it explains; its why and help when an example showed it.

    A mistake seen only in hidden cases is named, with their count, and no more: its help would say what
    those cases test. The learner is pointed to the hints, never to help that was not printed."""
    explained: dict[str, list[CaseResult]] = {}
    for result in failing(report.results):
        if result.diagnosis is not None:
            explained.setdefault(result.diagnosis.mistake, []).append(result)
    for results in explained.values():
        diagnosis = results[0].diagnosis
        shown = list(dict.fromkeys(r.name for r in results if not r.hidden))
        hidden = len({r.name for r in results if r.hidden})
        if not shown:
            say(console, f"[diagnosis]Hidden cases suggest: {show(diagnosis.title)}[/] ({_cases(hidden, 'hidden ')}). "
                         f"Stuck? [code]{show(hint)}[/] opens one hint at a time.")
            continue
        names = ", ".join(map(show, shown[:NAMES_SHOWN]))
        more = len(shown) - NAMES_SHOWN
        if more > 0:
            names += f" and {_cases(more, '')} more"
        if hidden:
            names += f"; and {_cases(hidden, 'hidden ')}"
        say(console, f"[diagnosis]Likely mistake: {show(diagnosis.title)}[/]")
        for label, text in (("explains", names), ("why", show(diagnosis.rationale)), ("help", show(diagnosis.help))):
            say(console, f"{label}: {text}", first="  ", rest="    ")


def fix_first(console: Console, report: Report) -> None:
    """For the functions whose failing cases were seen calling a function that failed too: fix that one first, said
    once per function fixed first. Said only of a call the learner's code showed in this run (CaseResult.reached),
    or that the course's own program makes (a distributed suite's), never of one presumed."""
    callers: dict[tuple[str, ...], list[str]] = {}
    for caller, before in follows(report.results):
        callers.setdefault(tuple(before), []).append(caller)
    for before, who in callers.items():
        them = "them" if len(before) > 1 else "it"
        said = [f"{show(caller)} calls {them}" if caller.startswith("the ") else f"{show(caller)} called {them} in "
                f"this run" for caller in who]
        whose = "their" if len(who) > 1 else "its"
        say(console, f"[follows]Fix {_names(list(before))} first:[/] {', and '.join(said)}, so {whose} failures may "
                     f"follow from {'theirs' if len(before) > 1 else 'that one'}.")


def follows_note(result: CaseResult, failed_above: set[str], short: bool = False) -> str:
    """The note for a failing case whose call was seen reaching a function that already failed above it; '' when
    none did.

    `short`: a parenthesis for the end of a hidden case's one message line (there may be a hundred of them)."""
    before = [used for used in result.reached if used in failed_above and used != result.function]
    if not before:
        return ""
    if short:
        return f"[follows](may follow from {_names(before)} failing above)[/]"
    return (f"[follows]this may follow from {_names(before)} failing above: "
            f"fix {'those' if len(before) > 1 else 'that'} first[/]")


def not_attempted(console: Console, report: Report) -> None:
    """The functions still left as stubs, when some of the file is written and some is not."""
    functions = list(dict.fromkeys(r.function for r in report.results if r.outcome is Outcome.NOT_ATTEMPTED))
    if functions and not report.all_not_attempted:
        say(console, f"[not attempted]Not attempted yet:[/] {_names(functions)} "
                     f"({'they raise' if len(functions) > 1 else 'it raises'} NotImplementedError).")


def verdict(report: Report) -> str:
    """'Not accepted: 3 of 163 cases failed and 20 are not attempted yet.'"""
    total = len(report.results)
    wrong, todo = report.failed - report.not_attempted, report.not_attempted
    parts = [f"{wrong} of {total} cases failed"] if wrong else []
    if todo:
        parts.append(f"{todo}{'' if wrong else f' of {total}'} {'is' if todo == 1 else 'are'} not attempted yet")
    return f"[rejected]Not accepted:[/] {' and '.join(parts)}."


def _names(names: list[str]) -> str:
    return ", ".join(f"[code]{show(name)}[/]" for name in names)


def _cases(count: int, kind: str) -> str:
    return f"{count} {kind}case{'s' * (count != 1)}"


def _count(results: list[CaseResult], outcome: Outcome) -> int:
    return sum(r.outcome is outcome for r in results)
