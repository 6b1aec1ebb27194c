"""grades.csv: one row per submission, its scores, status, diagnosis and reason, safe to open in a spreadsheet."""

from __future__ import annotations

import csv
import io

from grader.results.cohort import NOT_GRADED, Entry, suites

CSV_FORMULA = ("=", "+", "-", "@", "\t", "\r")  # a spreadsheet runs a cell starting so as a formula


def grades_csv(entries: list[Entry], similar_to: dict[str, str] | None = None) -> str:
    """One row per submission: scores (total, then per suite), status, the most common diagnosis, the reason;
    with `similar_to` (grader/report/similarity_report.py), a last column naming the submissions flagged alike."""
    names = suites(entries)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    similar = ["similar_to"] if similar_to is not None else []
    writer.writerow(["submission", "score", "max_score", *names, "status", "diagnosis", "reason", *similar])
    for entry in entries:
        graded = entry.status != NOT_GRADED
        earned = entry.suite_scores()
        writer.writerow([_cell(entry.id), _number(entry.score) if graded else "", _number(entry.max_score),
                         *[_number(earned[name]) if graded and name in earned else "" for name in names],
                         entry.status, _cell(entry.diagnosis), _cell(entry.reason),
                         *([_cell(similar_to.get(entry.id, ""))] if similar_to is not None else [])])
    return buffer.getvalue()


def _number(value: float | None) -> str:
    return "" if value is None else f"{round(value, 4):g}"


def _cell(text: str) -> str:
    # A learner's file name lands in the reason; a spreadsheet must read it as text, never run it.
    return "'" + text if text.startswith(CSV_FORMULA) else text
