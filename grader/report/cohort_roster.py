"""A gradebook of learners: grades.csv with a row per roster learner, and its section of report.html."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

from grader.report.cohort_csv import _cell, _number
from grader.results.cohort import Entry, suites
from grader.results.learners import LatePolicy, Row

COLUMNS = ("id", "name", "email", "submission", "score", "max_score")
AFTER = ("status", "diagnosis", "reason", "graded_score", "submitted_at", "late", "late_days_used", "late_penalty",
         "extra_time", "override_reason", "adjustments", "in_roster")


def max_score(entries: list[Entry]) -> float | None:
    maxima = {entry.max_score for entry in entries if entry.max_score is not None}
    return max(maxima) if maxima else None


def roster_csv(rows: list[Row], unmatched: list[Row], entries: list[Entry], policy: LatePolicy,
               similar_to: dict[str, str] | None = None) -> str:
    """The learners in roster order, then the entries no roster row names (in_roster "no"), every adjustment shown;
    with `similar_to` (grader/report/similarity_report.py), a last column naming the submissions flagged alike."""
    names = suites(entries)
    top = max_score(entries)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    similar = ["similar_to"] if similar_to is not None else []
    writer.writerow([*COLUMNS, *names, *AFTER, *similar])
    for row in rows + unmatched:
        learner, entry = row.learner, row.entry
        earned = entry.suite_scores() if entry and row.graded is not None else {}
        writer.writerow([
            _cell(learner.id if learner else ""), _cell(learner.name if learner else ""),
            _cell(learner.email if learner else ""),
            _cell(learner.submission if learner else entry.name if entry else ""),
            _number(row.score), _number(entry.max_score if entry and entry.max_score is not None else top),
            *[_number(earned[name]) if name in earned else "" for name in names],
            row.status, _cell(entry.diagnosis if entry else ""), _cell(row.reason), _number(row.graded),
            row.submitted_at.isoformat(timespec="seconds") if row.submitted_at else "",
            f"{row.late} {policy.unit}{'s' * (row.late != 1)}" if row.late else "", row.excused or "",
            _number(row.penalty) if row.late else "", _number(row.extra_time) if row.extra_time != 1.0 else "",
            _cell(learner.override_reason if learner and learner.override is not None else ""),
            _cell("; ".join(row.notes)), "yes" if learner else "no",
            *([_cell(similar_to.get(entry.id, "") if entry else "")] if similar_to is not None else [])])
    return buffer.getvalue()


@dataclass(frozen=True)
class Line:
    """A row of report.html's learners: its named cells (id, name, submission; an entry's name alone), the score
    that counts, the grader's, the status and the adjustments."""

    cells: list[str]
    score: str
    graded: str
    status: str
    adjustments: str


@dataclass(frozen=True)
class RosterSection:
    """report.html's learners (templates/roster.html.j2): counts, the due date, a line each, the entries apart."""

    count: int
    statuses: str    # "1 missing, 3 passed"
    due: str         # "" without a due date
    rule: str        # the late penalty, "10%/day"
    learners: list[Line]
    apart: list[Line]


def roster_section(rows: list[Row], unmatched: list[Row], policy: LatePolicy) -> RosterSection:
    """report.html's learners: counts, the due date, each learner's score and adjustments, then the entries apart."""
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.status] = counts.get(row.status, 0) + 1
    shown = ", ".join(f"{count} {status}" for status, count in sorted(counts.items()))
    due = policy.due.isoformat(timespec="minutes") if policy.due else ""
    learners = []
    for row in rows:
        learner = row.learner
        assert learner is not None
        learners.append(_line([learner.id, learner.name, learner.submission], row))
    apart = []
    for row in unmatched:
        assert row.entry is not None
        apart.append(_line([row.entry.name], row))
    return RosterSection(len(rows), shown, due, policy.rule, learners, apart)


def _line(cells: list[str], row: Row) -> Line:
    return Line(cells, _number(row.score), _number(row.graded), row.status,
                "; ".join(row.notes + ([row.reason] if row.reason else [])))
