"""A gradebook's scores in the files course platforms import: Canvas's gradebook CSV, Gradescope's score upload."""

from __future__ import annotations

import csv
import io
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from grader.results.learners import Learner, Row

    # A writer: the CSV writer to fill, each roster learner with their score (None: not known yet), the assignment's
    # name and its points.
    Writer = Callable[[Any, list[tuple[Learner, float | None]], str, float | None], None]

CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")  # then one column per assignment
GRADESCOPE_COLUMNS = ("Name", "SID", "Email", "Total Score")


def canvas_csv(writer: Any, learners: list[tuple[Learner, float | None]], assignment: str,
               max_score: float | None) -> None:
    """Canvas's gradebook import: the assignment's column under its name, its points on the row below the header."""
    from grader.report.cohort_csv import _cell, _number

    writer.writerow([*CANVAS_COLUMNS, _cell(assignment)])
    # Canvas reads the row under the header as the assignment's points when its first cell says so.
    writer.writerow(["Points Possible", "", "", "", "", _number(max_score)])
    for learner, score in learners:
        fields = learner.fields
        writer.writerow([_cell(learner.name), _cell(fields.get("canvas_id", "")), _cell(learner.id),
                         _cell(fields.get("sis_login_id", "")), _cell(fields.get("section", "")), _number(score)])


def gradescope_csv(writer: Any, learners: list[tuple[Learner, float | None]], assignment: str,
                   max_score: float | None) -> None:
    """Gradescope's score upload: a row per learner, with the roster's SID (else its id), email and total score."""
    from grader.report.cohort_csv import _cell, _number

    writer.writerow(GRADESCOPE_COLUMNS)
    for learner, score in learners:
        writer.writerow([_cell(learner.name), _cell(learner.fields.get("sid", learner.id)), _cell(learner.email),
                         _number(score)])


# Every platform `grader gradebook export --format` writes for, with its writer: `--format`'s choices are its keys.
# Light to import (the CSV helpers are imported when a writer runs), since the command line's parser reads it.
WRITERS: dict[str, Writer] = {
    "canvas": canvas_csv,
    "gradescope": gradescope_csv,
}
FORMATS = tuple(WRITERS)


def export_csv(kind: str, rows: list[Row], assignment: str, max_score: float | None) -> str:
    """The roster's learners (never the entries no row names) as `kind` imports them; a score not known yet is left
    empty, so that the import leaves that learner's grade as it is."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    learners = [(row.learner, row.score) for row in rows if row.learner is not None]
    WRITERS[kind](writer, learners, assignment, max_score)
    return buffer.getvalue()
