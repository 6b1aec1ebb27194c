"""Writing a cohort's gradebook: one results file per submission, and what is derived from them alone
(grades.csv, report.html), so that shards merged give what one run gives; with a roster, a row per learner."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from grader.errors import UsageError
from grader.files import write_atomic
from grader.report.cohort_csv import grades_csv
from grader.report.cohort_html import render_html
from grader.report.cohort_roster import max_score, roster_csv, roster_section
from grader.report.feedback import write_feedback, write_learner_feedback
from grader.report.similarity_report import similar_to, similarity_csv
from grader.results import file
from grader.results.book import BOOK_FILE, BookFile, ShardFile, decode_book, encode_book
from grader.results.cohort import (
    NOT_GRADED,
    RESULTS,
    Entry,
    Summary,
    check_consistent,
    load_entries,
    read_entry,
    summarize,
)
from grader.results.learners import LatePolicy, Learner, Row, build_rows, counted_scores, late_policy
from grader.results.similarity import compare
from grader.results.typed import Mismatch
from grader.staff.shards import problems, read_record, write_record

BOOK = BOOK_FILE  # the roster and late policy a gradebook is kept with, applied again on every run


@dataclass(frozen=True)
class Roster:
    """The learners a gradebook has a row for, where they were read from, and the late policy."""

    path: Path
    learners: list[Learner]
    policy: LatePolicy
    due: str = ""   # as given, kept in gradebook.json
    rule: str = ""


def roster_of(out: Path, roster: Path | None = None, due: str | None = None, rule: str | None = None
              ) -> Roster | None:
    """The gradebook's roster: the one given, else the one it was kept with (read again: its edits apply now);
    None for a gradebook of submissions alone."""
    from grader.staff.roster import read_roster

    kept = _kept(out)
    path = Path(roster).absolute() if roster else Path(kept.roster) if kept.roster else None
    due = due if due is not None else kept.due or None
    rule = rule if rule is not None else kept.late_penalty or None
    if path is None:
        if due or rule:
            raise UsageError("--due and --late-penalty apply to a roster's learners: give --roster too")
        return None
    try:
        policy = late_policy(due, rule)
    except ValueError as error:
        raise UsageError(str(error)) from None
    return Roster(path, read_roster(path), policy, due or "", rule or "")


def _kept(out: Path) -> BookFile:
    try:
        return decode_book((out / BOOK).read_bytes())
    except FileNotFoundError:
        return BookFile()
    except Mismatch:
        raise UsageError(f"{out / BOOK}: not a gradebook's settings; fix or delete it") from None
    except (OSError, ValueError) as error:
        raise UsageError(f"{out / BOOK}: not a gradebook's settings ({type(error).__name__}); fix or delete it") \
            from None


def export(out: Path, kind: str, target: Path | None, assignment: str | None) -> tuple[Path, int]:
    """The gradebook's scores as Canvas or Gradescope import them, written to `target` (default BOOK/KIND.csv);
    the path and how many learners it holds."""
    from grader.report.cohort_exports import FORMATS, export_csv

    if kind not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}")
    if not (out / RESULTS).is_dir():
        raise UsageError(f"{out}: no {RESULTS}/ folder here: not the output of `grader grade`")
    roster = roster_of(out)
    if roster is None:
        raise UsageError(f"{out} has no roster: grade it with --roster roster.csv first (an export needs learners)")
    entries = load_entries(out)
    check_consistent(entries)
    rows, _ = build_rows(roster.learners, entries, roster.policy)
    name = assignment or ", ".join(sorted({entry.exercise for entry in entries})) or "grader"
    target = target or out / f"{kind}.csv"
    write_atomic(target, export_csv(kind, rows, name, max_score(entries)))
    return target, len(rows)


def results_path(out: Path, submission_id: str) -> Path:
    return out / RESULTS / f"{submission_id}.json"


def write_result(out: Path, submission_id: str, results: file.ResultsFile) -> None:
    write_atomic(results_path(out, submission_id), file.encode(results))


def read_key(path: Path) -> str:
    """The key a results file was graded under; '' when it has none or cannot be read (then it is graded again).
    A UsageError for one a newer grader wrote: this one must not grade over it."""
    try:
        about = file.read(path).extra_data.submission
    except file.NewerFormat as error:
        raise UsageError(f"{path}: {error}") from None
    except (OSError, ValueError):
        return ""
    return about.key if about is not None else ""


def write_gradebook(out: Path, entries: list[Entry], exercise: str = "", roster: Roster | None = None
                   ) -> tuple[Summary, list[Row], list[Row]]:
    """grades.csv, similarity.csv, feedback/ and report.html from `entries`, written atomically; with a roster, a
    row per learner (and the entries no row names, apart), each learner's feedback, and gradebook.json keeping
    the roster. The summary they show (of `exercise` when there is no entry to name it: an empty shard), the
    learners' rows and the rows apart (none without a roster)."""
    check_consistent(entries)
    summary = summarize(entries)
    summary.exercise = summary.exercise or exercise
    similarity = compare(entries)
    alike = similar_to(similarity)
    # An empty shard's gradebook is empty, roster or not (docs/staff: its grades.csv is its header alone): its learners'
    # rows are the shards' that hold their submissions.
    rows, unmatched = build_rows(roster.learners, entries, roster.policy) if roster and entries else ([], [])
    if roster is not None:
        summary.counted = counted_scores(rows)  # what the headline shows: the scores that count
    if roster is None:
        grades, learners = grades_csv(entries, alike), None
    else:
        grades = roster_csv(rows, unmatched, entries, roster.policy, alike)
        learners = roster_section(rows, unmatched, roster.policy)
    write_atomic(out / "grades.csv", grades)
    write_atomic(out / "similarity.csv", similarity_csv(similarity))
    write_learner_feedback(out, rows, write_feedback(out, entries))
    write_atomic(out / "report.html", render_html(summary, entries, similarity, learners))
    if roster is not None:
        kept = BookFile(roster=str(roster.path), due=roster.due, late_penalty=roster.rule)
        write_atomic(out / BOOK, encode_book(kept))
    return summary, rows, unmatched


def to_retry(entries: list[Entry]) -> int:
    """How many of `entries` have no verdict that stands (no key: a grader error, a file that could not be read),
    so that the next run grades them again: what makes a run, or a merge, incomplete."""
    return sum(not entry.key for entry in entries)


def merge(folders: list[Path], out: Path) -> tuple[Summary, int, list[Row], list[Row]]:
    """Shards' results joined in `out`, once their records say they are every shard of one cohort graded one way:
    every results file, then grades.csv, report.html and shard.json over all of them; the summary, how many
    submissions await a retry, and with a roster the learners' rows and the rows apart."""
    records = [read_record(folder) for folder in folders]
    held = {record.folder: {path.stem for path in (record.folder / RESULTS).glob("*.json")}
            for record in records}
    lines = problems(records, held)
    if lines:
        raise UsageError(f"the {len(folders)} folders are not one cohort's shards ({len(lines)} "
                         f"problem{'s' * (len(lines) != 1)}):\n" + "\n".join(f"  {line}" for line in lines))
    kept = {_kept(folder) for folder in folders}
    if len(kept) > 1:
        raise UsageError(f"the shards were graded with different rosters or due dates (their {BOOK}): grade them "
                         f"again with the same ones")
    found = {submission_id: results_path(record.folder, submission_id)
             for record in records for submission_id in record.submissions}
    read: dict[str, Entry] = {}
    for submission_id, path in found.items():
        try:
            read[submission_id] = read_entry(path)  # a file that is not a results file stops the merge, naming it
        except ValueError as error:
            raise UsageError(str(error)) from None
    for submission_id, path in found.items():
        target = results_path(out, submission_id)
        if target.resolve() != path.resolve():
            write_atomic(target, path.read_text(encoding="utf-8"))
    # Only what was merged, in results-file order: a results file already in `out` from something else is not
    # part of this gradebook.
    entries = [read[submission_id] for submission_id in sorted(read, key=lambda key: results_path(out, key).name)]
    settings = _kept(folders[0])
    first = records[0]
    roster = roster_of(out, Path(settings.roster), settings.due, settings.late_penalty) if settings.roster else None
    summary, rows, unmatched = write_gradebook(out, entries, first.exercise, roster)
    retry = to_retry(entries)
    write_record(out, ShardFile(exercise=first.exercise, settings=first.settings, shard="1/1", submissions=list(found),
                                cohort=first.cohort, cohort_size=first.cohort_size,
                                not_graded=summary.statuses.get(NOT_GRADED, 0), to_retry=retry))
    return summary, retry, rows, unmatched
