"""Every path to the grader's code comes from one anchor, and each of its uses covers every module, subpackages included.

Each test grades nothing: it copies the package, adds a module deep in a subpackage, and asks the copy (in a
process of its own, the copy first on its path) what the fingerprint, the sandbox's view, the key of remembered
answers and verdicts, the Gradescope zip and the learner bundle make of it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

from grader import PACKAGE

ADDED = "grading/an_added_module.py"
PROBE = r"""
import json, sys, zipfile
from pathlib import Path
import grader
from grader.course.exercise import find_exercise
from grader.course import trust
from grader.sandbox import view
from grader.staff import gradescope
from grader.staff.learner_bundle import export_learner

added = grader.PACKAGE / sys.argv[1]
course, out = Path(sys.argv[2]), Path(sys.argv[3])
exercise = find_exercise(course, "01-stable-softmax")
binds = [Path(source) for source, target, read_only in view.build((), {}, False).binds if read_only]
zipped = gradescope.export(exercise, out / "autograder.zip")
export_learner(course, ["01-stable-softmax"], out / "bundle")
print(json.dumps({
    "package": str(grader.PACKAGE),
    "fingerprinted": str(added) in trust.take(exercise),
    "bound read-only": any(added.is_relative_to(source) for source in binds),
    "zipped": "grader/" + sys.argv[1] in zipfile.ZipFile(zipped).namelist(),
    "in the learner bundle": (out / "bundle" / "grader" / sys.argv[1]).is_file(),
    "code key": trust.code_key(exercise),
}))
"""


def ask(package_parent: Path, course: Path, out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([sys.executable, "-c", PROBE, ADDED, str(course), str(out)], capture_output=True, text=True,
                          cwd=course, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(package_parent),
                                           "GRADER_ROOT": str(course), "HOME": str(out)})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def copies(tmp_path_factory) -> tuple[dict, dict]:
    """What a copy of the package says without the added module, and with it."""
    base = tmp_path_factory.mktemp("anchors")
    course = base / "course"
    course.mkdir()
    for name in ("exercises", "solutions", "hints", "pyproject.toml"):
        source = REPO / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, course / name)
    shutil.copytree(PACKAGE, base / "site" / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", base / "site")  # a checkout's, as the exports want it
    before = ask(base / "site", course, base / "before")
    (base / "site" / "grader" / ADDED).write_text('"""A module added to a subpackage."""\n', encoding="utf-8")
    after = ask(base / "site", course, base / "after")
    return before, after


def test_the_copy_is_the_package_asked(copies) -> None:
    before, after = copies
    assert before["package"] == after["package"] and before["package"] != str(PACKAGE)


@pytest.mark.parametrize("use", ["fingerprinted", "zipped", "in the learner bundle"])
def test_a_module_added_to_a_subpackage_is_covered(copies, use) -> None:
    before, after = copies
    assert (before[use], after[use]) == (False, True)


def test_a_module_added_to_a_subpackage_is_in_the_sandboxs_read_only_view(copies) -> None:
    before, after = copies
    assert after["bound read-only"]


def test_a_module_added_to_a_subpackage_changes_what_remembered_verdicts_and_answers_are_kept_under(copies) -> None:
    before, after = copies
    assert before["code key"] != after["code key"]
