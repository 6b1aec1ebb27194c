"""Learner data is safe: a corrupt state file is moved aside, and nothing kept in .grader/ is overwritten."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import REPO

from grader.cli import main
from grader.files import unique_path
from grader.learner import state as progress_module
from grader.learner.state import LearnerState

EXERCISE = "07-ring-attention"
SOLUTION = REPO / "solutions" / EXERCISE / "ring_attention.py"
FIXED = time.localtime(1_800_000_000)
STAMP = time.strftime("%Y%m%dT%H%M%S", FIXED)
CORRUPT = {
    "not utf-8": (b'{"exercises": {}}\xff\xfe', "not UTF-8 text"),
    "not json": (b'{"exercises": {', "not valid JSON"),
    "empty": (b"", "not valid JSON"),
    "nested too deep": (b"[" * 100_000, "not valid JSON"),
    "not an object": (b"[1, 2, 3]", "not a JSON object"),
    "exercises a list": (b'{"exercises": [1]}', "its exercises are not a JSON object"),
    "entry a number": (b'{"exercises": {"07-ring-attention": 3}}', "an exercise's entry is not a JSON object"),
    "hint count text": (b'{"exercises": {"07-ring-attention": {"hints_opened": "two"}}}',
                        "a count of hints opened is not a whole number"),
    "run incomplete": (b'{"exercises": {"07-ring-attention": {"last_run": {"when": 1}}}}', "a last run is incomplete"),
    "submission a list": (b'{"exercises": {"x": {"last_submission": []}}}', "a last submission is incomplete"),
    "submissions an object": (b'{"exercises": {"x": {"submissions": {}}}}', "a record of its submissions is incomplete"),
    "submission unnumbered": (b'{"exercises": {"x": {"submissions": [{"when": "t", "file": "f", "status": "passed", '
                              b'"passed": 1, "failed": 0, "total": 1, "results": "r"}]}}}',
                              "a record of its submissions is incomplete"),
    "backup's file a number": (b'{"exercises": {"x": {"backups": [{"number": 1, "when": "t", "file": 2, '
                               b'"before": "reset"}]}}}', "a record of its backups is incomplete"),
    "accepted incomplete": (b'{"exercises": {"x": {"accepted": {"when": "t"}}}}',
                            "an accepted submission is incomplete"),
}


@pytest.fixture
def still_clock(monkeypatch):
    """Every stamp the grader takes is the same second."""
    monkeypatch.setattr(progress_module, "now", lambda pattern="%Y%m%dT%H%M%S": time.strftime(pattern, FIXED))


def run(capsys, *argv: str) -> tuple[int, list[str]]:
    code = main(list(argv))
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    return code, out.out.splitlines()


def write_state(course: Path, content: bytes) -> Path:
    state = course / ".grader" / "state.json"
    state.parent.mkdir(exist_ok=True)
    state.write_bytes(content)
    return state


def note(reason: str, aside: str) -> str:
    return (f"note: .grader/state.json could not be read ({reason}); it was moved to .grader/{aside} "
            f"and a fresh one started")


def notes(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("note:")]


@pytest.mark.parametrize("name", sorted(CORRUPT))
def test_a_corrupt_state_is_moved_aside_with_one_note(name, course, capsys, still_clock) -> None:
    content, reason = CORRUPT[name]
    write_state(course, content)
    code, lines = run(capsys, "status")
    assert code == 0
    assert notes(lines) == [note(reason, f"state.json.corrupt-{STAMP}")]
    assert lines[0].startswith("note:")  # said before the progress it explains
    assert "No results yet" in lines
    assert (course / ".grader" / f"state.json.corrupt-{STAMP}").read_bytes() == content
    code, lines = run(capsys, "status")
    assert code == 0 and notes(lines) == []  # said once: the fresh state reads fine


@pytest.mark.parametrize("command", ["list", "hint", "status"])
def test_every_command_that_reads_progress_survives_a_corrupt_state(command, course, capsys, still_clock) -> None:
    write_state(course, b"\x00\x01 not json")
    code, lines = run(capsys, command)
    assert code == 0
    assert notes(lines) == [note("not valid JSON", f"state.json.corrupt-{STAMP}")]
    if command == "hint":
        assert "Hint 1 of 3 (new)" in lines
        state = json.loads((course / ".grader" / "state.json").read_text())
        assert state["exercises"][EXERCISE]["hints_opened"] == 1


@pytest.mark.parametrize("command", ["run", "submit"])
def test_run_and_submit_record_afresh_after_a_corrupt_state(command, course, capsys, still_clock) -> None:
    write_state(course, b'{"exercises": []}')
    code, lines = run(capsys, command, "--file", str(SOLUTION), "--device", "cpu")
    assert code == 0
    assert notes(lines) == [note("its exercises are not a JSON object", f"state.json.corrupt-{STAMP}")]
    assert lines[-1].endswith(" passed, 0 failed")  # the count line is still the last line
    state = json.loads((course / ".grader" / "state.json").read_text())
    key = "last_run" if command == "run" else "last_submission"
    assert state["exercises"][EXERCISE][key]["status"] == "passed"


def test_corrupt_states_in_the_same_second_never_overwrite_each_other(course, capsys, still_clock) -> None:
    for content in (b"first {", b"second {", b"third {"):
        write_state(course, content)
        run(capsys, "status")
    folder = course / ".grader"
    assert (folder / f"state.json.corrupt-{STAMP}").read_bytes() == b"first {"
    assert (folder / f"state.json.corrupt-{STAMP}-2").read_bytes() == b"second {"
    assert (folder / f"state.json.corrupt-{STAMP}-3").read_bytes() == b"third {"


def test_a_state_that_cannot_be_moved_aside_is_one_clear_error(course, capsys, monkeypatch) -> None:
    write_state(course, b"not json")

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(progress_module, "unique_path", refuse)
    code, lines = run(capsys, "status")
    assert code == 2
    assert lines == ["error: .grader/state.json could not be read (not valid JSON) nor moved aside "
                     "(Permission denied); move or delete it, then run this again"]
    assert (course / ".grader" / "state.json").read_bytes() == b"not json"


def test_an_unreadable_state_is_one_clear_error(course, capsys) -> None:
    (course / ".grader" / "state.json").mkdir(parents=True)
    code, lines = run(capsys, "status")
    assert code == 2 and lines == ["error: .grader/state.json could not be read (Is a directory)"]


def test_a_run_that_cannot_be_recorded_still_shows_its_report(course, capsys) -> None:
    (course / ".grader").write_text("a file where the folder should be\n")
    code, lines = run(capsys, "run", "--file", str(SOLUTION), "--device", "cpu")
    assert code == 0
    assert notes(lines) == ["note: this run was not recorded: .grader could not be written to (File exists)"]
    assert lines[-1] == "7 passed, 0 failed"


def test_unique_path_numbers_names_that_are_taken(tmp_path) -> None:
    made = [unique_path(tmp_path / "new", "stamp", ".txt") for _ in range(3)]
    assert [path.name for path in made] == ["stamp.txt", "stamp-2.txt", "stamp-3.txt"]
    assert all(path.read_bytes() == b"" for path in made)


def test_unique_path_hands_each_thread_its_own_file(tmp_path) -> None:
    made: list[Path] = []

    def make() -> None:
        for _ in range(25):
            made.append(unique_path(tmp_path, "stamp", ".json"))

    threads = [threading.Thread(target=make) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(made)) == len(made) == 200 == len(list(tmp_path.iterdir()))


# Run in two processes at once: backups in one second, and hints opened one at a time.
WORKER = """
import sys, time
from pathlib import Path
from grader.learner import state
state.now = lambda pattern="%Y%m%dT%H%M%S": time.strftime(pattern, time.localtime(1_800_000_000))
root, tag = Path(sys.argv[1]), sys.argv[2]
source = root / f"mine-{tag}.py"
mine = state.LearnerState(root)
for number in range(40):
    source.write_text(f"{tag} {number}")
    mine.backup("ex", source)
    mine.open_hints("ex", [], [f"{tag}-{number}.md"])
"""


def test_two_graders_at_once_lose_nothing(tmp_path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, str(tmp_path), tag], env=env)
               for tag in ("a", "b")]
    assert [worker.wait(timeout=120) for worker in workers] == [0, 0]
    backups = [path.read_text() for path in (tmp_path / ".grader" / "backups" / "ex").iterdir()]
    assert sorted(backups) == sorted(f"{tag} {number}" for tag in "ab" for number in range(40))
    state = json.loads((tmp_path / ".grader" / "state.json").read_text())
    assert len(state["exercises"]["ex"]["hints_seen"]) == 80  # every change kept: none written over
    assert sorted(backup["number"] for backup in state["exercises"]["ex"]["backups"]) == list(range(1, 81))
    assert not list((tmp_path / ".grader").glob("*.tmp"))


def test_backups_and_submissions_in_the_same_second_are_all_kept(course, exercise, capsys, still_clock) -> None:
    for text in ("# first try\n", "# second try\n"):
        exercise.stub.write_text(text)
        assert run(capsys, "reset", "--yes")[0] == 0
    backups = course / ".grader" / "backups" / EXERCISE
    assert sorted(path.name for path in backups.iterdir()) == [
        f"001-{STAMP}-ring_attention.py", f"002-{STAMP}-ring_attention.py"]
    assert (backups / f"001-{STAMP}-ring_attention.py").read_text() == "# first try\n"
    assert (backups / f"002-{STAMP}-ring_attention.py").read_text() == "# second try\n"

    from grader.results import Report

    mine = LearnerState(course)
    saved = [mine.record(Report(EXERCISE, "submit", f"try{number}.py"), {"try": number}, f"# try {number}".encode())
             for number in (1, 2)]
    assert [kept.number for kept in saved] == [1, 2]
    assert [json.loads(kept.results.read_text()) for kept in saved] == [{"try": 1}, {"try": 2}]
    assert [kept.source.read_text() for kept in saved] == ["# try 1", "# try 2"]


def test_an_interrupted_save_leaves_the_state_and_no_temporary_file(course, monkeypatch) -> None:
    mine = LearnerState(course)
    mine.open_hints(EXERCISE, ["1-a.md"], ["1-a.md"])
    before = mine.path.read_bytes()

    def interrupt(descriptor):
        raise KeyboardInterrupt

    monkeypatch.setattr(progress_module.os, "fsync", interrupt)
    with pytest.raises(KeyboardInterrupt):
        mine.open_hints(EXERCISE, ["1-a.md", "2-b.md"], ["2-b.md"])
    assert mine.path.read_bytes() == before
    assert not list(mine.folder.glob("*.tmp"))


def test_status_shows_what_it_reads_back_inert(course, capsys) -> None:
    summary = {"when": "2026-11-30T10:15:00\x07", "file": "mine\x1b[2J\r7 passed.py", "status": "failed\u202e",
               "passed": 1, "failed": 2, "total": 3}
    write_state(course, json.dumps({"exercises": {EXERCISE: {"last_run": summary}}}).encode())
    code, lines = run(capsys, "status")
    assert code == 0
    assert ("Last run: 2026-11-30T10:15:00\\x07: 1 passed, 2 failed of 3 (failed\\u202e), "
            "mine\\x1b[2J\\r7 passed.py") in lines
    assert not any(character in "\n".join(lines) for character in "\x07\x1b\r\u202e")
