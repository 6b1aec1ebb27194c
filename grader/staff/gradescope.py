"""Gradescope: the autograder zip for one exercise, and what its run_autograder does for each submission.

The zip holds the grader package, the exercise with its hidden cases, reference and catalogue of
mistakes, `setup.sh` (run once when Gradescope builds the image: Python, the pinned torch build
for the CPU or for CUDA where the autograder has a GPU, bubblewrap) and `run_autograder` (run for
each submission: grades /autograder/submission/ and writes /autograder/results/results.json).
Learner code is sandboxed as everywhere else, and never runs as root: where the container allows
no namespaces it still runs as an unprivileged uid, which is why setup.sh makes the installation
readable by everyone.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import time
import traceback
import zipfile
from pathlib import Path
from typing import TextIO

from grader import PACKAGE, __version__
from grader.course.exercise import Exercise, find_exercise
from grader.errors import GraderError, UsageError
from grader.files import RefusedFile, kind_of, read_regular, write_atomic
from grader.inert import one_line
from grader.report.staff_summary import failure_summary, graded_summary
from grader.results import Report
from grader.results.file import ResultsFile, encode
from grader.results.from_report import refused_file

ROOT_VARIABLE = "GRADER_AUTOGRADER_ROOT"  # a simulated /autograder, for trying the zip out

SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (Ubuntu 22.04 by default:
# Python 3.10, apt; no namespaces in the container, so no bubblewrap either).
set -euo pipefail
cd /autograder/source
apt-get update
# libseccomp2 compiles the learner processes' system-call policy (apt itself needs it, so it is there already).
apt-get install -y --no-install-recommends python3 python3-venv python3-pip libseccomp2
python3 -m venv .venv
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then
  .venv/bin/pip install torch==2.13.0            # the CUDA build: this autograder has a GPU
else
  .venv/bin/pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
fi
.venv/bin/pip install .
# Learner code runs as an unprivileged user of its own: it reads Python, torch and the grader, and nothing of
# the course (the reference, the hidden cases, the catalogue, the checker), which only root may read.
chmod -R a+rX /autograder/source
chmod -R go-rwx /autograder/source/exercises /autograder/source/solutions
chmod 711 /autograder/source
"""

RUN = """#!/usr/bin/env bash
# Gradescope runs this for each submission, from /autograder: grade /autograder/submission/ and write
# /autograder/results/results.json. {variable} points elsewhere to try it on a copy of that tree.
set -u
ROOT="${{{variable}:-/autograder}}"
cd "$ROOT/source"
exec "${{GRADER_PYTHON:-$ROOT/source/.venv/bin/python}}" -m grader autograde --root "$ROOT"
"""


def export(exercise: Exercise, out: Path) -> Path:
    """Write the autograder zip for one exercise; returns its path."""
    if out.suffix != ".zip":
        raise UsageError(f"{out}: the autograder is a .zip")
    if not exercise.solution.is_file():
        raise UsageError(f"{exercise.name} has no reference solution at {exercise.solution}: the autograder needs it")
    out.parent.mkdir(parents=True, exist_ok=True)
    name = exercise.name
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        _add(archive, "setup.sh", SETUP, executable=True)
        _add(archive, "run_autograder", RUN.format(variable=ROOT_VARIABLE), executable=True)
        _add(archive, "exercises/course.yaml", f"course: {name} on Gradescope\nexercises:\n  - exercises/{name}\n")
        _add_tree(archive, PACKAGE.parent / "pyproject.toml", "pyproject.toml")
        _add_tree(archive, PACKAGE, "grader")
        _add_tree(archive, exercise.directory, f"exercises/{name}")
        _add_tree(archive, exercise.solution, f"solutions/{name}/{exercise.solution.name}")
        if exercise.mistakes.is_dir():
            _add_tree(archive, exercise.mistakes, f"solutions/{name}/mistakes")
    return out


def _add(archive: zipfile.ZipFile, name: str, text: str, executable: bool = False) -> None:
    info = zipfile.ZipInfo(name, date_time=time.localtime()[:6])
    info.external_attr = (0o755 if executable else 0o644) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, text)


def _add_tree(archive: zipfile.ZipFile, source: Path, inside: str) -> None:
    paths = [source] if source.is_file() else sorted(path for path in source.rglob("*") if path.is_file())
    for path in paths:
        if "__pycache__" in path.parts or path.name.endswith(".pyc"):
            continue
        name = inside if source.is_file() else f"{inside}/{path.relative_to(source).as_posix()}"
        archive.write(path, name)


# ---------------------------------------------------------------- run_autograder

class SubmissionProblem(Exception):
    """What the learner handed in cannot be graded (no such file, a link): the learner's to fix, said to them."""


def autograde(root: Path, out: TextIO | None = None) -> int:
    """Grade the submission under `root`/submission; write `root`/results/results.json and a summary for staff.

    The summary goes to standard output, which Gradescope shows to instructors alone. A submission that is
    graded, or that cannot be (its file is missing, a link), gets its results.json and status 0. When the
    course or the grader fails, no results.json is written and the status is 1: Gradescope then shows an
    autograder failure, which staff see and regrade, never a score of 0 that reads like the learner's.
    """
    out = out or sys.stdout
    results = root / "results" / "results.json"
    started = time.monotonic()
    with contextlib.suppress(OSError):
        results.unlink()  # a results file left from an earlier try must not stand for this one
    try:
        report = _grade(root)
    except SubmissionProblem as problem:
        data = _refused(f"The autograder could not grade this submission: {problem}", started)
        write_atomic(results, encode(data))
        _say(out, failure_reason(str(problem), time.monotonic() - started))
        return 0
    except GraderError as error:
        _say(out, failure_summary(str(error), __version__, time.monotonic() - started))
        return 1
    except Exception as error:  # noqa: BLE001  (the one place the autograder's own failure meets Gradescope)
        _say(out, failure_summary(f"grader error: {type(error).__name__}: {error}", __version__,
                                  time.monotonic() - started, detail=traceback.format_exc()))
        return 1
    seconds = time.monotonic() - started
    cause = report.not_graded or report.integrity_error
    if cause:  # nothing of this run is about the learner's code, and the reason may quote hidden cases
        _say(out, failure_summary(cause, __version__, seconds, report))
        return 1
    from grader.results.from_report import results_file

    write_atomic(results, encode(results_file(report, grader_version=__version__)))
    _say(out, graded_summary(report, __version__, seconds))
    return 0


def failure_reason(problem: str, seconds: float) -> str:
    """For staff, when the learner's submission holds nothing to grade: what they were told."""
    return (f"not graded (the learner was told why, with a score of 0): {one_line(problem)}\n"
            f"grader {__version__}, time: {seconds:.1f} s\n")


def _say(out: TextIO, text: str) -> None:
    try:
        out.write(text)
        out.flush()
    except (OSError, ValueError):  # no one reads the output: the results file is what counts
        pass


def _grade(root: Path) -> Report:
    from grader.grading.pipeline import grade
    from grader.grading.request import Run
    from grader.sandbox import zygote

    exercise = find_exercise(root / "source", None)
    learner = _submitted_file(root / "submission", exercise.stub.name)
    # The submission is copied out of Gradescope's folder first: the grader reads what it grades from a
    # place of its own, and learner code sees only its copy inside the sandbox.
    folder = Path(tempfile.mkdtemp(prefix="grader-submission-"))
    try:
        copy = folder / exercise.stub.name
        try:
            # One descriptor that follows no link, checked and read: what is copied is the file that was found.
            copy.write_bytes(read_regular(learner))
        except RefusedFile as error:
            raise SubmissionProblem(f"{_shown(learner, root / 'submission')}: not graded: {error.reason}") from None
        with zygote.held():  # every worker of the grade forks from one process that imported torch
            report = grade(Run(exercise, copy, "submit", "all", confined=True))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    report.file = learner.name
    return report


def _submitted_file(folder: Path, stub: str) -> Path:
    """The learner's file: the stub's name anywhere in the submission, else its only Python file.

    Walked without following a link: a link named like the file is found, and refused by name."""
    if not folder.is_dir():
        raise SubmissionProblem(f"there is no submission folder ({folder})")
    found = sorted(Path(top) / name for top, _, names in os.walk(folder, followlinks=False) for name in names)
    named = [path for path in found if path.name == stub]
    python = [path for path in found if path.suffix == ".py"]
    if len(named) > 1:
        raise SubmissionProblem(f"the submission has {len(named)} files named {stub}; hand in one")
    if not named and len(python) != 1:
        raise SubmissionProblem(f"the submission has no file named {stub}" + (
            f" and {len(python)} other Python files; hand in {stub}" if python else ""))
    chosen = named[0] if named else python[0]
    kind = kind_of(chosen)
    if kind != "file":
        what = "a symbolic link" if kind == "link" else "not a regular file"
        raise SubmissionProblem(f"{_shown(chosen, folder)}: not graded: {what} (hand in the file itself)")
    return chosen


def _shown(path: Path, folder: Path) -> str:
    """A submitted file's name as the learner gave it, on one line."""
    return one_line(path.relative_to(folder).as_posix())


def _refused(message: str, started: float) -> ResultsFile:
    """results.json for a submission that holds nothing to grade: the learner's message, no test."""
    return refused_file(message, time.monotonic() - started, __version__)
