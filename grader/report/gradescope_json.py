"""A report's results file as JSON values or text, as Gradescope and every other reader take it (grader.results.file)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from grader.results import CaseResult, Report
from grader.results.file import encode, to_dict
from grader.results.from_report import OUTPUT_LIMIT, case_test, results_file

__all__ = ["OUTPUT_LIMIT", "report_to_json", "test_to_json", "write_json"]


def report_to_json(report: Report) -> dict[str, Any]:
    """The results file of `report` as JSON values, every string in it inert."""
    return to_dict(results_file(report))


def test_to_json(number: int, result: CaseResult, weight: float = 1.0) -> dict[str, Any]:
    """One case's entry of the results file as JSON values, every string in it inert."""
    return to_dict(case_test(number, result, weight))


def write_json(report: Report, path: Path) -> None:
    """Write the results file, creating its folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(encode(results_file(report)), encoding="utf-8")
