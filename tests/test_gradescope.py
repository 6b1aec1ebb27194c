"""The Gradescope autograder: the zip, and its run_autograder on a simulated /autograder tree."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO, check_gradescope, make_course, own_processes, survivors

from grader.cli import main

ATTACKS = FIXTURES / "attacks"


def export(course: Path, name: str, tmp_path: Path, capsys) -> Path:
    out = tmp_path / "autograder.zip"
    assert main(["export", "gradescope", name, "-o", str(out)]) == 0
    assert "Wrote" in capsys.readouterr().out
    return out


def autograder_tree(zip_path: Path, root: Path, submission: dict[str, str]) -> Path:
    """/autograder as Gradescope lays it out: source/ from the zip, submission/, results/."""
    with zipfile.ZipFile(zip_path) as archive:
        archive.extractall(root / "source")
    for name in ("setup.sh", "run_autograder"):
        (root / "source" / name).chmod(0o755)
    (root / "submission").mkdir(parents=True)
    (root / "results").mkdir()
    for name, text in submission.items():
        (root / "submission" / name).write_text(text)
    return root


def run_autograder(root: Path) -> dict:
    env = {**os.environ, "GRADER_AUTOGRADER_ROOT": str(root), "GRADER_PYTHON": sys.executable,
           "PYTHONPATH": str(root / "source")}
    env.pop("GRADER_ROOT", None)
    done = subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    data = json.loads((root / "results" / "results.json").read_text())
    check_gradescope(data)
    return data


@pytest.fixture
def scale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = make_course(tmp_path / "course", ["02-scale"], FIXTURES / "courses")
    hidden = root / "exercises/02-scale/cases/hidden/more.yaml"
    hidden.write_text(hidden.read_text().replace("defaults:\n  points: 2\n",
                                                 "defaults:\n  points: 2\n  visibility: hidden\n"))
    monkeypatch.setenv("GRADER_ROOT", str(root))
    monkeypatch.chdir(root)
    return root


def test_the_zip_holds_the_autograder_and_nothing_for_learners(course, tmp_path, capsys):
    path = export(course, "07", tmp_path, capsys)
    with zipfile.ZipFile(path) as archive:
        names = set(archive.namelist())
        modes = {info.filename: info.external_attr >> 16 for info in archive.infolist()}
        setup = archive.read("setup.sh").decode()
    assert {"setup.sh", "run_autograder", "pyproject.toml", "exercises/course.yaml", "grader/grading/pipeline.py",
            "exercises/07-ring-attention/checker.py", "solutions/07-ring-attention/ring_attention.py",
            "exercises/07-ring-attention/cases/hidden/constraints.yaml",
            "solutions/07-ring-attention/mistakes/add_without_rescale.py"} <= names
    assert not any("variants/" in name or name.startswith("hints/") or "__pycache__" in name for name in names)
    assert modes["setup.sh"] & stat.S_IXUSR and modes["run_autograder"] & stat.S_IXUSR
    assert "torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in setup and "nvidia-smi" in setup
    assert "chmod -R a+rX /autograder/source" in setup


def test_a_correct_submission_scores_the_maximum(course, tmp_path, capsys):
    root = autograder_tree(export(course, "07", tmp_path, capsys), tmp_path / "autograder",
                           {"ring_attention.py": (REPO / "solutions/07-ring-attention/ring_attention.py").read_text()})
    data = run_autograder(root)
    assert data["score"] == 100.0 and data["extra_data"]["status"] == "passed"
    assert data["extra_data"]["containment"].startswith(("sandbox", "no sandbox"))
    assert "as root" not in data["extra_data"]["containment"]  # never, when the grader is root
    assert len(data["tests"]) > 150


@pytest.mark.parametrize("submission, expected", [
    ({"scale.py": "def scale(x, factor):\n    return x + x\n"}, "failed"),
    ({"helper.py": "def scale(x, factor):\n    import os\n    os.abort()\n"}, "failed"),
    ({"notes.txt": "nothing to grade"}, "error"),
])
def test_wrong_crashing_or_missing_submissions_still_get_results(scale, tmp_path, capsys, submission, expected):
    root = autograder_tree(export(scale, "02", tmp_path, capsys), tmp_path / "autograder", submission)
    data = run_autograder(root)
    assert data["extra_data"]["status"] == expected and data["score"] < 10.0
    if expected == "error":
        assert "no file named scale.py" in data["output"] and data["tests"] == []
    else:
        visibility = {test["extra_data"]["case"]: test["visibility"] for test in data["tests"]}
        assert visibility["scale-by-three"] == "visible" and visibility["scale-float32"] == "hidden"
        assert all("Aborted" not in test["output"] or test["extra_data"]["suite"] != "hidden" for test in data["tests"])


def test_a_hostile_submission_cannot_touch_the_results(scale, tmp_path, capsys):
    """A daemon meant to outlive the grading and rewrite results.json, from a submission that also fails."""
    daemon = (ATTACKS / "env_scrubbed_daemon.py").read_text().replace("def ring_attention(query, key_chunks, "
                                                                     "value_chunks):  # noqa: F811", "def scale(x, f):")
    daemon = daemon.replace("return 2 * full_attention(query, key_chunks, value_chunks)", "return x")
    root = autograder_tree(export(scale, "02", tmp_path, capsys), tmp_path / "autograder", {"scale.py": daemon})
    before = own_processes()
    data = run_autograder(root)
    written = (root / "results" / "results.json").read_text()
    time.sleep(2.5)
    assert survivors(before) == []
    assert (root / "results" / "results.json").read_text() == written and data["score"] < 10.0


@pytest.mark.parametrize("link, target, said", [
    ("scale.py", "/proc/self/cwd/solutions/02-scale/scale.py", "scale.py: not graded: a symbolic link (hand in the "
                                                               "file itself)"),
    ("src", "/proc/self/cwd/solutions/02-scale", "the submission has no file named scale.py"),  # never walked into
])
def test_a_link_in_a_submission_is_never_followed(scale, tmp_path, capsys, link, target, said):
    root = autograder_tree(export(scale, "02", tmp_path, capsys), tmp_path / "autograder", {})
    (root / "submission" / link).symlink_to(target)  # the reference, as the grader's own working folder has it
    data = run_autograder(root)
    assert data["score"] == 0.0 and data["extra_data"]["status"] == "error" and data["tests"] == []
    assert data["output"] == f"The autograder could not grade this submission: {said}"
