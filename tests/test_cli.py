"""Every command, in-process, on a private copy of the course."""

from __future__ import annotations

import json
import os
import re

import pytest
from conftest import REPO, SUBMISSIONS

from grader.cli import main
from grader.cli.parser import build_parser

SOLUTION = REPO / "solutions" / "07-ring-attention" / "ring_attention.py"


def run(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_list_names_the_exercise(course, capsys) -> None:
    code, out = run(capsys, "list")
    assert code == 0
    assert "07-ring-attention" in out and "not submitted" in out


def test_show_renders_the_statement(course, capsys) -> None:
    code, out = run(capsys, "show")
    assert code == 0
    assert "Ring attention" in out and "merge_chunk_stats" in out


def test_status_before_anything_ran(course, capsys) -> None:
    code, out = run(capsys, "status")
    assert code == 0
    assert "No results yet" in out
    assert "Hints opened: 0 of 3" in out


def test_run_on_the_stub_is_not_attempted(course, capsys) -> None:
    code, out = run(capsys, "run")
    assert code == 1
    assert "Not attempted yet" in out and "exercises/07-ring-attention/ring_attention.py" in out
    assert "grader hint" in out
    assert out.rstrip().splitlines()[-1] == "0 passed, 0 failed, 7 not attempted"


def test_run_then_status_shows_the_run(course, capsys) -> None:
    run(capsys, "run", "--file", str(SOLUTION))
    code, out = run(capsys, "status", "07-ring-attention")
    assert "No results yet" not in out
    assert "Last run" in out and "7 passed, 0 failed" in out


def test_submit_reference_is_accepted_and_recorded(course, capsys, tmp_path) -> None:
    results = tmp_path / "out" / "results.json"
    code, out = run(capsys, "submit", "--file", str(SOLUTION), "--json", str(results), "--device", "cpu")
    assert code == 0, out
    assert "Accepted" in out
    data = json.loads(results.read_text())
    assert data["extra_data"]["status"] == "passed" and data["score"] == data["extra_data"]["max_score"] == 100.0
    assert len(data["tests"]) > 7
    assert any(test["extra_data"]["suite"] == "hidden" for test in data["tests"])
    assert list((course / ".grader" / "submissions" / "07-ring-attention").glob("*.json"))
    _, status = run(capsys, "status")
    assert "Last submission" in status and "accepted" in status


def test_submit_wrong_is_rejected_with_actionable_message(course, capsys) -> None:
    code, out = run(capsys, "submit", "--file", str(SUBMISSIONS / "wrong_no_rescale.py"), "--no-record")
    assert code == 1
    assert "Not accepted" in out
    assert "e.g. merge-new-chunk-has-larger-max: largest error" in out  # each cause once, with one case
    assert "merging without rescaling" in out  # what the learner printed, shown for examples
    lines = out.splitlines()
    assert not any(line.startswith("PASS") for line in lines)  # counted per suite instead
    assert "examples  2/7 passed" in lines and any(line.startswith("hidden    ") for line in lines)
    assert out.count("Likely mistake: Adds chunk statistics without rescaling") == 1  # once, naming its cases
    assert out.index("Likely mistake") < out.index("FAIL ")  # the diagnosis first
    assert "Fix merge_chunk_stats first: ring_attention called it in this run" in out  # it was seen calling it
    assert "\x1b" not in out  # piped: no progress bar, no colour


def test_hidden_failures_show_no_inputs_or_prints(course, capsys) -> None:
    code, out = run(capsys, "submit", "--file", str(SUBMISSIONS / "wrong_no_rescale.py"), "--no-record", "--verbose")
    blocks = re.split(r"\n(?=[A-Z]+ +\S+ \()", out)  # each case's lines, from its label to the next case's
    hidden = [block for block in blocks if block.split("\n", 1)[0].endswith(", hidden)")]
    assert len(hidden) == 158 and "distributed_ring" not in out
    assert not any("inputs:" in block or "merging without rescaling" in block for block in hidden)


def test_hints_open_one_at_a_time_and_persist(course, capsys) -> None:
    code, first = run(capsys, "hint")
    assert code == 0 and "Hint 1 of 3 (new)" in first and "Hint 2" not in first
    _, second = run(capsys, "hint")
    assert "Hint 1 of 3" in second and "Hint 2 of 3 (new)" in second and "Hint 3" not in second
    state = json.loads((course / ".grader" / "state.json").read_text())
    assert state["exercises"]["07-ring-attention"]["hints_opened"] == 2
    run(capsys, "hint")
    _, past = run(capsys, "hint")
    assert "That was the last hint: all 3 are open." in past
    _, status = run(capsys, "status")
    assert "Hints opened: 3 of 3" in status


def test_reset_restores_the_stub_and_keeps_a_backup(course, exercise, capsys) -> None:
    exercise.stub.write_text("# my work in progress\n")
    code, out = run(capsys, "reset", "07")
    assert code == 0 and "Restored exercises/07-ring-attention/ring_attention.py (07-ring-attention)" in out
    assert exercise.stub.read_bytes() == exercise.starter.read_bytes()
    backups = list((course / ".grader" / "backups" / "07-ring-attention").iterdir())
    assert [b.read_text() for b in backups] == ["# my work in progress\n"]
    _, again = run(capsys, "reset", "--yes")
    assert "already the original stub" in again


def test_unknown_exercise_is_a_usage_error(course, capsys) -> None:
    code, out = run(capsys, "run", "08-nothing")
    assert code == 2
    assert out.startswith("error: no exercise called '08-nothing'")
    assert "Traceback" not in out


def test_missing_file_is_a_usage_error(course, capsys) -> None:
    code, out = run(capsys, "run", "--file", "nowhere.py")
    assert code == 2 and "no such file to grade" in out


@pytest.mark.parametrize(("given", "words"), [
    ("exercises/07-ring-attention/README.md", "exercises/07-ring-attention/README.md is not a Python file (.py)"),
    ("notes.txt", "notes.txt is not a Python file (.py) to grade"),
    ("exercises", "exercises is a folder, not a Python file to grade"),
    ("missing.py", "missing.py: no such file to grade"),
    ("link.py", "link.py: not graded: a symbolic link (name the file itself)"),
    ("pipe.py", "pipe.py is not a regular file to grade"),
    ("big.py", "big.py is too large to grade (3,145,728 bytes; the limit is 2,097,152)"),
])
@pytest.mark.parametrize("command", [["run"], ["submit"], ["watch"], ["repro", "stats-tiny-by-hand"]])
def test_a_file_that_is_not_a_python_module_is_a_usage_error(course, capsys, command, given, words) -> None:
    (course / "notes.txt").write_text("def attention_chunk_stats(): pass\n")
    (course / "link.py").symlink_to(SOLUTION)  # the reference solution, through a link
    os.mkfifo(course / "pipe.py")
    with open(course / "big.py", "wb") as handle:
        handle.truncate(3 << 20)
    code, out = run(capsys, *command, "--file", given)
    assert code == 2
    lines = out.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], out
    assert not (course / ".grader").exists()  # stopped before anything was graded or recorded


def test_syntax_error_names_file_line_and_text(course, capsys, tmp_path) -> None:
    # A run is answered before anything is graded (test_typos.py: before torch), as a usage error is.
    code, out = run(capsys, "run", "--file", str(SUBMISSIONS / "syntax_error.py"), "--no-record")
    assert code == 1
    assert out.startswith("error: ") and "syntax_error.py:6: your file could not be imported: SyntaxError" in out
    assert "def attention_chunk_stats(query, key_chunk, value_chunk)" in out
    assert "grader/" not in out  # no grader frames
    assert out.count("your file could not be imported") == 1
    # With a results file to write, it is graded: the report says it once, with the cases it kept from running.
    code, out = run(capsys, "run", "--file", str(SUBMISSIONS / "syntax_error.py"), "--no-record", "--json",
                    str(tmp_path / "results.json"))
    assert code == 1 and out.count("your file could not be imported") == 1
    assert "Your file could not be imported, so none of its 7 cases ran:" in out


def test_submit_lists_passing_cases_only_when_verbose(course, exercise, capsys, tmp_path) -> None:
    """A file with one function written: its cases pass, the others are not attempted."""
    partial = tmp_path / "partial.py"
    docstring = '"""Re-express both sides against their shared max, then add them."""'
    partial.write_text(SOLUTION.read_text().replace(docstring, docstring + "\n    raise NotImplementedError"))
    code, quiet = run(capsys, "submit", "--file", str(partial), "--no-record", "--device", "cpu")
    code, verbose = run(capsys, "submit", "--file", str(partial), "--no-record", "--device", "cpu", "--verbose")
    assert code == 1
    assert "PASS    stats-tiny-by-hand (attention_chunk_stats, cpu)" in verbose.splitlines()
    assert not any(line.startswith(("PASS", "TODO")) for line in quiet.splitlines())
    assert "Not attempted yet: merge_chunk_stats" in quiet
    assert quiet.splitlines()[-1] == verbose.splitlines()[-1] and " not attempted" in quiet.splitlines()[-1]


def test_cuda_only_without_cuda_is_a_usage_error(course, capsys) -> None:
    """A run in which nothing can run is never a pass: it stops before anything runs."""
    import pytest
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA is present here")
    for command in ("run", "submit"):
        code, out = run(capsys, command, "--device", "cuda", "--file", str(SOLUTION))
        assert code == 2
        assert out.strip() == ("error: --device cuda: torch.cuda.is_available() is False on this machine; "
                               "use --device cpu or all")
    assert not (course / ".grader" / "state.json").exists()


def test_python_dash_m_grader_works(course) -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "grader", "status"], capture_output=True, text=True,
                          cwd=course, timeout=60, env={**__import__("os").environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0 and "No results yet" in done.stdout


def test_submit_of_a_file_that_cannot_be_imported_says_so_once(course) -> None:
    """End to end, as a learner types it: the import error once, with the count of cases it kept from running.

    Grading ends in milliseconds then, while inputs are still being built on another thread: the status must
    still be 1 (that thread is joined first; torch code running at interpreter exit would abort the process)."""
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "grader", "submit", "07-ring-attention", "--file",
                           str(SUBMISSIONS / "syntax_error.py"), "--no-record", "--device", "cpu"],
                          capture_output=True, text=True, cwd=course, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"})
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert out.count("SyntaxError") == 1 and out.count("def attention_chunk_stats(query, key_chunk, value_chunk)") == 1
    (line,) = [line for line in out.splitlines() if line.startswith("Your file could not be imported")]
    last = out.splitlines()[-1]  # '0 passed, 0 failed, 163 not run (the file could not be imported)'
    total = int(last.split(", ")[2].split()[0])
    assert last == f"0 passed, 0 failed, {total} not run (the file could not be imported)"
    assert total > 7 and line == f"Your file could not be imported, so none of its {total} cases ran:"
    assert "ERROR" not in out and "\x1b" not in out and done.stderr == ""


def test_internal_failure_is_a_grader_error_with_a_report(course, capsys, monkeypatch) -> None:
    from grader.grading import pipeline

    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug in the grader")

    monkeypatch.setattr(pipeline, "grade", broken)
    code, out = run(capsys, "run")
    assert code == 3
    assert out.startswith("grader error: the grader itself failed (ZeroDivisionError); this is not about your code")
    assert "Traceback" not in out
    report = out.strip().rsplit("Report: ", 1)[1]
    assert "a bug in the grader" in (course / report).read_text()


def test_cuda_cases_run_on_cuda_when_present(course, capsys, tmp_path) -> None:
    import pytest
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: the CUDA path is covered by test_cuda_only_without_cuda_is_a_usage_error")
    results = tmp_path / "cuda.json"
    code, out = run(capsys, "submit", "--device", "cuda", "--file", str(SOLUTION), "--json", str(results),
                    "--no-record")
    assert code == 0, out
    tests = json.loads(results.read_text())["tests"]
    assert tests and all(test["extra_data"]["outcome"] == "passed" for test in tests)
    # On the CPU only: the memory-audited cases (host memory is what the kernel measures), and the ring where
    # fewer GPUs than ranks are present (gloo on the CPU then).
    on_cpu = {test["extra_data"]["case"] for test in tests if test["extra_data"]["device"] == "cpu"}
    memory = {test["extra_data"]["case"] for test in tests if "memory" in test["extra_data"]["case"]}
    ring = {test["extra_data"]["case"] for test in tests if test["extra_data"]["suite"] == "ring"}
    assert memory and memory <= on_cpu <= memory | (ring if torch.cuda.device_count() < 2 else set())


def _commands(parser) -> dict:
    """Every command of the parser and of its nested commands (`export gradescope`), by its words."""
    import argparse

    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found[name] = sub
                found.update({f"{name} {words}": nested for words, nested in _commands(sub).items()})
    return found


def test_every_command_has_a_handler_and_help() -> None:
    from grader.cli import handler
    from grader.cli.parser import HANDLERS

    parser = build_parser()
    top = {words for words in _commands(parser) if " " not in words}
    assert top == set(HANDLERS)
    assert all(callable(handler(name)) for name in HANDLERS)
    helps = {choice.dest: choice.help for action in parser._actions if hasattr(action, "_choices_actions")
             for choice in action._choices_actions}
    assert all(helps.get(name) for name in HANDLERS), helps


@pytest.mark.parametrize("words", sorted(_commands(build_parser())))
def test_every_commands_help_works(words, capsys) -> None:
    with pytest.raises(SystemExit) as leaving:
        main([*words.split(), "--help"])
    assert leaving.value.code == 0 and capsys.readouterr().out.startswith("usage: grader ")
