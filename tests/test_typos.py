"""Typos answered at once: every usage error before torch is imported, with a suggestion from the right names."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, make_course

from grader.errors import did_you_mean

RING = "07-ring-attention"
BAD = "import torch\n\ndef softmax(x, dim=-1)\n    return x\n"  # line 3: no colon
# argv, exit status, what its one error line says.
TYPOS = [
    (["run", "ring"], 2, f"error: no exercise called 'ring' (did you mean {RING}?)"),
    (["show", "6"], 2, "error: no exercise called '6' (did you mean 06-tensor-parallel-matmul?)"),
    (["run", "07", "-k", "nosuchcase"], 2, f"error: -k 'nosuchcase' matches no example of {RING}; its examples: "),
    (["watch", "07", "-k", "nosuchcase"], 2, f"error: -k 'nosuchcase' matches no example of {RING}"),
    (["run", "07", "--ring", "1"], 2, "error: --ring needs at least 2 ranks, not 1"),
    (["submit", "07", "--ranks", "1"], 2, "error: --ranks needs at least 2 ranks, not 1"),
    (["repro", "merge-new-chunk", "07"], 2,
     f"error: {RING} has no example called 'merge-new-chunk' (did you mean merge-new-chunk-has-larger-max?)"),
    (["hint", "07", "merge"], 2, f"error: {RING} has no hints about 'merge' (did you mean merge_chunk_stats?)"),
    (["run", "01", "--file", "bad.py"], 1, "error: bad.py:3: your file could not be imported: SyntaxError: "),
]


@pytest.fixture(scope="module")
def typed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    course = make_course(tmp_path_factory.mktemp("typos") / "course",
                         ["01-stable-softmax", "06-tensor-parallel-matmul", RING])
    (course / "bad.py").write_text(BAD)
    return course


def _grader(course: Path, argv: list[str], *flags: str) -> tuple[subprocess.CompletedProcess, float]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1", "GRADER_ROOT": str(course)}
    started = time.monotonic()
    done = subprocess.run([sys.executable, *flags, "-m", "grader", *argv], cwd=course, env=env, capture_output=True,
                          text=True, timeout=300)
    return done, time.monotonic() - started


@pytest.mark.parametrize(("argv", "status", "said"), TYPOS, ids=[" ".join(argv) for argv, _, _ in TYPOS])
def test_a_typo_is_answered_in_one_line_without_torch(typed, argv, status, said) -> None:
    done, _ = _grader(typed, argv, "-X", "importtime")
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert imported and not {name for name in imported if name == "torch" or name.startswith("torch.")}, argv
    assert done.returncode == status and done.stdout.startswith(said), (done.stdout, done.stderr[-2000:])
    lines = done.stdout.splitlines()
    assert len(lines) == (1 if status == 2 else 3), lines  # a syntax error: its line of code, then what to do


def test_every_typo_answers_within_half_a_bare_import_of_torch(typed) -> None:
    def bare() -> float:
        started = time.monotonic()
        subprocess.run([sys.executable, "-c", "import torch"], check=True, timeout=300)
        return time.monotonic() - started

    torch_seconds = statistics.median(bare() for _ in range(3))
    for argv, status, _ in TYPOS:
        seconds = statistics.median(_grader(typed, argv)[1] for _ in range(3))
        assert seconds < 0.5 * torch_seconds, (argv, seconds, torch_seconds)


def test_a_syntax_error_in_a_run_records_nothing(typed) -> None:
    done, _ = _grader(typed, ["run", "01", "--file", "bad.py"])
    assert done.returncode == 1 and "def softmax(x, dim=-1)" in done.stdout.splitlines()[1]
    state = typed / ".grader" / "state.json"
    assert not state.exists() or "last_run" not in json.loads(state.read_text())["exercises"].get(
        "01-stable-softmax", {})


@pytest.mark.parametrize(("word", "choices", "meant"), [
    ("6", ["01-stable-softmax", "06-tensor-parallel-matmul"], "06-tensor-parallel-matmul"),
    ("ring", ["01-stable-softmax", RING], RING),
    ("attention", ["01-stable-softmax", RING], RING),
    ("merge-new-chunk", ["ring-uneven-chunks", "merge-new-chunk-has-larger-max"], "merge-new-chunk-has-larger-max"),
    ("ring-atention", ["01-stable-softmax", RING], RING),
    ("sbumit", ["run", "submit", "status"], "submit"),
    ("8", ["01-stable-softmax", RING], ""),
])
def test_a_suggestion_is_by_number_then_by_a_word_then_by_spelling(word, choices, meant) -> None:
    assert did_you_mean(word, choices) == (f" (did you mean {meant}?)" if meant else "")
