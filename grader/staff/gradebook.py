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
from grader.report.feedback import write_feedback
from grader.report.similarity_report import similar_to, similarity_csv
from grader.results.cohort import RESULTS, Entry, Summary, check_consistent, load_entries, read_entry, summarize
from grader.results.similarity import compare


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


def write_gradebook(out: Path, entries: list[Entry]) -> Summary:
    """grades.csv, similarity.csv, report.html and feedback/ from `entries`, written atomically; the summary."""
    check_consistent(entries)
    summary = summarize(entries)
    similarity = compare(entries)
    write_atomic(out / "grades.csv", grades_csv(entries, similar_to(similarity)))
    write_atomic(out / "similarity.csv", similarity_csv(similarity))
    write_feedback(out, entries)
    write_atomic(out / "report.html", render_html(summary, entries, similarity))
    return summary


def merge(folders: list[Path], out: Path) -> Summary:
    """Shards' results joined in `out`: every results file, then grades.csv and report.html over all of them."""
    found: dict[str, Path] = {}
    for folder in folders:
        if not (folder / RESULTS).is_dir():
            raise UsageError(f"{folder}: no {RESULTS}/ folder here: not the output of `grader grade`")
        for path in sorted((folder / RESULTS).glob("*.json")):
            if path.stem not in found:
                try:
                    read_entry(path)  # a file that is not a results file stops the merge, naming it
                except ValueError as error:
                    raise UsageError(str(error)) from None
                found[path.stem] = path
            elif read_key(path) != read_key(found[path.stem]) or not read_key(path):
                # The same content under the same settings is the same verdict; anything else is ambiguous.
                raise UsageError(f"{path.stem} is in both {found[path.stem].parent.parent} and {folder}, graded "
                                 f"from different files or settings: shards must not overlap")
    for submission_id, path in found.items():
        target = results_path(out, submission_id)
        if target.resolve() != path.resolve():
            write_atomic(target, path.read_text(encoding="utf-8"))
    # Only what was merged: a results file already in `out` from something else is not part of this gradebook.
    return write_gradebook(out, load_entries(out, set(found)))
