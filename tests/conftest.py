"""Shared fixtures: a private copy of the course per test, and a look at this test run's own processes."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SUBMISSIONS = FIXTURES / "submissions"
PR_SET_CHILD_SUBREAPER = 36

# Orphans of anything this test run starts (a daemon that double-forked out of a sandbox that failed to
# hold it) become children of this process, so a test can find them among its own descendants.
if sys.platform.startswith("linux"):
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


@pytest.fixture(autouse=True)
def piped_without_a_width(monkeypatch):
    """Every test starts as output piped to a file with no width given: pytest-xdist's workers inherit COLUMNS=80
    (and LINES) from it, which would wrap the grader's lines there and nowhere else. A test that wants a width
    sets COLUMNS itself."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)


@pytest.fixture(scope="session", autouse=True)
def one_zygote_per_test_process():
    """Grades run in this test process fork their workers from one preloaded zygote, as a long `grader watch`
    or `grader grade` does, rather than start one (and import torch again) for each command. Started before
    any test, so that no test counts it among the processes it left. Graders run as commands still start
    and stop their own."""
    from grader.sandbox import zygote

    started = zygote.prestart()
    yield
    if started:
        zygote.stop()


class Heard:
    """A listener (grader/grading/request.py) made of two calls: how a test watches a grade as it goes."""

    def __init__(self, start=lambda report: None, finished=lambda result: None) -> None:
        self.start, self.finished = start, finished


def own_processes() -> dict[int, str]:
    """pid -> command line and (in brackets) name of every live (not zombie) descendant of this test process.

    The name tells programs forked from the grader's zygote apart: their command line is the zygote's."""
    found: dict[int, str] = {}
    queue = [os.getpid()]
    while queue:
        pid = queue.pop()
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{pid}/task/{task}/children") as handle:
                    children = [int(child) for child in handle.read().split()]
            except OSError:
                continue
            for child in children:
                try:
                    with open(f"/proc/{child}/stat", "rb") as handle:
                        state = handle.read().rsplit(b")", 1)[1].split()[0]
                    with open(f"/proc/{child}/cmdline", "rb") as handle:
                        command = handle.read().replace(b"\0", b" ").decode(errors="replace")
                    with open(f"/proc/{child}/comm") as handle:
                        command += f"[{handle.read().strip()}]"
                except OSError:
                    continue
                if state != b"Z":
                    found[child] = command
                queue.append(child)
    return found


def survivors(before: dict[int, str], wait: float = 3.0) -> list[str]:
    """Descendants that appeared since `before` and are still alive after `wait` seconds."""
    deadline = time.monotonic() + wait
    while True:
        left = [command for pid, command in own_processes().items() if pid not in before]
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.05)


RING = "07-ring-attention"  # the exercise most tests of the grader's machinery grade


def ring_exercise():
    """Exercise 07 as it is in the repository, whatever else the live course lists; skipped if it is gone."""
    from grader.course.exercise import load_exercise

    folder = REPO / "exercises" / RING
    if not (folder / "exercise.yaml").is_file():
        pytest.skip(f"the repository has no exercise {RING}")
    return load_exercise(REPO, folder)


def ring_checker():
    """Exercise 07's checker, loaded as the grader loads it."""
    from grader.course.checker import load_checker

    return load_checker(ring_exercise().checker)


def make_course(root: Path, names: list[str], source: Path = REPO) -> Path:
    """A course of its own at `root` holding copies of exercises (and their solutions and hints) from `source`."""
    lines = ["course: a course for one test", "exercises:"]
    for name in names:
        for folder in ("exercises", "solutions", "hints"):
            if (source / folder / name).is_dir():
                shutil.copytree(source / folder / name, root / folder / name,
                                ignore=shutil.ignore_patterns("__pycache__"))
        lines.append(f"  - exercises/{name}")
    (root / "exercises").mkdir(parents=True, exist_ok=True)
    (root / "exercises" / "course.yaml").write_text("\n".join(lines) + "\n")
    return root


@pytest.fixture
def course(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private course holding a copy of exercise 07 alone, treated by the grader as its root.

    Its own course file: adding or removing an exercise in the repository changes nothing here.
    """
    ring_exercise()
    root = make_course(tmp_path / "course", [RING])
    monkeypatch.setenv("GRADER_ROOT", str(root))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def exercise(course: Path):
    """The ring-attention exercise of the private course copy."""
    from grader.course.exercise import find_exercise

    return find_exercise(course, None)


@pytest.fixture
def unsandboxed(monkeypatch: pytest.MonkeyPatch):
    """Learner code run without namespaces, as on a machine that has none (macOS, a locked-down container)."""
    from grader.sandbox import machine as sandbox

    monkeypatch.setenv(sandbox.SETTING, "off")
    sandbox.support.cache_clear()
    yield
    monkeypatch.delenv(sandbox.SETTING)
    sandbox.support.cache_clear()


@pytest.fixture
def bare(unsandboxed, monkeypatch: pytest.MonkeyPatch):
    """Neither namespaces nor cgroups: the containment a machine without them still gets."""
    from grader.sandbox import cgroups

    monkeypatch.setattr(cgroups, "create", lambda memory_bytes, max_processes: cgroups.Group())


# Gradescope's results.json, as its documentation lists the fields and their allowed values.
TOP = {"score", "execution_time", "output", "output_format", "visibility", "stdout_visibility", "extra_data", "tests",
       "leaderboard"}
TEST = {"score", "max_score", "status", "name", "name_format", "number", "output", "output_format", "tags",
        "visibility", "extra_data"}
FORMATS = {"text", "html", "simple_format", "md", "ansi"}
VISIBILITIES = {"visible", "hidden", "after_due_date", "after_published"}


def check_gradescope(data: dict) -> None:
    """Gradescope's results.json: only its fields, each of its types and allowed values; ours under extra_data."""
    assert set(data) <= TOP, set(data) - TOP
    assert isinstance(data["score"], float) and isinstance(data["execution_time"], (int, float))
    assert data["output_format"] in FORMATS and data["visibility"] in VISIBILITIES
    assert data["stdout_visibility"] in VISIBILITIES and isinstance(data["extra_data"], dict)
    for test in data["tests"]:
        assert set(test) <= TEST, set(test) - TEST
        assert test["status"] in ("passed", "failed") and test["visibility"] in VISIBILITIES
        assert isinstance(test["score"], float) and isinstance(test["max_score"], float)
        assert 0 <= test["score"] <= test["max_score"]
        assert isinstance(test["name"], str) and isinstance(test["number"], str) and test["output_format"] in FORMATS
        assert isinstance(test["tags"], list) and all(isinstance(tag, str) for tag in test["tags"])


def fixture_course(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> Path:
    """A private course of one test exercise of tests/fixtures/courses, made the grader's root and the current
    folder, with plain output."""
    root = make_course(tmp_path / "course", [name], FIXTURES / "courses")
    monkeypatch.setenv("GRADER_ROOT", str(root))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def scale_course(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private course of the small test exercise 02-scale (four cases, two of them hidden), as the grader's root."""
    return fixture_course(tmp_path, monkeypatch, "02-scale")


def run_gradescope_autograder(course: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """02-scale exported for Gradescope and its run_autograder run on the course's reference, laid out as
    /autograder is (source/, submission/, results/ under tmp_path/autograder)."""
    import zipfile

    from grader.cli import main

    assert main(["export", "gradescope", "02", "-o", str(tmp_path / "a.zip")]) == 0
    root = tmp_path / "autograder"
    with zipfile.ZipFile(tmp_path / "a.zip") as archive:
        archive.extractall(root / "source")
    (root / "submission").mkdir()
    (root / "results").mkdir()
    (root / "submission" / "scale.py").write_text((course / "solutions/02-scale/scale.py").read_text())
    env = {**os.environ, "GRADER_AUTOGRADER_ROOT": str(root), "GRADER_PYTHON": sys.executable,
           "PYTHONPATH": str(root / "source")}
    env.pop("GRADER_ROOT", None)
    return subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, capture_output=True, text=True,
                          timeout=300)


def run_cli(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, list[str]]:
    """The grader's command line in this process: exit code and printed lines; never a traceback."""
    from grader.cli import main

    code = main(list(argv))
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    return code, out.out.splitlines()
