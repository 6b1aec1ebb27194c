"""report.html's bars, as rows whose labels wrap, and its cases grouped by function and suite, worst first."""

from __future__ import annotations

from dataclasses import dataclass

from grader.results.cohort import SUITE_ORDER, Entry, Summary

COLOURS = {"good": "#2e7d32", "middling": "#f9a825", "bad": "#c62828", "bar": "#3f51b5"}


@dataclass(frozen=True)
class Bar:
    """One row of a table of bars (templates/bars.html.j2): its name, how wide, the text after it, its colour."""

    name: str
    width: str   # of the column, "42.0%"
    text: str
    colour: str


def bar(name: str, fraction: float, text: str, colour: str) -> Bar:
    """A bar `fraction` of the full width; the shortest still shows."""
    return Bar(name, f"{max(fraction, 0.005) * 100:.1f}%", text, colour)


@dataclass(frozen=True)
class CaseGroup:
    """One function and suite: its line (how many cases failed, the worst named), then its cases, worst first."""

    function: str
    suite: str
    colour: str      # of its worst case's pass rate
    status: str
    failed: list[Bar]
    passed: list[Bar]
    passed_count: str  # "3 cases"


@dataclass(frozen=True)
class Cases:
    """report.html's cases: what was left out of the count, and the groups (none: no case ran)."""

    left_out: str
    groups: list[CaseGroup]


def rate_colour(rate: float) -> str:
    return COLOURS["good"] if rate >= 0.9 else COLOURS["middling"] if rate >= 0.5 else COLOURS["bad"]


def groups(summary: Summary, entries: list[Entry]) -> list[tuple[str, str, list[tuple[str, int, int]]]]:
    """(function, suite, cases) per group, each group's cases by pass rate (lowest first), the worst group first."""
    where: dict[str, tuple[str, str]] = {}
    for entry in entries:
        for test in entry.tests:
            where.setdefault(test.name, (test.function, test.suite))
    grouped: dict[tuple[str, str], list[tuple[str, int, int]]] = {}
    for name, passed, ran in summary.cases:
        grouped.setdefault(where.get(name, ("", "")), []).append((name, passed, ran))

    def rate(case: tuple[str, int, int]) -> float:
        return case[1] / case[2] if case[2] else 1.0

    def suite_rank(suite: str) -> tuple[int, str]:
        return (SUITE_ORDER.index(suite), "") if suite in SUITE_ORDER else (len(SUITE_ORDER), suite)

    found = [(function, suite, sorted(cases, key=lambda case: (rate(case), case[0])))
             for (function, suite), cases in grouped.items()]
    return sorted(found, key=lambda group: (rate(group[2][0]), suite_rank(group[1]), group[0]))


def cases_section(summary: Summary, entries: list[Entry]) -> Cases:
    """Every case's pass rate, one line per function and suite naming its worst case; the cases folded under it."""
    left_out = ""
    if summary.cases and summary.left_out:
        one = summary.left_out == 1
        left_out = (f"{summary.left_out} submission{'' if one else 's'} whose file did not import "
                    f"{'is' if one else 'are'} not counted here: {'it fails' if one else 'they fail'} every case "
                    f"alike.")
    found = []
    for function, suite, cases in groups(summary, entries):
        failing = [case for case in cases if case[1] < case[2]]
        name, passed, ran = cases[0]
        rate = passed / ran if ran else 1.0
        status = (f"{len(failing)} of {len(cases)} case{'s' * (len(cases) != 1)} failed by someone; lowest "
                  f"{rate:.0%}: {name}" if failing else f"all {len(cases)} cases passed by every submission")
        perfect = cases[len(failing):]
        found.append(CaseGroup(function, suite, rate_colour(rate), status, _rows(failing), _rows(perfect),
                               f"{len(perfect)} case{'s' * (len(perfect) != 1)}"))
    return Cases(left_out, found)


def _rows(cases: list[tuple[str, int, int]]) -> list[Bar]:
    rows = []
    for name, passed, ran in cases:
        rate = passed / ran if ran else 0.0
        rows.append(bar(name, rate, f"{passed}/{ran} ({rate:.0%})", rate_colour(rate)))
    return rows
