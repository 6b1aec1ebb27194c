"""A gradebook of learners: the roster (CSV or a Gradescope export), its errors, regrades that keep the other rows,
extra time, late penalties and overrides, and the Canvas and Gradescope exports."""

from __future__ import annotations

import contextlib
import csv
import io
import os
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest
from conftest import FIXTURES, make_course

from grader.cli import main
from grader.course import mistakes
from grader.report.cohort_exports import CANVAS_COLUMNS, GRADESCOPE_COLUMNS
from grader.staff.roster import RosterError, check_submissions, read_roster

COURSES = FIXTURES / "courses"
JOSE = "José Núñez"
DUE = "2026-12-01T23:59+00:00"
ROSTER = (
    "id,name,email,submission,extra_time,late_days,override,override_reason,submitted_at,section\n"
    "a1,Alice Ng,alice@uni.example,alice.py,,,,,,L01\n"
    "b2,Bob Okafor,bob@uni.example,bob,,1,,,2026-12-04T10:00+00:00,L01\n"
    f'j3,{JOSE},jose@uni.example,{JOSE}.py,,,7,"regrade request #12: a fair reading of the statement",,L02\n'
    "d4,Dana Weiss,dana@uni.example,,,,,,,L02\n"
)
# Gradescope's "Export Submissions" zip: a folder per submission and this file, written by Ruby (symbol keys,
# its own time format, a BigDecimal score), one group submission with two submitters.
GRADESCOPE = """---
submission_271828182:
  :submitters:
  - :name: José Núñez
    :sid: '20260017'
    :email: jose.nunez@uni.example
  :created_at: 2026-11-30 18:02:11.438112000 -08:00
  :score: !ruby/object:BigDecimal 18:0.1e2
  :status: processed
  :results:
    :score: 10.0
    :execution_time: 2.31
submission_314159265:
  :submitters:
  - :name: Mei Chen
    :sid: '20260021'
    :email: mei.chen@uni.example
  - :name: Omar Haddad
    :sid: ''
    :email: omar.haddad@uni.example
  :created_at: 2026-12-02 09:15:00.000000000 -08:00
  :score: 0.0
  :status: processed
"""


def when(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def run(*argv: str) -> tuple[int, str]:
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        code = main(list(argv))
    assert "Traceback" not in output.getvalue(), output.getvalue()
    return code, output.getvalue()


def table(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory):
    """Four learners, one who handed nothing in, two identical files and one file no roster row names, graded once:
    (base folder, submissions, roster, book, exit status, output)."""
    base = tmp_path_factory.mktemp("roster")
    root = make_course(base / "course", ["02-scale"], COURSES)
    subs = base / "subs"
    subs.mkdir()
    solution = root / "solutions/02-scale/scale.py"
    shutil.copy(solution, subs / "alice.py")
    (subs / "bob").mkdir()
    shutil.copy(solution, subs / "bob" / "scale.py")
    shutil.copy(solution, subs / f"{JOSE}.py")
    mistakes.as_submission(root / "solutions/02-scale/mistakes/one_copy_short.py", solution, subs)  # no one's
    os.utime(subs / "alice.py", (when("2026-11-30T12:00+00:00"),) * 2)  # on time, by its file time
    os.utime(subs / f"{JOSE}.py", (when("2026-12-02T12:00+00:00"),) * 2)  # a day late, then overridden
    roster = base / "roster.csv"
    roster.write_text(ROSTER, encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GRADER_ROOT", str(root))
        patch.setenv("NO_COLOR", "1")
        code, out = run("grade", str(subs), "--roster", str(roster), "--out", str(base / "book"), "--jobs", "2",
                        "--due", DUE, "--late-penalty", "10%/day")
    return base, subs, roster, base / "book", code, out


@pytest.fixture
def in_course(graded, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("GRADER_ROOT", str(graded[0] / "course"))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.chdir(graded[0])
    return graded


def test_a_row_per_learner_keyed_by_id_with_every_adjustment(graded):
    _, _, _, book, code, out = graded
    assert code == 0, out
    rows = table(book / "grades.csv")
    assert [row["id"] for row in rows] == ["a1", "b2", "j3", "d4", ""]
    by_id = {row["id"]: row for row in rows}
    alice, bob, jose, dana, stray = (by_id[key] for key in ("a1", "b2", "j3", "d4", ""))
    assert (alice["status"], alice["score"], alice["graded_score"], alice["late"]) == ("passed", "10", "10", "")
    assert alice["submitted_at"] == "2026-11-30T12:00:00+00:00" or alice["submitted_at"].startswith("2026-11-30")
    # 2 days 10 hours late: 3 days begun, 1 covered by a late day, 2 charged at 10% each.
    assert (bob["score"], bob["graded_score"], bob["late"], bob["late_days_used"], bob["late_penalty"]) == (
        "8", "10", "3 days", "1", "20")
    assert bob["adjustments"] == "3 days late, 1 covered by late days: -20% (10%/day)"
    assert (jose["name"], jose["score"], jose["graded_score"], jose["status"]) == (JOSE, "7", "10", "passed")
    assert jose["override_reason"] == "regrade request #12: a fair reading of the statement"
    assert jose["adjustments"] == ("1 day late: -10% (10%/day); override 7 (regrade request #12: a fair reading "
                                   "of the statement), graded 9")
    assert (dana["status"], dana["score"], dana["graded_score"], dana["submission"]) == ("missing", "0", "", "")
    assert (stray["submission"], stray["status"], stray["in_roster"]) == ("one_copy_short.py", "failed", "no")
    assert {row["in_roster"] for row in rows[:4]} == {"yes"}
    assert "learners: 4 on the roster: 1 missing, 3 passed" in out
    assert "1 entry no roster row names: one_copy_short.py" in out
    page = (book / "report.html").read_text(encoding="utf-8")
    assert "<h2>Learners</h2>" in page and "Entries no roster row names (1)" in page
    assert f"<td>{JOSE}</td>" in page and "Due 2026-12-01T23:59+00:00, late penalty 10%/day." in page


def test_the_exports_have_the_columns_canvas_and_gradescope_document(in_course):
    base, _, _, book, _, _ = in_course
    code, out = run("gradebook", "export", str(book), "--format", "canvas", "--assignment", "Lab 2: scale")
    assert code == 0 and "4 learners" in out, out
    with open(book / "canvas.csv", newline="", encoding="utf-8") as handle:
        lines = list(csv.reader(handle))
    assert lines[0] == [*CANVAS_COLUMNS, "Lab 2: scale"] == ["Student", "ID", "SIS User ID", "SIS Login ID",
                                                              "Section", "Lab 2: scale"]
    assert lines[1] == ["Points Possible", "", "", "", "", "10"]
    assert lines[2:] == [["Alice Ng", "", "a1", "", "L01", "10"], ["Bob Okafor", "", "b2", "", "L01", "8"],
                         [JOSE, "", "j3", "", "L02", "7"], ["Dana Weiss", "", "d4", "", "L02", "0"]]
    code, out = run("gradebook", "export", str(book), "--format", "gradescope", "--out", str(base / "gs.csv"))
    assert code == 0, out
    assert (base / "gs.csv").read_text(encoding="utf-8").splitlines() == [
        ",".join(GRADESCOPE_COLUMNS), "Alice Ng,a1,alice@uni.example,10", "Bob Okafor,b2,bob@uni.example,8",
        f"{JOSE},j3,jose@uni.example,7", "Dana Weiss,d4,dana@uni.example,0"]
    assert GRADESCOPE_COLUMNS == ("Name", "SID", "Email", "Total Score")
    # A merge keeps the roster its shards were graded with: here one shard, the whole cohort.
    code, out = run("gradebook", "merge", str(book), "--out", str(base / "merged"))
    assert code == 0 and "learners: 4 on the roster" in out, out
    assert (base / "merged/grades.csv").read_text() == (book / "grades.csv").read_text()


def test_regrading_one_learner_keeps_every_row_and_the_roster_applies_again(in_course, tmp_path):
    _, subs, roster, book, _, _ = in_course
    before = table(book / "grades.csv")
    # The file named alone, without --roster: the gradebook's own roster, read again.
    code, out = run("grade", str(subs / "alice.py"), "--out", str(book), "--force", "--jobs", "1")
    assert code == 0 and "grading 1 submission," in out, out
    assert "3 submissions not given this time kept as graded before" in out
    assert table(book / "grades.csv") == before
    # An edit of the roster is applied on the next run, whatever it grades: here, by --only and a learner's id.
    adjustments = roster.parent / "adjustments.csv"
    adjustments.write_text("id,override,override_reason\nb2,9.5,late days granted after the fact\n")
    try:
        code, out = run("grade", str(subs), "--only", "a1", "--out", str(book), "--jobs", "1")
        assert code == 0 and "1 already graded, skipped" in out, out
        after = {row["id"]: row for row in table(book / "grades.csv")}
        assert len(after) == 5 and after["b2"]["score"] == "9.5" and after["b2"]["graded_score"] == "10"
        assert after["b2"]["override_reason"] == "late days granted after the fact"
    finally:
        adjustments.unlink()
    code, out = run("grade", str(subs), "--only", "zz9", "--out", str(book))
    assert code == 2 and out.strip() == f"error: --only zz9: no learner with that id in {roster}"


def test_extra_time_raises_the_limits_of_that_learner_alone(in_course, tmp_path):
    slow = ("import time\n\ndef scale(x, factor):\n    end = time.process_time() + 1.2\n"
            "    while time.process_time() < end:\n        pass\n    return x * factor\n")
    subs = tmp_path / "subs"
    subs.mkdir()
    for name in ("quick.py", "slow.py"):
        (subs / name).write_text(slow.replace("x * factor", "sum([x] * factor, x - x)"))
    roster = tmp_path / "roster.csv"
    roster.write_text("id,name,email,submission,extra_time\nq1,Quinn,q@uni.example,quick.py,\n"
                      "s2,Sam,s@uni.example,slow.py,3x\n")
    _, out = run("grade", str(subs), "--roster", str(roster), "--out", str(tmp_path / "book"), "--jobs", "2",
                 "--time-limit", "1")
    rows = {row["id"]: row for row in table(tmp_path / "book/grades.csv")}
    assert rows["q1"]["status"] == "failed" and rows["s2"]["status"] == "passed", out
    assert rows["s2"]["extra_time"] == "3" and rows["s2"]["adjustments"] == "extra time x3"
    assert rows["q1"]["extra_time"] == ""


@pytest.mark.parametrize("text, words", [
    ("id,name,submission\na1,A,a.py\n", "roster.csv:1: no column email (it has id, name, submission)"),
    ("id,name,email,submission\na1,A,a@x,alice.py\na1,B,b@x,bob\n", "roster.csv:3: id a1 is also on line 2"),
    ("id,name,email,submission\na1,A,a@x,alice.py\n\nc3,C,c@x,carol.py\n", "roster.csv:4: carol.py is not in"),
    ("id,name,email,submission\na1,A,a@x,../alice.py\n", "roster.csv:2: submission '../alice.py' must be a name"),
    ("id,name,email,submission,extra_time\na1,A,a@x,alice.py,slow\n", "roster.csv:2: 'slow' is not a number"),
    ("id,name,email,submission,override\na1,A,a@x,alice.py,3\n", "roster.csv:2: an override needs an override_"),
    ("id,name,email,submission,submitted_at\na1,A,a@x,alice.py,friday\n", "roster.csv:2: 'friday' is not a time"),
])
def test_a_roster_error_is_one_line_naming_the_file_and_line(in_course, tmp_path, text, words):
    _, subs, _, _, _, _ = in_course
    (tmp_path / "roster.csv").write_text(text)
    code, out = run("grade", str(subs), "--roster", str(tmp_path / "roster.csv"), "--out", str(tmp_path / "b"))
    assert code == 2 and len(out.strip().splitlines()) == 1 and f"error: {tmp_path}/{words}" in out, out


def test_a_roster_not_in_utf8_or_with_a_bad_adjustment_is_refused(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_bytes("id,name,email,submission\na1,Ana,a@x,\nj3,José,j@x,\n".encode("latin-1"))
    with pytest.raises(RosterError, match=r"roster.csv:3: not UTF-8 \(byte 0xe9\): save it as UTF-8 CSV"):
        read_roster(roster)
    roster.write_bytes(("\ufeff" + ROSTER).encode("utf-8"))  # what a spreadsheet saves: a byte-order mark first
    assert [learner.name for learner in read_roster(roster)][2] == JOSE
    (tmp_path / "adjustments.csv").write_text("id,late_days\nb2,2\nzz,1\n")
    with pytest.raises(RosterError, match=r"adjustments.csv:3: id zz is not in the roster"):
        read_roster(roster)


def test_a_gradescope_export_is_a_roster(in_course, tmp_path):
    export = tmp_path / "assignment_4242_export"
    for folder in ("submission_271828182", "submission_314159265"):
        (export / folder).mkdir(parents=True)
        shutil.copy(in_course[0] / "course/solutions/02-scale/scale.py", export / folder / "scale.py")
    (export / "submission_metadata.yml").write_text(GRADESCOPE, encoding="utf-8")
    learners = read_roster(export)
    assert [(learner.id, learner.name, learner.submission) for learner in learners] == [
        ("20260017", JOSE, "submission_271828182"), ("20260021", "Mei Chen", "submission_314159265"),
        ("omar.haddad@uni.example", "Omar Haddad", "submission_314159265")]
    assert learners[0].submitted_at == datetime(2026, 12, 1, 2, 2, 11, 438112, tzinfo=timezone.utc)
    check_submissions(learners, export)
    code, out = run("grade", str(export), "--roster", str(export), "--only", "20260021", "--out",
                    str(tmp_path / "book"), "--jobs", "1", "--due", "2026-12-01T23:59-08:00")
    assert code == 0 and "grading 1 submission," in out, out
    rows = {row["id"]: row for row in table(tmp_path / "book/grades.csv")}
    assert list(rows) == ["20260017", "20260021", "omar.haddad@uni.example"]  # the metadata file is no entry
    assert rows["20260017"]["status"] == "not graded" and rows["20260017"]["reason"].startswith("not graded yet")
    assert rows["20260021"]["late"] == rows["omar.haddad@uni.example"]["late"] == "1 day"  # a group, one file
    assert rows["20260021"]["score"] == "10"  # late, but no penalty was given
    run("gradebook", "export", str(tmp_path / "book"), "--format", "gradescope")
    assert (tmp_path / "book/gradescope.csv").read_text(encoding="utf-8").splitlines()[1:] == [
        f"{JOSE},20260017,jose.nunez@uni.example,", "Mei Chen,20260021,mei.chen@uni.example,10",
        "Omar Haddad,,omar.haddad@uni.example,10"]
    (export / "submission_metadata.yml").write_text("submission_1:\n  :submitters: [\n")
    with pytest.raises(RosterError, match=r"submission_metadata.yml:\d+: not valid YAML"):
        read_roster(export)


def test_an_export_needs_a_gradebook_graded_with_a_roster(tmp_path, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    code, out = run("gradebook", "export", str(tmp_path), "--format", "canvas")
    assert code == 2 and out.strip() == f"error: {tmp_path}: no results/ folder here: not the output of `grader grade`"
    (tmp_path / "results").mkdir()
    code, out = run("gradebook", "export", str(tmp_path), "--format", "gradescope")
    assert code == 2 and out.strip().startswith(f"error: {tmp_path} has no roster: grade it with --roster")


def test_a_due_date_needs_a_roster_and_a_rule_that_reads(in_course, tmp_path):
    _, subs, roster, _, _, _ = in_course
    for argv, words in [
        (["--due", DUE], "error: --due and --late-penalty apply to a roster's learners: give --roster too"),
        (["--roster", str(roster), "--due", "soon"], "error: --due: 'soon' is not a time such as 2026-12-01T23:59"),
        (["--roster", str(roster), "--due", DUE, "--late-penalty", "ten"],
         "error: --late-penalty 'ten': expected a percentage per day or hour, such as 10%/day"),
        (["--roster", str(roster), "--late-penalty", "5%/hour"], "error: --late-penalty needs --due: late from when?"),
    ]:
        code, out = run("grade", str(subs), "--out", str(tmp_path / "b"), *argv)
        assert code == 2 and out.strip().startswith(words) and len(out.strip().splitlines()) == 1, out


def test_each_learner_has_feedback_under_their_id_with_the_score_that_counts(graded):
    book = graded[3]
    learners = book / "feedback" / "learners"
    assert sorted(path.name for path in learners.glob("*.md")) == ["a1.md", "b2.md", "j3.md"]  # d4 handed nothing in
    rows = {row["id"]: row for row in table(book / "grades.csv")}  # as the last run left them (tests regrade)
    bob = (learners / "b2.md").read_text(encoding="utf-8").replace("\\", "")  # Markdown's escapes undone
    assert rows["b2"]["score"] != rows["b2"]["graded_score"]  # late: a penalty applies
    # One score, the one that counts; the grader's own is said among the adjustments.
    assert f"**Score:** {rows['b2']['score']} of 10 (passed)" in bob and bob.count("Score") == 1, bob
    assert f"**Adjusted:** graded {rows['b2']['graded_score']} of 10; 3 days late" in bob
    assert "Adjusted" not in (learners / "a1.md").read_text(encoding="utf-8")  # nothing adjusted
    # An override's reason is the staff's unless the roster shows it (override_reason_shown): not in José's file.
    jose = (learners / "j3.md").read_text(encoding="utf-8").replace("\\", "")
    assert "**Score:** 7 of 10 (passed)" in jose and "set to 7 by the course staff" in jose
    assert "regrade request" not in jose and "regrade request" not in (learners / "j3.html").read_text("utf-8")
    assert (learners / "j3.html").is_file()
    # The identical files of Alice and Bob are flagged in the learners' grades.csv too.
    assert "bob" in rows["a1"]["similar_to"] and "alice.py" in rows["b2"]["similar_to"]
