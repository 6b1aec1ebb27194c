"""A report as its results file: the output each platform shows, bounded, and the grader's own record of each case."""

from __future__ import annotations

from grader.inert import inert
from grader.results import CaseResult, Outcome, Report, verdict_text
from grader.results.file import FORMAT, CaseRecord, Counts, ResultsFile, RunRecord, TestRecord
from grader.results.groups import cases, failing, failure_groups, result_blame

OUTPUT_LIMIT = 4000


def results_file(report: Report, grader_version: str | None = None) -> ResultsFile:
    """The results file of `report`; `grader_version` is recorded where the autograder writes it."""
    tests = [case_test(number, result, weight)
             for number, (result, weight) in enumerate(zip(report.results, report.weights(report.results)), start=1)]
    output = report.summary_line()
    if not (report.load_error or report.integrity_error or report.not_graded):
        output = "".join(line + "\n" for line in grouped_lines(report)) + output
    required = required_line(report, sum(test.score for test in tests))
    if required:
        output = required + "\n" + output
    if report.load_error:
        output = report.load_error + "\n" + output
    if report.integrity_error:
        output = report.integrity_error + "\n" + output
    if report.not_graded:
        output = f"Not graded: {report.not_graded}\n" + output
    return ResultsFile(
        # The score is given, not left to Gradescope's sum of tests: a failed required case makes it 0.
        score=report.score, execution_time=round(report.seconds, 3), output=_limit(output), tests=tests,
        extra_data=RunRecord(
            format=FORMAT, status=report.status, max_score=report.max_score, exercise=report.exercise,
            mode=report.mode, file=report.file, notes=list(report.notes), containment=report.containment,
            integrity_error=report.integrity_error, not_graded=report.not_graded,
            required_failed=[result.name for result in report.required_failed],
            counts=Counts(passed=report.passed, failed=report.failed, skipped=report.skipped,
                          total=len(report.results)),
            grader_version=grader_version))


def not_graded_file(exercise: str, max_score: float | None, file: str, reason: str) -> ResultsFile:
    """The results file of a cohort's submission that holds nothing to grade, or that the grader could not grade."""
    return ResultsFile(score=0.0, output=inert(f"Not graded: {reason}"),
                       extra_data=RunRecord(format=FORMAT, status="not graded", max_score=max_score,
                                            exercise=exercise, mode="submit", file=file))


def refused_file(message: str, seconds: float, grader_version: str) -> ResultsFile:
    """The autograder's results file for a submission that holds nothing to grade: the learner's message, no test."""
    return ResultsFile(score=0.0, execution_time=round(seconds, 3), output=inert(message),
                       extra_data=RunRecord(format=FORMAT, status="error", grader_version=grader_version))


def grouped_lines(report: Report) -> list[str]:
    """The report's failures as the learner reads them on Gradescope, each cause once: the likely mistake, then a
    line per cause with its count and, where it is visible, a case of it (the tests below hold each in full)."""
    lines = []
    explained: dict[str, list[CaseResult]] = {}
    for result in failing(report.results):
        if result.diagnosis is not None:
            explained.setdefault(result.diagnosis.title, []).append(result)
    for title, results in explained.items():
        seen = any(result.visibility == "visible" and not result.hidden for result in results)
        lines.append(f"{'Likely mistake' if seen else 'Hidden cases suggest'}: {title} ({cases(len(results))})")
    groups = failure_groups(report.results)
    if len(groups) > 1:
        lines.append(f"{sum(group.count for group in groups)} cases failed, for {len(groups)} causes:")
    for group in groups:
        shown = next((case for case in group.cases if case.visibility == "visible"), None)
        such = f", such as {shown.name} [{shown.device}]" if shown is not None else ""
        lines.append(f"{'- ' if len(groups) > 1 else ''}{group.cause.who}: {group.cause.what} "
                     f"({cases(group.count)}{such})")
    return lines


def required_line(report: Report, earned: float) -> str:
    """Why the score is 0 although cases passed: a required case failed. Said before the due date too; a case that
    is not visible yet is counted, never named, so that its inputs stay the course's."""
    failed = report.required_failed
    if not failed or report.load_error or report.integrity_error or report.not_graded:
        return ""
    parts = [f"{result.name} [{result.device}] {result_blame(result)}" for result in failed
             if result.visibility == "visible"]
    unnamed = [result for result in failed if result.visibility != "visible"]
    if unnamed:
        them = "them" if len(unnamed) != 1 else "it"
        how = " or ".join(dict.fromkeys(result_blame(result) for result in unnamed))
        parts.append(f"{cases(len(unnamed), 'hidden')}, named once the course shows {them}, {how}")
    count = f"{len(failed)} required case{'s' * (len(failed) != 1)}"
    return (f"Score: 0 of {report.max_score:g}. {count} failed: {'; '.join(parts)}. The score of a submission that "
            f"fails a required case is 0, whatever the other cases earned ({earned:.4g} points in the tests below).")


def case_test(number: int, result: CaseResult, weight: float = 1.0) -> TestRecord:
    """One case's entry: what Gradescope shows (a hidden case's inputs and traceback never), the grader's own
    record of it under `extra_data`."""
    lines = [verdict_text(result.outcome.value, result.message)]
    if not result.hidden:
        lines += [f"checks: {result.about}"] * bool(result.about)
        lines += [f"inputs: {result.inputs}"] * bool(result.inputs)
        lines += result.details
        lines += [result.traceback] * bool(result.traceback)
    if result.diagnosis:
        lines.append(f"likely mistake: {result.diagnosis.title}. {result.diagnosis.help}")
    return TestRecord(
        name=f"{result.name} [{result.device}]", number=str(number),
        # A skipped case (no CUDA here) is worth nothing either way: it neither earns nor costs a point.
        score=round(weight, 6) if result.passed else 0.0,
        max_score=0.0 if result.outcome is Outcome.SKIPPED else round(weight, 6),
        status="failed" if result.outcome.counts_as_failure else "passed", visibility=result.visibility,
        output=_limit("\n".join(lines)), tags=[result.suite, result.function, result.device],
        extra_data=CaseRecord(
            case=result.name, outcome=result.outcome.value, suite=result.suite, device=result.device,
            function=result.function, message=result.message, diagnosis=result.diagnosis, required=result.required,
            points=result.points, not_run=result.not_run or None, cause=result.cause or None,
            extra=result.extra or None))


def _limit(text: str) -> str:
    # Inert before the limit, so that the limit holds for the text as written.
    text = inert(text)
    return text if len(text) <= OUTPUT_LIMIT else text[:OUTPUT_LIMIT] + "\n[... truncated]"
