"""Examples by name: `run -k` runs some of them, `repro` writes one out as a script; hidden names stay unsaid."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, run_cli

EXERCISE = "02-scale"
HIDDEN = ("scale-float32", "scale-by-one-is-required")


@pytest.fixture
def scale(scale_course: Path) -> Path:
    """The 02-scale course, its stub holding the reference solution."""
    exercise = scale_course / "exercises" / EXERCISE
    (exercise / "scale.py").write_bytes((scale_course / "solutions" / EXERCISE / "scale.py").read_bytes())
    return scale_course


run = run_cli


@pytest.mark.parametrize(("pattern", "ran"), [
    ("three", ["scale-by-three"]),
    ("ZERO", ["scale-by-zero"]),             # any case, as pytest -k
    ("scale-by-*", ["scale-by-three", "scale-by-zero"]),
    ("*-t?ree", ["scale-by-three"]),
])
def test_k_runs_only_the_examples_it_matches(scale, capsys, pattern, ran) -> None:
    code, lines = run(capsys, "run", "-k", pattern, "--no-record", "--device", "cpu")
    assert code == 0
    assert [line.split()[1] for line in lines if line.startswith("PASS")] == ran
    assert f"Only the examples matching -k {pattern!r} ran ({len(ran)})." in lines
    assert lines[-1] == f"{len(ran)} passed, 0 failed"


def test_status_says_a_k_run_ran_only_some_examples(scale, capsys) -> None:
    assert run(capsys, "run", "-k", "three", "--device", "cpu")[0] == 0
    code, lines = run(capsys, "status")
    (last,) = [line for line in lines if line.startswith("Last run: ")]
    assert "1 passed, 0 failed of 1 (passed; only the examples matching -k 'three')" in last
    assert run(capsys, "run", "--device", "cpu")[0] == 0
    (last,) = [line for line in run(capsys, "status")[1] if line.startswith("Last run: ")]
    assert "2 passed, 0 failed of 2 (passed)" in last


# Hidden names and a glob, which matches whole names only, match no example.
@pytest.mark.parametrize("pattern", ["float32", "required", "nothing-like-it", "scale-by-?"])
def test_k_matching_no_example_is_one_line_naming_only_examples(scale, capsys, pattern) -> None:
    code, lines = run(capsys, "run", "-k", pattern, "--no-record")
    assert code == 2 and len(lines) == 1, lines
    assert re.fullmatch(rf"error: -k {re.escape(repr(pattern))} matches no example of 02-scale"
                        r"( \(did you mean scale-by-(three|zero)\?\))?; its examples: scale-by-three, scale-by-zero",
                        lines[0]), lines
    assert not (scale / ".grader").exists()


def test_repro_writes_a_script_that_calls_the_learners_function(scale, capsys) -> None:
    import torch

    from grader.learner.repro import python_command

    code, lines = run(capsys, "repro", "scale-by-three")
    script, python = ".grader/repro/scale-by-three.py", python_command()  # the Python that has torch
    assert code == 0 and lines == [
        f"Wrote {script}, with the example's inputs in scale-by-three.pt: {python} -i {script} runs your function on "
        f"them ({python} -m pdb {script} steps into it)."]
    saved = torch.load(scale / ".grader" / "repro" / "scale-by-three.pt", weights_only=True)
    assert saved["inputs"][0].shape == (2, 3) and saved["inputs"][1] == 3
    assert torch.equal(saved["expected"][0], saved["inputs"][0] * 3)
    # Run from elsewhere, as a learner would from a debugger: it finds the file and its inputs by its own path.
    done = subprocess.run([sys.executable, str(scale / script)], capture_output=True, text=True, cwd=scale.parent,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "inputs: x (2, 3), factor 3"
    assert lines[1].startswith("result: tensor([[") and "dtype=torch.float64" in done.stdout
    assert lines[-1] == "output: shape (2, 3), torch.float64; largest error against the exact answer 0"
    header = (scale / script).read_text().split("\nimport ", 1)[0]
    assert "no sandbox" in header  # the learner is told their code runs as it is


def test_repro_of_a_wrong_file_shows_what_differs(scale, capsys, tmp_path) -> None:
    wrong = tmp_path / "mine.py"
    wrong.write_text("def scale(x, factor):\n    print('called with', factor)\n    return (x + x)[:1]\n")
    assert run(capsys, "repro", "scale-by-three", EXERCISE, "--file", str(wrong))[0] == 0
    done = subprocess.run([sys.executable, ".grader/repro/scale-by-three.py"], capture_output=True, text=True,
                          cwd=scale, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "called with 3" in done.stdout  # the learner's own function, on the example's inputs
    assert "output: shape (1, 3), torch.float64; expected shape (2, 3)" in done.stdout


@pytest.mark.parametrize("name", [*HIDDEN, "made-up-case"])
def test_repro_refuses_a_hidden_case_as_it_refuses_an_unknown_one(scale, capsys, name) -> None:
    code, lines = run(capsys, "repro", name)
    assert code == 2
    # A suggestion may name the nearest example, never a hidden case.
    (line,) = lines
    assert re.fullmatch(rf"error: 02-scale has no example called {re.escape(repr(name))}"
                        r"( \(did you mean scale-by-(three|zero)\?\))?; its examples: scale-by-three, scale-by-zero",
                        line), line
    assert not any(hidden in line.split("called", 1)[1].replace(repr(name), "") for hidden in HIDDEN)
    assert not (scale / ".grader" / "repro").exists()
