"""Files the grader wrote before its formats carried a version (format 1) are read by this one, and written back alike.

tests/fixtures/format1/ holds what grader 0.1.0 at 5ce0bf7 wrote: a learner's .grader/ (two submissions of 02-scale,
a run, a hint, a reset), a roster gradebook of five submissions (passed, diagnosed, not importable, not a Python
file, an archive) and a bundle's archive. Only the roster's path in gradebook.json is written as <roster>.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES, run_cli

from grader import __version__
from grader.errors import UsageError
from grader.results import archive, file
from grader.results.cohort import load_entries
from grader.staff.gradebook import read_key, results_path
from grader.staff.shards import read_record

OLD = FIXTURES / "format1"
RESULTS = sorted([*(OLD / "gradebook" / "results").glob("*.json"), *(OLD / "learner" / "submissions").rglob("*.json")])
EXERCISE = "02-scale"


@pytest.fixture
def learner(scale_course: Path) -> Path:
    """The test course with the old learner's .grader/ in it."""
    shutil.copytree(OLD / "learner", scale_course / ".grader")
    return scale_course


@pytest.fixture
def book(tmp_path: Path) -> Path:
    """A copy of the old gradebook, its roster beside it."""
    copy = tmp_path / "book"
    shutil.copytree(OLD / "gradebook", copy)
    kept = copy / "gradebook.json"
    kept.write_text(kept.read_text().replace("<roster>", str(copy / "roster.csv")))
    return copy


@pytest.mark.parametrize("path", RESULTS, ids=lambda path: path.name)
def test_a_results_file_of_format_1_is_read_and_written_back_as_it_was(path: Path) -> None:
    results = file.read(path)
    assert results.extra_data.format == 1
    again = file.to_dict(results)
    assert again["extra_data"].pop("format") == 1
    assert json.dumps(again, indent=2) + "\n" == path.read_text()  # every field, in its order, each value its type


def test_the_old_learner_state_is_read_as_it_was(learner: Path, capsys) -> None:
    code, lines = run_cli(capsys, "status")
    assert code == 0 and not any(line.startswith("note:") for line in lines), lines
    assert lines[1:] == [
        "Accepted: submission 2, 2026-12-02T02:43:08",
        "Last run: 2026-12-02T02:43:06: 2 passed, 0 failed of 2 (passed), exercises/02-scale/scale.py",
        "Last submission: 2026-12-02T02:43:08: 4 passed, 0 failed of 4 (accepted), exercises/02-scale/scale.py",
        "Hints opened: 1 of 1"]
    code, lines = run_cli(capsys, "history")
    assert code == 0 and [line.split()[:1] + line.split()[3:] for line in lines[1:4]] == [
        ["1", "submission", "3", "of", "4", "failed", "score", "0", "of", "10"],
        ["2", "submission", "accepted", "score", "10", "of", "10"],
        ["backup-1", "backup", "your", "file", "before", "reset"]]


def test_the_old_learner_state_is_kept_whole_when_written_again(learner: Path, capsys) -> None:
    before = json.loads((OLD / "learner" / "state.json").read_text())["exercises"][EXERCISE]
    stub = learner / "exercises" / EXERCISE / "scale.py"
    code, lines = run_cli(capsys, "restore", "1")
    assert code == 0 and lines[-1].startswith("Restored submission 1 of 02-scale"), lines
    assert stub.read_bytes() == next((OLD / "learner" / "submissions" / EXERCISE).glob("001-*.py")).read_bytes()
    after = json.loads((learner / ".grader" / "state.json").read_text())["exercises"][EXERCISE]
    assert after["backups"][0] == before["backups"][0] and after["backups"][1]["before"] == "restore 1"
    assert {key: value for key, value in after.items() if key != "backups"} == \
        {key: value for key, value in before.items() if key != "backups"}


def test_a_state_rebuilt_from_old_submissions_is_the_state_they_were_kept_with(learner: Path, capsys) -> None:
    before = json.loads((OLD / "learner" / "state.json").read_text())["exercises"][EXERCISE]
    (learner / ".grader" / "state.json").write_text("{ not json")
    code, lines = run_cli(capsys, "list")
    assert code == 0 and "rebuilt from the 2 submissions" in lines[0] and lines[-1].endswith("(accepted)"), lines
    after = json.loads((learner / ".grader" / "state.json").read_text())["exercises"][EXERCISE]
    assert after["submissions"] == before["submissions"]
    assert after["accepted"] == before["accepted"] and after["last_submission"] == before["last_submission"]


def test_the_old_gradebook_is_read_merged_and_exported(book: Path, tmp_path: Path, capsys) -> None:
    entries = load_entries(book)
    assert [(entry.id, entry.status) for entry in entries] == [
        ("alice.py", "passed"), ("bob.py", "failed"), ("carol.py", "error"), ("dan.txt", "not graded"),
        ("erin", "passed")]
    assert entries[1].diagnosis == "Adds one copy too few" and entries[4].settings["extra_time"] == 1.5
    assert all(read_key(results_path(book, entry.id)) == entry.key != "" for entry in entries)
    record = read_record(book)
    assert (record.exercise, record.shard, record.cohort_size) == (EXERCISE, (1, 1), 5)
    code, lines = run_cli(capsys, "gradebook", "merge", str(book), "--out", str(tmp_path / "merged"))
    assert code == 0 and lines[0] == "02-scale: 5 submissions", lines
    # What is derived from the old results files alone is what the old grader derived from them, but for what this
    # grader adds: a file with too little code of its own to compare is named, where the old one left its cell empty.
    merged, old = ((folder / "grades.csv").read_text().splitlines() for folder in (tmp_path / "merged", book))
    named = [index for index, line in enumerate(merged) if line.endswith(",not compared: too little code of its own")]
    assert len(named) == 1 and merged[named[0]].removesuffix("not compared: too little code of its own") == old[named[0]]
    assert [line for index, line in enumerate(merged) if index not in named] == [
        line for index, line in enumerate(old) if index not in named]
    assert (tmp_path / "merged" / "similarity.csv").read_text() == (book / "similarity.csv").read_text()
    assert read_record(tmp_path / "merged").submissions == record.submissions
    code, lines = run_cli(capsys, "gradebook", "export", str(book), "--format", "canvas")
    assert code == 0 and lines == [f"Wrote {book / 'canvas.csv'}: 6 learners, as Canvas imports scores."]


def test_the_old_archive_is_read(tmp_path: Path) -> None:
    (path,) = (OLD / "archive").glob("*.zip")
    kept = archive.read_submission(path, EXERCISE)
    assert kept.manifest.format == archive.FORMAT and kept.manifest.files[0].name == "scale.py"
    assert kept.files == {"scale.py": (FIXTURES / "courses" / "solutions" / EXERCISE / "scale.py").read_bytes()}


def test_a_results_file_of_a_newer_grader_is_refused_in_one_line(book: Path, capsys) -> None:
    path = results_path(book, "bob.py")
    data = json.loads(path.read_text())
    data["extra_data"]["format"] = file.FORMAT + 1
    path.write_text(json.dumps(data))
    said = (f"{path}: written by a newer grader (results format {file.FORMAT + 1}; grader {__version__} reads "
            f"formats 1 to {file.FORMAT}): read it with the grader that wrote it, or a newer one")
    with pytest.raises(UsageError) as refused:
        read_key(path)  # `grader grade` never grades over it
    assert str(refused.value) == said
    code, lines = run_cli(capsys, "gradebook", "merge", str(book), "--out", str(book.parent / "merged"))
    assert code == 2 and lines == [f"error: {said}"]
