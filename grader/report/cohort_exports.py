"""A gradebook's scores in the files course platforms import: Canvas's gradebook CSV, Gradescope's score upload."""

from __future__ import annotations

import csv
import io

from grader.report.cohort_csv import _cell, _number
from grader.results.learners import Row

FORMATS = ("canvas", "gradescope")
CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")  # then one column per assignment
GRADESCOPE_COLUMNS = ("Name", "SID", "Email", "Total Score")


def export_csv(kind: str, rows: list[Row], assignment: str, max_score: float | None) -> str:
    """The roster's learners (never the entries no row names) as `kind` imports them; a score not known yet is left
    empty, so that the import leaves that learner's grade as it is."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    learners = [(row.learner, row.score) for row in rows if row.learner is not None]
    if kind == "canvas":
        writer.writerow([*CANVAS_COLUMNS, _cell(assignment)])
        # Canvas reads the row under the header as the assignment's points when its first cell says so.
        writer.writerow(["Points Possible", "", "", "", "", _number(max_score)])
        for learner, score in learners:
            fields = learner.fields
            writer.writerow([_cell(learner.name), _cell(fields.get("canvas_id", "")), _cell(learner.id),
                             _cell(fields.get("sis_login_id", "")), _cell(fields.get("section", "")), _number(score)])
    else:
        writer.writerow(GRADESCOPE_COLUMNS)
        for learner, score in learners:
            writer.writerow([_cell(learner.name), _cell(learner.fields.get("sid", learner.id)), _cell(learner.email),
                             _number(score)])
    return buffer.getvalue()
