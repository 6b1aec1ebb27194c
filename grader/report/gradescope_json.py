"""The JSON view of a report: Gradescope's results.json fields plus the grader's own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from grader.inert import inert
from grader.results import CaseResult, Outcome, Report

OUTPUT_LIMIT = 4000


def report_to_json(report: Report) -> dict[str, Any]:
    """A results file in Gradescope's format; everything that is the grader's own is under `extra_data`.

    Every string in it is inert: a platform may show it in a terminal or a page.
    """
    tests = [test_to_json(number, result, weight)
             for number, (result, weight) in enumerate(zip(report.results, report.weights(report.results)), start=1)]
    output = report.summary_line()
    required = required_line(report, sum(test["score"] for test in tests))
    if required:
        output = required + "\n" + output
    if report.load_error:
        output = report.load_error + "\n" + output
    if report.integrity_error:
        output = report.integrity_error + "\n" + output
    if report.not_graded:
        output = f"Not graded: {report.not_graded}\n" + output
    return _inert_all({
        # The score is given, not left to Gradescope's sum of tests: a failed required case makes it 0.
        "score": report.score,
        "execution_time": round(report.seconds, 3),
        "output": _limit(output),
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": {
            "status": report.status, "max_score": report.max_score, "exercise": report.exercise,
            "mode": report.mode, "file": report.file, "notes": report.notes, "containment": report.containment,
            "integrity_error": report.integrity_error, "not_graded": report.not_graded,
            "required_failed": [result.name for result in report.required_failed],
            "counts": {"passed": report.passed, "failed": report.failed, "skipped": report.skipped,
                       "total": len(report.results)},
        },
    })


def required_line(report: Report, earned: float) -> str:
    """Why the score is 0 although cases passed: a required case failed. Said before the due date too; a case that
    is not visible yet is counted, never named, so that its inputs stay the course's."""
    failed = report.required_failed
    if not failed or report.load_error or report.integrity_error or report.not_graded:
        return ""
    named = [f"{result.name} [{result.device}]" for result in failed if result.visibility == "visible"]
    unnamed = len(failed) - len(named)
    which = ", ".join(named)
    if unnamed:
        them = "them" if unnamed != 1 else "it"
        hidden = f"{unnamed} hidden case{'s' * (unnamed != 1)}, named once the course shows {them}"
        which = f"{which}; {hidden}" if which else hidden
    cases = f"{len(failed)} required case{'s' * (len(failed) != 1)}"
    return (f"Score: 0 of {report.max_score:g}. {cases} failed ({which}), and the score of a submission that fails a "
            f"required case is 0, whatever the other cases earned ({earned:.4g} points in the tests below).")


def test_to_json(number: int, result: CaseResult, weight: float = 1.0) -> dict[str, Any]:
    """One case's entry: Gradescope's fields, the grader's own under `extra_data`; every string in it inert."""
    lines = [f"{result.outcome.value}: {result.message}" if result.message else result.outcome.value]
    if not result.hidden:
        lines += [f"checks: {result.about}"] * bool(result.about)
        lines += [f"inputs: {result.inputs}"] * bool(result.inputs)
        lines += result.details
        lines += [result.traceback] * bool(result.traceback)
    skipped = result.outcome is Outcome.SKIPPED
    diagnosis = None
    if result.diagnosis:
        diagnosis = {"mistake": result.diagnosis.mistake, "title": result.diagnosis.title,
                     "rationale": result.diagnosis.rationale, "help": result.diagnosis.help}
        lines.append(f"likely mistake: {result.diagnosis.title}. {result.diagnosis.help}")
    return _inert_all({
        "name": f"{result.name} [{result.device}]",
        "number": str(number),
        # A skipped case (no CUDA here) is worth nothing either way: it neither earns nor costs a point.
        "score": round(weight, 6) if result.passed else 0.0,
        "max_score": 0.0 if skipped else round(weight, 6),
        "status": "failed" if result.outcome.counts_as_failure else "passed",
        "visibility": result.visibility,
        "output": _limit("\n".join(lines)),
        "output_format": "text",
        "tags": [result.suite, result.function, result.device],
        "extra_data": {
            "case": result.name, "outcome": result.outcome.value, "suite": result.suite, "device": result.device,
            "function": result.function, "message": result.message, "diagnosis": diagnosis,
            "required": result.required, "points": result.points,
            **({"not_run": result.not_run} if result.not_run else {}),
            # Suite-specific numbers, such as a group suite's per-rank table under "table".
            **({"extra": result.extra} if result.extra else {}),
        },
    })


def _limit(text: str) -> str:
    # Inert before the limit, so that the limit holds for the text as written.
    text = inert(text)
    return text if len(text) <= OUTPUT_LIMIT else text[:OUTPUT_LIMIT] + "\n[... truncated]"


def _inert_all(value: Any) -> Any:
    """`value` with every string in it, keys included, made inert (numbers and None as they are)."""
    if isinstance(value, str):
        return inert(value)
    if isinstance(value, dict):
        return {_inert_all(key): _inert_all(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_inert_all(item) for item in value]
    return value


def write_json(report: Report, path: Path) -> None:
    """Write the results file, creating its folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report_to_json(report), indent=2) + "\n", encoding="utf-8")
