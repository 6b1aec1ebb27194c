"""What run_autograder prints for course staff: Gradescope shows its standard output in the instructors' panel
alone, so this may name hidden cases and the course's own failures, which learners never see."""

from __future__ import annotations

from collections import Counter

from grader.inert import inert, one_line
from grader.results import Outcome, Report

RULE = "-" * 60


def graded_summary(report: Report, version: str, seconds: float) -> str:
    """A graded submission in a few lines: score, outcome counts, required cases failed, mistakes, containment."""
    counts = Counter(result.outcome for result in report.results)
    outcomes = ", ".join(f"{counts[outcome]} {outcome.value}" for outcome in Outcome if counts[outcome])
    lines = [RULE, f"grader {version}: {report.exercise}, {one_line(report.file)}",
             f"status: {report.status}, score {report.score:g} of {report.max_score:g}",
             f"cases: {len(report.results)} ({outcomes or 'none ran'})"]
    if report.load_error:
        lines.append(f"did not import: {report.load_error.splitlines()[0]}")
    failed = report.required_failed
    if failed:
        lines.append(f"required cases failed ({len(failed)}; the score is 0 for it):")
        lines += [f"  {result.name} [{result.device}]: {result.outcome.value} ({result.visibility})"
                  for result in failed]
    else:
        lines.append("required cases failed: none")
    named = Counter(result.diagnosis.title for result in report.results
                    if result.diagnosis and result.outcome.counts_as_failure)
    if named:
        lines.append("mistakes diagnosed:")
        lines += [f"  {title} ({count} case{'s' * (count != 1)})" for title, count in named.most_common()]
    else:
        lines.append("mistakes diagnosed: none")
    lines += [f"note: {note}" for note in report.notes]
    lines += _closing(report.containment, seconds)
    return _shown(lines)


def failure_summary(cause: str, version: str, seconds: float, report: Report | None = None, detail: str = "") -> str:
    """A grade that could not be reached, for staff: the cause first, then what to do, then the run's facts (those
    of `report`, where grading began)."""
    exercise, file, containment = (report.exercise, report.file, report.containment) if report else ("", "", "")
    lines = [RULE, "AUTOGRADER ERROR: this submission was not graded, and no results.json was written, so Gradescope "
                   "shows it as an autograder failure (never as a score).",
             f"cause: {one_line(cause)}",
             "This is the course's or the grader's to fix, not the learner's: fix it, then regrade the submissions "
             "from Gradescope.",
             f"grader {version}" + (f": {exercise}" if exercise else "") + (f", {one_line(file)}" if file else "")]
    if detail:
        lines += ["", inert(detail.rstrip())]
    lines += _closing(containment, seconds)
    return _shown(lines)


def _closing(containment: str, seconds: float) -> list[str]:
    return [f"containment: {containment or 'not reached'}", f"time: {seconds:.1f} s", RULE]


def _shown(lines: list[str]) -> str:
    # Names and messages may come from the learner's file: every line inert, whatever a terminal makes of it.
    return "\n".join(inert(line) for line in lines) + "\n"
