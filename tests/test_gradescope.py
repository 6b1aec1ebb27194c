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

from grader import __version__
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


def run_raw(root: Path) -> subprocess.CompletedProcess:
    """run_autograder as Gradescope runs it: its exit status and what it printed (the instructors' panel)."""
    env = {**os.environ, "GRADER_AUTOGRADER_ROOT": str(root), "GRADER_PYTHON": sys.executable,
           "PYTHONPATH": str(root / "source")}
    env.pop("GRADER_ROOT", None)
    return subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, capture_output=True, text=True,
                          timeout=300)


def run_autograder(root: Path) -> dict:
    done = run_raw(root)
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
    done = run_raw(root)
    assert done.returncode == 0 and "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    data = json.loads((root / "results" / "results.json").read_text())
    check_gradescope(data)
    assert data["score"] == 100.0 and data["extra_data"]["status"] == "passed"
    assert data["extra_data"]["containment"].startswith(("sandbox", "no sandbox"))
    assert "as root" not in data["extra_data"]["containment"]  # never, when the grader is root
    assert len(data["tests"]) > 150
    # The instructors' panel: Gradescope shows run_autograder's standard output to staff alone.
    lines = done.stdout.splitlines()
    counts = data["extra_data"]["counts"]
    assert f"grader {__version__}: 07-ring-attention, ring_attention.py" in lines
    assert "status: passed, score 100 of 100" in lines
    assert f"cases: {counts['total']} ({counts['passed']} passed" in done.stdout
    assert "required cases failed: none" in lines and "mistakes diagnosed: none" in lines
    assert f"containment: {data['extra_data']['containment']}" in lines
    assert any(line.startswith("time: ") and line.endswith(" s") for line in lines)


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


FORGED = "AUTOGRADER ERROR: forged by the learner"


def test_a_failed_hidden_required_case_is_said_without_its_name(scale, tmp_path, capsys):
    """0 points although cases passed: results.json says a required case failed before the due date too."""
    wrong = (f"print({FORGED!r})\n\ndef scale(x, factor):\n    print({FORGED!r})\n    out = x - x\n"
             f"    for _ in range(2 if factor == 1 else factor):\n        out = out + x\n    return out\n")
    root = autograder_tree(export(scale, "02", tmp_path, capsys), tmp_path / "autograder", {"scale.py": wrong})
    done = run_raw(root)
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads((root / "results" / "results.json").read_text())
    check_gradescope(data)
    earned = sum(test["score"] for test in data["tests"])
    assert data["score"] == 0.0 and earned > 0
    assert data["output"].splitlines()[0] == (
        f"Score: 0 of 10. 1 required case failed: 1 hidden case, named once the course shows it, failed on its values "
        f"(output is wrong: outside the allowed error). The score of a submission that fails a required case is 0, "
        f"whatever the other cases earned ({earned:.4g} points in the tests below).")
    # Then each cause once, a case named only where it is visible, and the count.
    assert data["output"].splitlines()[1:] == ["scale: output is wrong: outside the allowed error (1 case)",
                                               "3 passed, 1 failed"]
    assert "scale-by-one-is-required" not in data["output"]
    # Staff see the name; the learner's prints never reach the panel, so they cannot forge a line of it.
    assert "  scale-by-one-is-required [cpu]: failed (hidden)" in done.stdout.splitlines()
    assert "status: failed, score 0 of 10" in done.stdout and FORGED not in done.stdout + done.stderr


def test_a_required_case_that_is_visible_is_named():
    from grader.report.gradescope_json import report_to_json
    from grader.results import CaseResult, Outcome, Report

    report = Report("02-scale", "submit", "scale.py", declared_max=10.0, results=[
        CaseResult("scale-by-three", "examples", "scale", "cpu", Outcome.PASSED),
        CaseResult("scale-by-one-is-required", "examples", "scale", "cpu", Outcome.TIMED_OUT, required=True),
        CaseResult("scale-big", "hidden", "scale", "cpu", Outcome.FAILED, required=True, visibility="after_due_date")])
    data = report_to_json(report)
    check_gradescope(data)
    assert data["output"].splitlines() == [
        "Score: 0 of 10. 2 required cases failed: scale-by-one-is-required [cpu] timed out; 1 hidden case, named once "
        "the course shows it, failed. The score of a submission that fails a required case is 0, whatever the other "
        "cases earned (3.333 points in the tests below).", "2 cases failed, for 2 causes:",
        "- scale: timed out (1 case, such as scale-by-one-is-required [cpu])", "- scale: failed (1 case)",
        "1 passed, 2 failed"]
    report.results = report.results[:1]
    assert report_to_json(report)["output"] == "1 passed, 0 failed"  # nothing required failed: nothing to explain


def test_a_grader_failure_is_an_autograder_error_never_a_score(scale, tmp_path, capsys, monkeypatch):
    import io

    from grader.grading import pipeline
    from grader.staff import gradescope

    root = autograder_tree(export(scale, "02", tmp_path, capsys), tmp_path / "autograder",
                           {"scale.py": (scale / "solutions/02-scale/scale.py").read_text()})
    (root / "results" / "results.json").write_text('{"score": 10.0}')  # an earlier try's file must not stand

    def tripped(*args, **kwargs):
        raise RuntimeError("the grader tripped")

    monkeypatch.setattr(pipeline, "grade", tripped)
    out = io.StringIO()
    assert gradescope.autograde(root, out) == 1
    assert not (root / "results" / "results.json").exists()  # Gradescope: "The autograder failed to execute"
    text = out.getvalue()
    assert "AUTOGRADER ERROR: this submission was not graded, and no results.json was written" in text
    assert "cause: grader error: RuntimeError: the grader tripped" in text.splitlines()
    assert "Traceback (most recent call last):" in text and f"grader {__version__}" in text
