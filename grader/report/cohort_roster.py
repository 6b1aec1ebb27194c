"""A gradebook of learners: grades.csv with a row per roster learner, and its section of report.html."""

from __future__ import annotations

import csv
import io

from grader.report.cohort_csv import _cell, _number
from grader.report.cohort_html import esc
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


def roster_section(rows: list[Row], unmatched: list[Row], policy: LatePolicy) -> str:
    """report.html's learners: counts, the due date, each learner's score and adjustments, then the entries apart."""
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.status] = counts.get(row.status, 0) + 1
    shown = ", ".join(f"{count} {status}" for status, count in sorted(counts.items()))
    due = (f"<p>Due {esc(policy.due.isoformat(timespec='minutes'))}"
           + (f", late penalty {esc(policy.rule)}" if policy.rule else "") + ".</p>") if policy.due else ""
    parts = ["<h2>Learners</h2>", f"<p>{len(rows)} learners on the roster: {esc(shown)}.</p>", due,
             ("<table><tr><th>id</th><th>name</th><th>submission</th><th>score</th><th>graded</th><th>status</th>"
              "<th>adjustments</th></tr>")]
    for row in rows:
        learner = row.learner
        assert learner is not None
        parts.append(_line([learner.id, learner.name, learner.submission], row))
    parts.append("</table>")
    if unmatched:
        parts += [f"<h2>Entries no roster row names ({len(unmatched)})</h2>",
                  ("<p>Graded, but in no learner's row: name them in the roster's <code>submission</code> column."
                   "</p><table><tr><th>entry</th><th>score</th><th>status</th></tr>")]
        for row in unmatched:
            assert row.entry is not None
            parts.append(f"<tr><td>{esc(row.entry.name)}</td><td class=\"number\">{_number(row.score)}</td>"
                         f"<td class=\"{row.status.replace(' ', '-')}\">{esc(row.status)}</td></tr>")
        parts.append("</table>")
    return "\n".join(part for part in parts if part)


def _line(cells: list[str], row: Row) -> str:
    named = "".join(f"<td>{esc(cell)}</td>" for cell in cells)
    return (f"<tr>{named}<td class=\"number\">{_number(row.score)}</td><td class=\"number\">{_number(row.graded)}"
            f"</td><td class=\"{row.status.replace(' ', '-')}\">{esc(row.status)}</td>"
            f"<td>{esc('; '.join(row.notes + ([row.reason] if row.reason else [])))}</td></tr>")
