"""Learner commands in a course of several exercises: the exercise where the learner is, no surprise writes,
hints by function, and suggestions that work as printed."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from conftest import REPO, make_course, run_cli

SOFTMAX, RING = "01-stable-softmax", "07-ring-attention"
run = run_cli
RIGHT = ("def scale(x, factor):\n    total = x - x\n    for _ in range(factor):\n        total = total + x\n"
         "    return total\n")
WRONG = "def scale(x, factor):\n    return x + x  # always twice\n"


@pytest.fixture
def two(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private course of exercises 01 and 07, in that order, as the grader's root."""
    for name in (SOFTMAX, RING):
        if not (REPO / "exercises" / name / "exercise.yaml").is_file():
            pytest.skip(f"the repository has no exercise {name}")
    root = make_course(tmp_path / "course", [SOFTMAX, RING])
    monkeypatch.setenv("GRADER_ROOT", str(root))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.chdir(root)
    return root


def stub(root: Path, name: str) -> Path:
    return root / "exercises" / name / {SOFTMAX: "softmax.py", RING: "ring_attention.py"}[name]


def test_the_current_folder_chooses_the_exercise(two, capsys, monkeypatch) -> None:
    _, lines = run(capsys, "show")
    assert any("softmax" in line.lower() for line in lines[:3])  # the first exercise not accepted
    monkeypatch.chdir(two / "exercises" / RING)
    _, lines = run(capsys, "show")
    assert any("Ring attention" in line for line in lines[:3])
    # From its folder, no name is needed in the commands it suggests.
    assert " ".join(" ".join(lines[-3:]).split()).endswith("Next: grader run, grader hint, grader submit.")
    monkeypatch.chdir(two / "exercises" / RING / "starter")
    _, lines = run(capsys, "show")
    assert any("Ring attention" in line for line in lines[:3])


def test_files_folder_chooses_the_exercise(two) -> None:
    from grader.cli.common import exercise_from_args

    chosen = exercise_from_args(argparse.Namespace(exercise=None, file=two / "solutions" / RING / "ring_attention.py"))
    assert chosen.name == RING
    assert exercise_from_args(argparse.Namespace(exercise=None, file=Path("elsewhere.py"))).name == SOFTMAX


def test_run_in_a_folder_grades_that_folders_exercise(two, capsys, monkeypatch) -> None:
    monkeypatch.chdir(two / "exercises" / SOFTMAX)
    code, lines = run(capsys, "run", "--no-record", "--device", "cpu")
    assert code == 1 and lines[0].startswith(f"{SOFTMAX}: exercises/{SOFTMAX}/softmax.py on examples")
    assert "not attempted" in lines[-1]


def test_an_acceptance_names_the_next_exercise(two, capsys, monkeypatch) -> None:
    monkeypatch.chdir(two / "exercises" / SOFTMAX)
    code, lines = run(capsys, "submit", "--device", "cpu", "--file",
                      str(two / "solutions" / SOFTMAX / "softmax.py"))
    assert code == 0 and "Accepted. Every test passes." in lines
    assert lines[-3] == (f"Next: {RING}, Ring attention with the online-softmax merge: grader show {RING} reads its "
                         f"statement (its file: exercises/{RING}/ring_attention.py).")
    monkeypatch.chdir(two)
    _, lines = run(capsys, "show")  # the default, away from any exercise's folder, is now 07
    assert any("Ring attention" in line for line in lines[:3])


def kept_submission(root: Path, name: str, number: int, content: str) -> None:
    """A submission of `name` as `record` keeps it: its results file and its source, and its line in the state."""
    folder = root / ".grader" / "submissions" / name
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{number:03d}-20261130T10150{number}"
    (folder / f"{stem}.py").write_text(content)
    results = {"score": 0.0, "extra_data": {"status": "failed", "max_score": 100.0, "file": f"exercises/{name}/x.py",
                                            "counts": {"passed": 0, "failed": 3, "skipped": 0, "total": 3}}}
    (folder / f"{stem}.json").write_text(json.dumps(results))
    state_file = root / ".grader" / "state.json"
    state = json.loads(state_file.read_text()) if state_file.exists() else {"exercises": {}}
    entry = state["exercises"].setdefault(name, {})
    summary = {"when": f"2026-11-30T10:15:0{number}", "file": f"exercises/{name}/x.py", "status": "failed",
               "passed": 0, "failed": 3, "total": 3}
    entry["last_submission"] = summary
    entry.setdefault("submissions", []).append({**summary, "number": number, "score": 0.0, "max_score": 100.0,
                                                "results": f".grader/submissions/{name}/{stem}.json",
                                                "source": f".grader/submissions/{name}/{stem}.py"})
    state_file.write_text(json.dumps(state))


def test_restore_reads_an_exercise_prefix_as_the_exercise(two, capsys) -> None:
    kept_submission(two, SOFTMAX, 1, "# softmax, first try\n")
    kept_submission(two, RING, 1, "# ring, first try\n")
    ring_before = stub(two, RING).read_bytes()
    code, lines = run(capsys, "restore", "01")  # alone, it lists what 01 has kept (docs/learners: history and restore)
    assert code == 0 and lines[0] == f"{SOFTMAX}: exercises/{SOFTMAX}/softmax.py", lines
    assert lines[1].split()[:2] == ["1", "2026-11-30"] and "submission" in lines[1] and len(lines) == 3
    assert lines[2].startswith("grader restore EX N puts submission N")
    assert stub(two, RING).read_bytes() == ring_before and stub(two, SOFTMAX).read_text() != "# softmax, first try\n"
    for words in (["01", "1"], ["1", "01"]):
        stub(two, SOFTMAX).write_text("# something else\n")
        code, lines = run(capsys, "restore", *words)
        assert code == 0 and f"of {SOFTMAX} (" in lines[0] and f"into exercises/{SOFTMAX}/softmax.py" in lines[0]
        assert stub(two, SOFTMAX).read_text() == "# softmax, first try\n"
    assert stub(two, RING).read_bytes() == ring_before  # never 07's file


def test_reset_without_an_exercise_asks_first(two, capsys, monkeypatch) -> None:
    mine = stub(two, SOFTMAX)
    mine.write_text("# my work\n")
    code, lines = run(capsys, "reset")  # no terminal here: refused, nothing changed
    assert code == 2 and len(lines) == 1
    assert lines[0].startswith(f"error: grader reset would replace exercises/{SOFTMAX}/softmax.py ({SOFTMAX}), "
                               f"which differs from the stub") and f"grader reset {SOFTMAX}" in lines[0]
    assert mine.read_text() == "# my work\n" and not (two / ".grader" / "backups").exists()

    monkeypatch.setattr("sys.stdin.isatty", lambda: True, raising=False)
    answers = iter(["n", "y"])
    monkeypatch.setattr("builtins.input", lambda prompt="": next(answers))
    code, lines = run(capsys, "reset")
    assert code == 1 and mine.read_text() == "# my work\n"
    assert lines[-1].endswith(f" [y/N] Nothing was changed: exercises/{SOFTMAX}/softmax.py ({SOFTMAX}) is as it was.")
    code, lines = run(capsys, "reset")
    assert code == 0 and lines[0].endswith(f"[y/N] Restored exercises/{SOFTMAX}/softmax.py ({SOFTMAX}) to the original "
                                           f"stub.")
    assert mine.read_bytes() == (two / "exercises" / SOFTMAX / "starter" / "softmax.py").read_bytes()
    assert f"grader restore {SOFTMAX} backup-1 brings it back" in lines[1]


def test_reset_with_yes_or_a_name_does_not_ask(two, capsys) -> None:
    for words in (["--yes"], [SOFTMAX]):
        stub(two, SOFTMAX).write_text("# my work\n")
        code, lines = run(capsys, "reset", *words)
        assert code == 0 and lines[0].startswith(f"Restored exercises/{SOFTMAX}/softmax.py ({SOFTMAX})")


def test_a_corrupt_state_is_rebuilt_from_the_kept_submissions(scale_course, capsys) -> None:
    from grader.learner.history import standing
    from grader.results.learner_state import ExerciseState
    from grader.results.typed import from_json

    stub_file = scale_course / "exercises" / "02-scale" / "scale.py"
    stub_file.write_text(RIGHT)
    assert run(capsys, "submit", "--device", "cpu")[0] == 0
    stub_file.write_text(WRONG)
    assert run(capsys, "submit", "--device", "cpu")[0] == 1
    state = scale_course / ".grader" / "state.json"
    before = json.loads(state.read_text())["exercises"]["02-scale"]
    state.write_text("{ not json")
    code, lines = run(capsys, "list")
    assert code == 0
    (note,) = [line for line in lines if line.startswith("note:")]
    assert note.startswith("note: .grader/state.json could not be read (not valid JSON); it was moved to "
                           ".grader/state.json.corrupt-")
    assert note.endswith("and a new one rebuilt from the 2 submissions kept in .grader/submissions/ (02-scale "
                         "accepted); hints opened are counted from 0 again")
    assert lines[-1].endswith("(accepted; latest submission: 4 of 4 failed)")
    after = json.loads(state.read_text())["exercises"]["02-scale"]
    assert standing(from_json(ExerciseState, after)) == standing(from_json(ExerciseState, before))
    assert [(r["number"], r["status"], r["source"]) for r in after["submissions"]] == \
        [(r["number"], r["status"], r["source"]) for r in before["submissions"]]
    assert run(capsys, "restore", "1")[0] == 0 and stub_file.read_text() == RIGHT


def test_did_you_mean(two, capsys) -> None:
    assert run(capsys, "sbumit") == (2, ["error: no command called 'sbumit' (did you mean submit?); "
                                         "grader --help lists them"])
    code, lines = run(capsys, "show", "ring-atention")
    assert code == 2 and lines[0].startswith(f"error: no exercise called 'ring-atention' (did you mean {RING}?)")
    code, lines = run(capsys, "hint", RING, "merge_chunk_stat")
    assert code == 2 and "(did you mean merge_chunk_stats?)" in lines[0]
    code, lines = run(capsys, "repro", "stats-tiny-by-hnd", RING)
    assert code == 2 and "(did you mean stats-tiny-by-hand?)" in lines[-1]


def test_help_lists_learner_commands_apart() -> None:
    from grader.cli.parser import build_parser

    text = build_parser().format_help()
    learner, rest = text.split("commands for instructors:")
    instructors, staff = rest.split("commands for course staff:")
    assert all(f"  {name} " in learner for name in ("list", "run", "submit", "hint", "restore", "reset"))
    assert "validate" not in learner and "grade " not in learner and "export" not in learner
    assert "  validate " in instructors and all(f"  {name} " in staff for name in ("export", "grade", "gradebook"))
    for line in text.splitlines():
        assert "optional while the course has one" not in line


def test_hints_by_function(two, capsys, monkeypatch) -> None:
    monkeypatch.chdir(two / "exercises" / RING)
    code, lines = run(capsys, "hint", "merge_chunk_stats")
    assert code == 0 and lines[0] == "Hint 1 of 1 about merge_chunk_stats (new)"
    assert any("correction" in line.lower() or "shared max" in line for line in lines)
    _, lines = run(capsys, "status")
    assert "Hints opened: 1 of 3 (attention_chunk_stats 0 of 1, merge_chunk_stats 1 of 1, ring_attention 0 of 1)" \
        in lines
    _, lines = run(capsys, "hint")  # the first not opened, in the exercise's order
    headings = [line for line in lines if line.startswith("Hint ")]
    assert headings == ["Hint 1 of 3 (new)", "Hint 2 of 3"]
    assert lines[-1].startswith("Hints by function: attention_chunk_stats (1), merge_chunk_stats (1), "
                                "ring_attention (1)")
    _, lines = run(capsys, "hint", "3")  # a number is a hint's number, not an exercise
    assert [line for line in lines if line.startswith("Hint ")] == ["Hint 3 of 3 (new)"]
    monkeypatch.chdir(two)
    code, lines = run(capsys, "hint", "01", "2")
    assert code == 0 and [line for line in lines if line.startswith("Hint ")] == ["Hint 2 of 3 (new)"]
    code, lines = run(capsys, "hint", "01", "9")
    assert code == 2 and lines == [f"error: {SOFTMAX} has 3 hints, so there is no hint 9"]


def test_an_older_count_of_hints_opens_the_first_ones(two, capsys) -> None:
    (two / ".grader").mkdir()
    (two / ".grader" / "state.json").write_text(json.dumps({"exercises": {RING: {"hints_opened": 2}}}))
    _, lines = run(capsys, "hint", RING, "ring_attention")
    assert lines[0] == "Hint 1 of 1 about ring_attention (new)"
    state = json.loads((two / ".grader" / "state.json").read_text())["exercises"][RING]
    assert state["hints_opened"] == 3 and len(state["hints_seen"]) == 3


@pytest.mark.parametrize(("front", "words"), [
    ("---\nfunction: merge\n", "never closed"),
    ("---\nabout: merge\n---\n", ":2: front matter: expected 'function: NAME'"),
    ("---\nfunction: [a b]\n---\n", ":2: front matter: '[a b]' is not a function's name"),
])
def test_a_broken_front_matter_is_one_line_with_file_and_line(tmp_path, front, words) -> None:
    from grader.course.hints import read_hint
    from grader.errors import ConfigError

    path = tmp_path / "1-a.md"
    path.write_text(front + "text\n")
    with pytest.raises(ConfigError) as raised:
        read_hint(path)
    assert words in str(raised.value) and str(path) in str(raised.value)


def test_front_matter_is_read_and_left_out_of_the_text(tmp_path) -> None:
    from grader.course.hints import read_hint

    path = tmp_path / "1-a.md"
    path.write_text("---\nfunction: [column_parallel_linear, row_parallel_linear]\n---\nThe text.\n")
    hint = read_hint(path)
    assert hint.functions == ("column_parallel_linear", "row_parallel_linear") and hint.text == "The text.\n"
    path.write_text("No front matter.\n")
    assert read_hint(path).functions == () and read_hint(path).text == "No front matter.\n"


def test_every_hint_of_the_course_names_a_function_of_its_stub() -> None:
    from grader.course.exercise import load_course
    from grader.instructor.validate import _hint_functions_unknown

    for exercise in load_course(REPO):
        assert _hint_functions_unknown(exercise) == [], exercise.name


def test_the_python_a_message_names_has_torch(tmp_path, monkeypatch) -> None:
    from grader.learner import repro

    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").write_text("#!/bin/sh\n")
    (venv / "python").chmod(0o755)
    monkeypatch.setattr("sys.executable", str(venv / "python"))
    monkeypatch.setenv("PATH", str(venv))  # an activated venv: its python is the shell's
    assert repro.python_command() == "python"
    monkeypatch.setenv("PATH", str(tmp_path))  # not activated: the path, from here
    monkeypatch.chdir(tmp_path)
    assert repro.python_command() == "venv/bin/python"
    monkeypatch.chdir(tmp_path / "venv" / "bin")
    assert repro.python_command(tmp_path / "venv" / "bin") == "./python"


def test_list_status_and_history_fit_the_width_and_list_aligns_any_names(tmp_path, capsys, monkeypatch) -> None:
    """06's name is the longest: every title still starts in one column; at COLUMNS=60 no line is wider."""
    names = [SOFTMAX, "06-tensor-parallel-matmul", RING]
    root = make_course(tmp_path / "course", names)
    monkeypatch.setenv("GRADER_ROOT", str(root))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.chdir(root)
    kept_submission(root, SOFTMAX, 1, "# softmax, first try\n")
    _, lines = run(capsys, "list")
    assert [line[:len(names[1]) + 2].rstrip() for line in lines] == names
    assert len({line.index(line.split()[1]) for line in lines}) == 1, lines  # the titles, in one column
    monkeypatch.setenv("COLUMNS", "60")
    for command in ("list", "status", "history"):
        code, lines = run(capsys, command)
        assert code == 0 and max(len(line) for line in lines) <= 60, (command, lines)
        assert any(line.startswith("  ") for line in lines), (command, lines)  # a long line wrapped under itself


def test_status_calls_the_untouched_stub_not_attempted(two, capsys) -> None:
    assert run(capsys, "run", SOFTMAX, "--device", "cpu")[0] == 1
    _, lines = run(capsys, "status", SOFTMAX)
    (last,) = [line for line in lines if line.startswith("Last run: ")]
    assert last.endswith(f"0 passed, 0 failed, 5 not attempted of 5 (not attempted), exercises/{SOFTMAX}/softmax.py")
