"""The attacks that went through kernel objects sandboxes shared, graded at root, as an ordinary user and in a
container: none is Accepted, none carries a hidden input into a report, no learner of a cohort runs another's code.

tests/fixtures/attacks/ holds each: 06's parallel_mlp gathering over an abstract unix socket, adding its partial
sums in System V shared memory, or swapping its shards at import before the count begins, then all-reducing zeros
to meet the traffic floor; read locks and inotify on the standard library carrying what the hidden worker saw to a
ring rank beside it; one learner lending its code to another through read locks while both are graded with --jobs 2.
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO, make_course
from test_kernel_objects import at_level
from test_levels import CASES, NOBODY, _prerequisites, level_root

pytestmark = pytest.mark.skipif(bool(_prerequisites()), reason=_prerequisites() or "ready")
ATTACKS = FIXTURES / "attacks"
LEVELS = ("root", "user", "container")
SECRET = """\
cases:
  - name: secret-one
    function: ring_attention
    lq: 13
    d: 11
    dv: 4
    chunks: [3, 5, 7]
    seed: 5
  - name: secret-two
    function: ring_attention
    lq: 13
    d: 11
    dv: 4
    chunks: [3, 5, 7]
    seed: 6
"""
SEEN = "(13, 11)"  # the shape of the hidden cases' queries, which no visible case has


@pytest.fixture(scope="module")
def world():
    """06 and 07 cut to their examples and distributed suites, 07 with two hidden cases of a shape of their own;
    each attack as one learner file, and a cohort of a lender and a borrower; all owned by the ordinary user."""
    root = level_root("grader-attacks-")
    course = make_course(root / "course", ["06-tensor-parallel-matmul", "07-ring-attention"])
    cases = course / "exercises/07-ring-attention/cases"
    (cases / "examples.yaml").write_text(CASES)
    for path in (cases / "hidden").glob("*.yaml"):
        path.unlink()
    (cases / "hidden/secret.yaml").write_text(SECRET)
    shutil.rmtree(course / "exercises/06-tensor-parallel-matmul/cases/hidden")
    base = (ATTACKS / "_base.py").read_text()
    for name in ("locks_carry_hidden_inputs", "inotify_carries_hidden_inputs"):
        (course / f"{name}.py").write_text(base + "\n\n" + (ATTACKS / f"{name}.py").read_text())
    for name in ("mlp_gathers_over_unix", "mlp_shares_sysv_memory", "mlp_exchanges_at_import"):
        shutil.copy(ATTACKS / f"{name}.py", course / f"{name}.py")
    cohort = root / "cohort"
    cohort.mkdir()
    (cohort / "lender.py").write_text(base + "\n\n" + (ATTACKS / "cohort_lends_by_locks.py").read_text())
    shutil.copy(ATTACKS / "cohort_borrows_by_locks.py", cohort / "borrower.py")
    for path in [root / "course", *course.rglob("*"), cohort, *cohort.iterdir()]:
        os.chown(path, NOBODY, -1)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def grader(world: Path, level: str, *args: str) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(world / "course"), "NO_COLOR": "1"}
    if level == "root":
        env["PYTHONPATH"] = str(REPO)
    return subprocess.run(at_level(world, level, "-m", "grader", *args), cwd=world / "course", capture_output=True,
                          text=True, timeout=600, env=env)


def submit(world: Path, level: str, exercise: str, name: str) -> str:
    """A submission of attack `name`, every case shown in full (--verbose), as the grader printed it."""
    done = grader(world, level, "submit", exercise, "--file", f"{name}.py", "--device", "cpu", "--no-record", "--verbose")
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    return done.stdout


def distributed(output: str) -> list[str]:
    """The verdict lines of the distributed suite's cases (a passing case has none under submit; a case that failed
    as the one before it is counted under it)."""
    return [line for line in output.splitlines() if re.search(r"\(\w+ suite, \d+ ranks, cpu\)$", line)]


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("attack, words", [("mlp_gathers_over_unix", "Operation not permitted"),
                                           ("mlp_shares_sysv_memory", "Operation not permitted"),
                                           ("mlp_exchanges_at_import", "no shard was in reach at import")])
def test_ranks_that_exchange_beside_the_count_are_never_accepted(world, level, attack, words) -> None:
    """Over another channel, or over the loopback before the count begins (at import, before the group is joined)."""
    output = submit(world, level, "06", attack)
    assert "Accepted" not in output and "Not accepted" in output, output
    assert re.search(r"^distributed\s+0/2 passed", output, re.MULTILINE), output
    # Each case is an error naming what was refused or missing; where the ranks cannot be sealed, the rule is not
    # judged on a case that got past it.
    assert distributed(output) and all(line.split()[0] in ("ERROR", "UNJUDGED") for line in distributed(output))
    assert words in output, output
    if level != "container":
        assert "UNJUDGED" not in output, output


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("attack, words", [("locks_carry_hidden_inputs", "LOCK READER"),
                                           ("inotify_carries_hidden_inputs", "INOTIFY READER")])
def test_nothing_the_hidden_worker_saw_reaches_a_ring_case(world, level, attack, words) -> None:
    output = submit(world, level, "07", attack)
    readings = [line for line in output.splitlines() if f"raised RuntimeError: {words}" in line]
    assert readings, output  # the ring's ranks read, and said what they found in a visible case's message
    assert SEEN not in output, output
    assert all("refused (Operation not permitted)" in line for line in readings), readings


@pytest.mark.parametrize("level", LEVELS)
def test_a_learner_of_a_cohort_runs_nothing_of_another(world, level) -> None:
    book = world / f"book-{level}"
    book.mkdir()
    os.chown(book, NOBODY, -1)  # the ordinary user's gradebook
    done = grader(world, level, "grade", str(world / "cohort"), "--exercise", "07", "--out", str(book), "--jobs", "2",
                  "--device", "cpu")
    with open(book / "grades.csv", newline="") as handle:
        rows = {row["submission"]: row for row in csv.DictReader(handle)}
    assert rows["lender.py"]["status"] == "passed", done.stdout
    assert rows["borrower.py"]["status"] == "failed" and float(rows["borrower.py"]["score"]) == 0, done.stdout
