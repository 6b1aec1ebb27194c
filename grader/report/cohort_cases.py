"""report.html's bars as HTML rows whose labels wrap, and its cases grouped by function and suite, worst first."""

from __future__ import annotations

import html

from grader.inert import inert
from grader.results.cohort import SUITE_ORDER, Entry, Summary

COLOURS = {"good": "#2e7d32", "middling": "#f9a825", "bad": "#c62828", "bar": "#3f51b5"}


def esc(text: object) -> str:
    """Text for the page: controls made visible (inert), then HTML-escaped, quotes included."""
    return html.escape(inert(str(text)), quote=True)


def bars(rows: list[tuple[str, float, str, str]], label: str) -> str:
    """A table of horizontal bars, (name, fraction of the full width, text after the bar, colour) each.

    The names are table cells, wrapped by the browser as long as they are: never cut to a width."""
    body = "".join(
        f'<tr title="{esc(name)}: {esc(text)}"><td class="label">{esc(name)}</td>'
        f'<td class="bar"><div style="width:{max(fraction, 0.005) * 100:.1f}%;background:{colour}"></div></td>'
        f'<td class="count">{esc(text)}</td></tr>' for name, fraction, text, colour in rows)
    return f'<table class="bars" aria-label="{esc(label)}">{body}</table>'


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


def cases_section(summary: Summary, entries: list[Entry]) -> str:
    """Every case's pass rate, one line per function and suite naming its worst case; the cases folded under it."""
    if not summary.cases:
        return "<p>No case ran.</p>"
    parts = []
    if summary.left_out:
        one = summary.left_out == 1
        parts.append(f"<p>{summary.left_out} submission{'' if one else 's'} whose file did not import "
                     f"{'is' if one else 'are'} not counted here: {'it fails' if one else 'they fail'} every case "
                     f"alike.</p>")
    for function, suite, cases in groups(summary, entries):
        failing = [case for case in cases if case[1] < case[2]]
        name, passed, ran = cases[0]
        rate = passed / ran if ran else 1.0
        status = (f"{len(failing)} of {len(cases)} case{'s' * (len(cases) != 1)} failed by someone; lowest "
                  f"{rate:.0%}: {esc(name)}" if failing else f"all {len(cases)} cases passed by every submission")
        perfect = cases[len(failing):]
        inside = bars(_rows(failing), f"{function} {suite}: cases failed") if failing else ""
        if perfect and failing:
            inside += (f"<details><summary>{len(perfect)} case{'s' * (len(perfect) != 1)} every submission "
                       f"passed</summary>{bars(_rows(perfect), f'{function} {suite}: cases passed')}</details>")
        elif perfect:
            inside = bars(_rows(perfect), f"{function} {suite}: cases passed")
        parts.append(f'<details class="group"><summary><span class="swatch" style="background:{rate_colour(rate)}">'
                     f'</span><strong>{esc(function) if function else "cases"}'
                     f'{f" &middot; {esc(suite)}" if suite else ""}</strong> <span class="muted">{status}</span>'
                     f"</summary>{inside}</details>")
    return "".join(parts)


def _rows(cases: list[tuple[str, int, int]]) -> list[tuple[str, float, str, str]]:
    rows = []
    for name, passed, ran in cases:
        rate = passed / ran if ran else 0.0
        rows.append((name, rate, f"{passed}/{ran} ({rate:.0%})", rate_colour(rate)))
    return rows
