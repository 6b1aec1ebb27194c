"""Staff views that count what counts: the scores that count lead the headline, a crash is called one, an override's
reason stays the staff's unless the roster shows it, one score per learner's feedback, an empty shard's gradebook."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest
from test_cohort_report import _test, write_results

from grader.report.cohort_terminal import print_summary
from grader.report.terminal import make_console
from grader.results import CaseResult, Outcome
from grader.results.cohort import CohortRun, load_entries
from grader.results.from_report import case_test
from grader.results.learners import LatePolicy
from grader.staff import gradebook
from grader.staff.roster import RosterError, read_roster

SEGFAULT = ("crashed: the worker process ended (SIGSEGV) while running this case (a segmentation fault: memory read "
            "or written through ctypes or a C extension)")
ROSTER = ("id,name,email,submission,override,override_reason,override_reason_shown\n"
          "a1,Ada,ada@uni.example,ada,,,\n"
          "b2,Ben,ben@uni.example,ben,8,regrade #12; also rude in office hours,\n"
          "c3,Cyd,cyd@uni.example,cyd,9,partial credit for the ring after your regrade request,yes\n"
          "d4,Dee,dee@uni.example,,,,\n")


def _cases(outcome: str, count: int, message: str = "") -> list[dict]:
    return [_test(f"case-{outcome.replace(' ', '-')}-{number}", "ring_attention", "hidden" if number % 2 else "examples",
                  outcome, message, f"{message or outcome}\nchecks: something") for number in range(count)]


def _book(tmp_path: Path) -> Path:
    """Ada passed 10 of 10; Ben's file crashed on 7 cases of 10 (overridden to 8); Cyd failed 5 of 10 (overridden to
    9, the reason shown); Dee handed nothing in."""
    book = tmp_path / "book"
    write_results(book, "ada", _cases("passed", 10), "passed")
    write_results(book, "ben", _cases("passed", 3) + _cases("crashed", 7, SEGFAULT), "failed")
    write_results(book, "cyd", _cases("passed", 5) + _cases("failed", 5, "output is wrong"), "failed")
    (tmp_path / "roster.csv").write_text(ROSTER)
    return book


def _rows(path: Path) -> dict[str, dict[str, str]]:
    with open(path, newline="") as handle:
        return {row.get("id") or row["submission"]: row for row in csv.DictReader(handle)}


def _written(tmp_path: Path, roster: bool = True) -> tuple[Path, str]:
    """The gradebook written from the results alone, and the terminal's summary of it."""
    book = _book(tmp_path)
    path = tmp_path / "roster.csv"
    kept = gradebook.Roster(path, read_roster(path), LatePolicy()) if roster else None
    summary, rows, unmatched = gradebook.write_gradebook(book, load_entries(book), "07-ring-attention", kept)
    out = io.StringIO()
    print_summary(CohortRun(summary, book, rows=rows, unmatched=unmatched), make_console(out, width=200))
    return book, out.getvalue()


def test_a_crashing_submission_is_crashed_with_its_reason_in_every_view(tmp_path) -> None:
    book, said = _written(tmp_path, roster=False)
    ben = _rows(book / "grades.csv")["ben"]
    assert (ben["status"], ben["reason"]) == ("crashed", f"7 of 10 cases crashed: {SEGFAULT[len('crashed: '):]}")
    assert _rows(book / "grades.csv")["cyd"]["status"] == "failed"  # its failures are wrong values
    assert "status: 1 passed, 1 failed, 1 crashed" in said
    page = (book / "report.html").read_text()
    assert "<summary>7 crashed</summary>" in page and "<summary>5 failed</summary>" in page and " failing<" not in page
    feedback = (book / "feedback/ben.md").read_text()
    assert "**Score:** 3 of 10 (crashed)" in feedback
    # Its 7 crashes are one cause of failure: said once, with the cases it covers named.
    assert feedback.count("**Verdict:** crashed: the worker process ended (SIGSEGV)") == 1
    assert "crashed: crashed" not in feedback
    # What Gradescope shows the learner says it once too.
    result = CaseResult("a-case", "examples", "ring_attention", "cpu", Outcome.CRASHED, SEGFAULT)
    assert case_test(1, result).output.splitlines()[0] == SEGFAULT


def test_the_headline_is_of_the_scores_that_count(tmp_path) -> None:
    book, said = _written(tmp_path)
    # Counted: Ada 10, Ben 8 and Cyd 9 (overrides), Dee 0 (missing): mean 6.75. Graded: 10, 3, 5: mean 6.
    assert "score of 10 that counts: mean 6.75, median 8.5 (4 learners: 1 missing (0), 2 adjusted)" in said
    assert "graded score of 10: mean 6, median 5 (3 graded)" in said
    page = (book / "report.html").read_text()
    text = " ".join(re.sub(r"<[^>]+>", " ", page).split())
    assert "Score of 10 that counts: mean 6.75 , median 8.5 (4 learners: 1 missing (0), 2 adjusted; lowest 0, " \
           "highest 10)" in text and "graded: mean 6, median 5 (3 graded)" in text
    assert "score (learners per tenth of 10)" in page
    counts = {int(column) for column in re.findall(r"<title>(\d+) scored", page)}
    assert sum(int(n) for n in re.findall(r"<title>(\d+) scored", page)) == 4 and counts <= {0, 1, 2}


def test_an_override_reason_reaches_the_learner_only_where_the_roster_shows_it(tmp_path) -> None:
    book, _ = _written(tmp_path)
    rows = _rows(book / "grades.csv")
    assert rows["b2"]["override_reason"] == "regrade #12; also rude in office hours"  # staff see every reason
    assert "shown to the learner" in rows["c3"]["adjustments"] and "shown" not in rows["b2"]["adjustments"]
    ben = (book / "feedback/learners/b2.md").read_text().replace("\\", "")
    cyd = (book / "feedback/learners/c3.md").read_text().replace("\\", "")
    for text in (ben, cyd, (book / "feedback/learners/b2.html").read_text()):
        assert "rude" not in text
    assert "**Score:** 8 of 10 (crashed)" in ben and ben.count("Score") == 1
    assert "**Adjusted:** graded 3 of 10; set to 8 by the course staff\n" in ben
    assert ("**Adjusted:** graded 5 of 10; set to 9 by the course staff: partial credit for the ring after your "
            "regrade request") in cyd and cyd.count("Score") == 1


@pytest.mark.parametrize(("row", "words"), [
    ("e5,Eve,eve@uni.example,ada,7,fine,maybe", "override_reason_shown 'maybe' must be yes or no"),
    ("e5,Eve,eve@uni.example,ada,,,yes", "override_reason_shown says to show an override's reason, but the row"),
])
def test_a_shown_mark_that_does_not_read_is_one_line_naming_the_line(tmp_path, row, words) -> None:
    path = tmp_path / "roster.csv"
    path.write_text(ROSTER + row + "\n")
    with pytest.raises(RosterError) as refused:
        read_roster(path)
    assert str(refused.value).startswith(f"{path}:6: {words}"), refused.value


def test_an_empty_shard_with_a_roster_writes_grades_csv_as_its_header_alone(tmp_path) -> None:
    (tmp_path / "roster.csv").write_text(ROSTER)
    path, book = tmp_path / "roster.csv", tmp_path / "empty"
    (book / "results").mkdir(parents=True)
    roster = gradebook.Roster(path, read_roster(path), LatePolicy())
    summary, rows, _ = gradebook.write_gradebook(book, [], "07-ring-attention", roster)
    lines = (book / "grades.csv").read_text().splitlines()
    assert len(lines) == 1 and lines[0].startswith("id,name,email,submission,score,max_score,status"), lines
    assert rows == [] and summary.headline == [] and not (book / "feedback").exists()
