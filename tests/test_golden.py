"""Golden JSON over a fixture set of submissions: the results file is the grader's contract with platforms."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import SUBMISSIONS, check_gradescope

from grader.grading.pipeline import grade
from grader.grading.request import Run
from grader.report.gradescope_json import report_to_json

GOLDEN = Path(__file__).resolve().parent / "golden"
NAMES = sorted(path.stem for path in SUBMISSIONS.glob("*.py"))


def normalized(report) -> dict:
    """The results file without what differs between machines: timings and absolute paths."""
    data = report_to_json(report)
    data["execution_time"] = 0.0
    data["extra_data"]["containment"] = "<containment>"  # names a uid drawn at random, and depends on the machine
    return json.loads(json.dumps(data).replace(str(SUBMISSIONS), "<submissions>"))


@pytest.mark.parametrize("name", NAMES)
def test_results_file_matches_golden(name: str, exercise) -> None:
    report = grade(Run(exercise, SUBMISSIONS / f"{name}.py", "run", "cpu"))
    data = normalized(report)
    golden = GOLDEN / f"{name}.json"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    assert data == json.loads(golden.read_text(encoding="utf-8"))


def test_gradescope_fields_present(exercise) -> None:
    data = normalized(grade(Run(exercise, SUBMISSIONS / "wrong_no_rescale.py", "run", "cpu")))
    check_gradescope(data)
    for test in data["tests"]:
        assert {"outcome", "suite", "device", "function", "case", "diagnosis"} <= set(test["extra_data"])
    assert abs(data["score"] - sum(test["score"] for test in data["tests"])) < 1e-4
    assert abs(data["extra_data"]["max_score"] - sum(test["max_score"] for test in data["tests"])) < 1e-4
