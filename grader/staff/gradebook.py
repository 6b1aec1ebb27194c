"""Writing a cohort's gradebook: one results file per submission, and what is derived from them alone
(grades.csv, report.html), so that shards merged give what one run gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from grader.errors import UsageError
from grader.files import write_atomic
from grader.report.cohort_csv import grades_csv
from grader.report.cohort_html import render_html
from grader.results.cohort import (NOT_GRADED, RESULTS, Entry, Summary, check_consistent, load_entries, read_entry,
                                   summarize)
from grader.staff.shards import problems, read_record, write_record


def results_path(out: Path, submission_id: str) -> Path:
    return out / RESULTS / f"{submission_id}.json"


def write_result(out: Path, submission_id: str, data: dict[str, Any]) -> None:
    write_atomic(results_path(out, submission_id), json.dumps(data, indent=2) + "\n")


def read_key(path: Path) -> str:
    """The key a results file was graded under; '' when it has none or cannot be read (then it is graded again)."""
    try:
        key = json.loads(path.read_text(encoding="utf-8"))["extra_data"]["submission"]["key"]
        return key if isinstance(key, str) else ""
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def write_gradebook(out: Path, entries: list[Entry], exercise: str = "") -> Summary:
    """grades.csv and report.html from `entries`, written atomically; the summary they show (of `exercise` when
    there is no entry to name it: an empty shard)."""
    check_consistent(entries)
    summary = summarize(entries)
    summary.exercise = summary.exercise or exercise
    write_atomic(out / "grades.csv", grades_csv(entries))
    write_atomic(out / "report.html", render_html(summary, entries))
    return summary


def to_retry(out: Path, ids: set[str]) -> int:
    """How many of `ids` have no verdict that stands (no key: a grader error, a file that could not be read), so
    that the next run grades them again: what makes a run, or a merge, incomplete."""
    return sum(not read_key(results_path(out, submission_id)) for submission_id in ids)


def merge(folders: list[Path], out: Path) -> tuple[Summary, int]:
    """Shards' results joined in `out`, once their records say they are every shard of one cohort graded one way:
    every results file, then grades.csv, report.html and shard.json over all of them; the summary and how many
    submissions await a retry."""
    records = [read_record(folder) for folder in folders]
    held = {record.folder: {path.stem for path in (record.folder / RESULTS).glob("*.json")}
            for record in records}
    lines = problems(records, held)
    if lines:
        raise UsageError(f"the {len(folders)} folders are not one cohort's shards ({len(lines)} "
                         f"problem{'s' * (len(lines) != 1)}):\n" + "\n".join(f"  {line}" for line in lines))
    found = {submission_id: results_path(record.folder, submission_id)
             for record in records for submission_id in record.submissions}
    for path in found.values():
        try:
            read_entry(path)  # a file that is not a results file stops the merge, naming it
        except ValueError as error:
            raise UsageError(str(error)) from None
    for submission_id, path in found.items():
        target = results_path(out, submission_id)
        if target.resolve() != path.resolve():
            write_atomic(target, path.read_text(encoding="utf-8"))
    # Only what was merged: a results file already in `out` from something else is not part of this gradebook.
    first = records[0]
    summary = write_gradebook(out, load_entries(out, set(found)), first.exercise)
    retry = to_retry(out, set(found))
    write_record(out, first.exercise, first.settings, (1, 1), list(found), first.cohort, first.cohort_size,
                 summary.statuses.get(NOT_GRADED, 0), retry)
    return summary, retry
