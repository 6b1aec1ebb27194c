"""LearnerState that remembers: acceptance is kept, every submission and replaced file is kept, and any comes back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

EXERCISE = "02-scale"
RIGHT = "def scale(x, factor):\n    total = x - x\n    for _ in range(factor):\n        total = total + x\n    return total\n"
WRONG = "def scale(x, factor):\n    return x + x  # always twice\n"


@pytest.fixture
def scale(scale_course: Path) -> Path:
    return scale_course


run = run_cli


def submit(capsys, stub: Path, source: str) -> int:
    stub.write_text(source)
    return run(capsys, "submit", "--device", "cpu")[0]


def test_acceptance_is_kept_after_a_failing_submission(scale, capsys) -> None:
    stub = scale / "exercises" / EXERCISE / "scale.py"
    assert submit(capsys, stub, RIGHT) == 0
    assert submit(capsys, stub, WRONG) == 1
    _, lines = run(capsys, "list")
    assert lines == ["02-scale  Scale a tensor by an integer (accepted; latest submission: 4 of 4 failed)"]
    _, lines = run(capsys, "status")
    assert any(line.startswith("Accepted: submission 1, ") and line.endswith("(latest submission: 4 of 4 failed)")
               for line in lines), lines
    assert any(line.startswith("Last submission: ") and "0 passed, 4 failed of 4 (failed)" in line for line in lines)


def test_history_and_restore_bring_back_each_file_byte_for_byte(scale, capsys) -> None:
    stub = scale / "exercises" / EXERCISE / "scale.py"
    assert submit(capsys, stub, RIGHT) == 0
    assert submit(capsys, stub, WRONG) == 1
    stub.write_text("# started over\n")
    code, lines = run(capsys, "history")
    assert code == 0 and lines[0] == "02-scale: exercises/02-scale/scale.py"
    assert [line.split()[0] for line in lines[1:3]] == ["1", "2"]
    assert "accepted" in lines[1] and "score 10 of 10" in lines[1]
    assert "4 of 4 failed" in lines[2] and "score 0 of 10" in lines[2]
    assert lines[-1].startswith("grader restore EX N puts submission N of exercise EX back in its file")

    code, lines = run(capsys, "restore", "1")
    assert code == 0 and len(lines) == 1
    assert lines[0].startswith("Restored submission 1 of 02-scale (") and ", accepted) into exercises/02-scale/scale.py" in lines[0]
    assert lines[0].endswith("; what it held is backup-1 (grader restore 02-scale backup-1 brings it back).")
    assert stub.read_text() == RIGHT  # byte for byte what was submitted

    code, lines = run(capsys, "restore", "backup-1", EXERCISE)  # restoring is itself undoable
    assert code == 0 and "what it held is backup-2" in lines[0]
    assert stub.read_text() == "# started over\n"
    code, lines = run(capsys, "restore", "2")
    assert code == 0 and stub.read_text() == WRONG

    _, lines = run(capsys, "history", EXERCISE)
    assert [line.split()[0] for line in lines[1:-1]] == ["1", "2", "backup-1", "backup-2", "backup-3"]
    assert "your file before restore 1" in lines[3] and "your file before restore backup-1" in lines[4]
    state = json.loads((scale / ".grader" / "state.json").read_text())["exercises"][EXERCISE]
    kept = {record["number"]: (scale / record["file"]).read_text() for record in state["backups"]}
    assert kept == {1: "# started over\n", 2: RIGHT, 3: "# started over\n"}

    code, lines = run(capsys, "restore", "2")
    assert code == 0 and lines == [
        f"exercises/02-scale/scale.py already holds submission 2 of 02-scale ({state['submissions'][1]['when'].replace('T', ' ')}"
        f", 4 of 4 failed): nothing to do."]


@pytest.mark.parametrize(("which", "words"), [
    ("9", "02-scale has no submission 9: grader history 02-scale lists what it has"),
    ("backup-4", "02-scale has no backup-4: grader history 02-scale lists what it has"),
    ("latest", "restore what? 'latest' is neither a submission's number"),
])
def test_restoring_what_does_not_exist_is_one_line(scale, capsys, which, words) -> None:
    code, lines = run(capsys, "restore", which)
    assert code == 2 and len(lines) == 1 and lines[0].startswith(f"error: {words}")


def test_an_older_state_and_its_backups_still_work(scale, capsys) -> None:
    """A state written before submissions were kept: its acceptance holds, and its reset backups can come back."""
    folder = scale / ".grader"
    (folder / "backups" / EXERCISE).mkdir(parents=True)
    (folder / "backups" / EXERCISE / "20261101T090000-scale.py").write_text("# an old backup\n")
    summary = {"when": "2026-11-01T08:00:00", "file": "exercises/02-scale/scale.py", "status": "passed",
               "passed": 4, "failed": 0, "total": 4}
    (folder / "state.json").write_text(json.dumps({"exercises": {EXERCISE: {"last_submission": summary}}}))
    _, lines = run(capsys, "list")
    assert lines[0].endswith("(accepted)")
    _, lines = run(capsys, "history")
    assert lines[1].split()[:4] == ["backup-1", "2026-11-01", "09:00:00", "backup"]
    stub = scale / "exercises" / EXERCISE / "scale.py"
    assert submit(capsys, stub, WRONG) == 1  # the first submission this grader numbers
    _, lines = run(capsys, "list")
    assert lines[0].endswith("(accepted; latest submission: 4 of 4 failed)")
    _, lines = run(capsys, "status")
    assert "Accepted: 2026-11-01T08:00:00 (latest submission: 4 of 4 failed)" in lines
    assert run(capsys, "restore", "backup-1")[0] == 0 and stub.read_text() == "# an old backup\n"


def test_a_restore_reads_only_from_inside_the_state_folder(scale, capsys, tmp_path) -> None:
    secret = tmp_path / "elsewhere.py"
    secret.write_text("# not a kept file\n")
    record = {"number": 1, "when": "2026-11-01T08:00:00", "file": str(Path("..") / "elsewhere.py"),
              "before": "reset"}
    (scale / ".grader").mkdir()
    (scale / ".grader" / "state.json").write_text(json.dumps({"exercises": {EXERCISE: {"backups": [record]}}}))
    stub = scale / "exercises" / EXERCISE / "scale.py"
    before = stub.read_bytes()
    code, lines = run(capsys, "restore", "backup-1")
    assert code == 2 and lines == ["error: ../elsewhere.py is not in .grader/: the state file was edited by hand; "
                                   "nothing was restored"]
    assert stub.read_bytes() == before
