"""Grading a cohort: each submission in sandboxes of its own, several at once, every verdict kept in a file.

A submission's results file records the key it was graded under: its content hash, the exercise, and the
settings that decide a verdict (the course's exercise files, the grader, the device, the limits). A run
skips every submission whose results file has the key it would get now, so a rerun grades nothing and a
run killed halfway grades, next time, exactly what has no results file yet.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from grader import PACKAGE
from grader.course import trust
from grader.course.exercise import Exercise
from grader.errors import UsageError
from grader.files import RefusedFile
from grader.grading.devices import COHORT_DEVICES
from grader.results.archive import ArchiveError
from grader.results.book import ShardFile
from grader.results.cohort import (
    EXTRA_TIME,
    NOT_GRADED,
    RESULTS,
    CohortRun,
    Finished,
    load_entries,
    verdict_of,
)
from grader.results.file import ResultsFile, SubmissionRecord
from grader.results.from_report import not_graded_file
from grader.staff import gradebook
from grader.staff.fingerprints import CodePrints, code_prints, given_code
from grader.staff.intake import Submission, find_submissions, read_graded, submitted_at
from grader.staff.pool import Job, grade_all
from grader.staff.roster import ADJUSTMENTS_FILE, check_submissions
from grader.staff.shards import cohort_hash, read_record, write_record


@dataclass(frozen=True)
class Options:
    """How a cohort is graded; the device and the limits are part of every verdict's key."""

    jobs: int = 1
    force: bool = False
    shard: tuple[int, int] = (1, 1)
    device: str = "cpu"
    time_limit: float | None = None
    memory_limit_mb: int | None = None
    time_budget: float | None = None
    roster: Path | None = None      # the learners (roster.csv, a Gradescope export); else the gradebook's own
    due: str | None = None          # the due date and late penalty; else the gradebook's own
    late_penalty: str | None = None
    only: tuple[str, ...] = ()      # grade only these learners (roster ids) or submissions (ids), keep the rest


class Listener(Protocol):
    def start(self, total: int, skipped: int, jobs: int) -> None: ...

    def finished(self, item: Finished) -> None: ...

    def close(self) -> None: ...


def parse_shard(text: str) -> tuple[int, int]:
    """'K/N' (1-based) as (K, N)."""
    try:
        k, n = (int(part) for part in text.split("/"))
    except ValueError:
        raise UsageError(f"--shard {text!r}: expected K/N, such as 2/8") from None
    if not 1 <= k <= n:
        raise UsageError(f"--shard {text!r}: K must be from 1 to N")
    return k, n


def in_shard(submission_id: str, shard: tuple[int, int]) -> bool:
    """Whether a submission is shard K's of N: decided by its id alone, the same on every machine."""
    k, n = shard
    return int(hashlib.sha256(submission_id.encode()).hexdigest()[:16], 16) % n == k - 1


def settings_of(exercise: Exercise, options: Options) -> dict[str, Any]:
    """What decides a verdict besides the file: the exercise, its trusted files and the grader, device and limits."""
    return {"exercise": exercise.name, "course": trust.course_key(exercise), "device": options.device,
            "time_limit": float(options.time_limit or exercise.time_limit),
            "memory_limit_mb": int(options.memory_limit_mb or exercise.memory_limit_mb),
            "time_budget": float(options.time_budget or exercise.time_budget)}


def _key(settings: dict[str, Any], what: str) -> str:
    # A reason may name a learner's file, whose name need not be UTF-8 (its undecodable bytes are surrogates).
    text = f"{json.dumps(settings, sort_keys=True)}\n{what}"
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def grade_cohort(exercise: Exercise, paths: list[Path], out: Path, options: Options,
                 listener: Listener | None = None) -> CohortRun:
    """Grade every submission under `paths` (this shard's) not graded already, then write the gradebook in `out`."""
    if options.jobs < 1:
        raise UsageError(f"--jobs must be at least 1, not {options.jobs}")
    if options.device not in COHORT_DEVICES:
        raise UsageError(f"--device must be one of {', '.join(COHORT_DEVICES)}")
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: not a folder")
    roster = gradebook.roster_of(out, options.roster, options.due, options.late_penalty)
    # The roster may be kept beside the submissions: it, and its adjustments, are no learner's entry.
    beside = (roster.path, roster.path.parent / ADJUSTMENTS_FILE) if roster else ()
    submissions = find_submissions(paths, exercise.stub.name, exclude=(out, *beside))
    if not submissions:
        raise UsageError(f"no submissions in {', '.join(str(path) for path in paths)}")
    if roster is not None:
        check_submissions(roster.learners, Path(os.path.commonpath([str(item.path.parent) for item in submissions])))
    submissions = _selected(submissions, roster, options.only)
    extra = _extra_time(roster)
    mine = [submission for submission in submissions if in_shard(submission.id, options.shard)]
    # Imported here, not above: grading brings torch, which `gradebook merge` (and this module's types) never need.
    from grader.grading.pipeline import load_trusted

    trusted = load_trusted(exercise, "submit")  # a broken course is one line now, not one "not graded" per submission
    from grader.sandbox.machine import refusal

    problem = refusal([Path(path) for path in trusted.digests if not Path(path).is_relative_to(PACKAGE)], True)
    if problem:  # this machine cannot grade anyone honestly: one line now, not one row per submission
        raise UsageError(f"not graded: {problem}")
    settings = settings_of(exercise, options)
    todo, records, skipped = _plan(exercise, mine, settings, out, options, extra)
    listener = listener or _Silent()
    jobs = max(1, min(options.jobs, len(todo)))
    listener.start(len(todo) + len(records), skipped, jobs)
    statuses = []
    try:
        for submission, reason, key in records:
            about = _about(submission, _own(settings, extra, submission), key)
            statuses.append(_record(out, exercise, about, {"not_graded": reason}, listener))
        by_id = {job.id: (submission, sha, key) for submission, job, sha, key in todo}
        # Kept in each results file, so that the similarity report needs nothing but the results files.
        given = given_code([exercise.stub, exercise.starter])
        prints = {job.id: code_prints(job.data, given) for _, job, _, _ in todo}
        # Closed on the way out, whatever stops this loop: the grading processes are stopped with it.
        with contextlib.closing(grade_all(exercise, [job for _, job, _, _ in todo], jobs)) as finishing:
            for job_id, outcome in finishing:
                submission, sha, key = by_id[job_id]
                about = _about(submission, _own(settings, extra, submission), key, sha, prints[job_id])
                statuses.append(_record(out, exercise, about, outcome, listener))
    finally:
        listener.close()
    # The gradebook is every results file here: grading some submissions updates their rows and keeps the rest.
    ids = {submission.id for submission in mine}
    others = sorted(path.stem for path in (out / RESULTS).glob("*.json") if path.stem not in ids)
    (out / RESULTS).mkdir(parents=True, exist_ok=True)  # an empty shard's gradebook is a gradebook all the same
    entries = load_entries(out)
    held = {entry.id for entry in entries}  # this run's and those kept from earlier runs: the whole gradebook
    not_graded = statuses.count(NOT_GRADED)
    summary, rows, unmatched = gradebook.write_gradebook(out, entries, exercise.name, roster)
    retry = gradebook.to_retry(entries)
    cohort, size = _cohort(out, submissions, options)
    k, n = options.shard
    write_record(out, ShardFile(exercise=exercise.name, settings=settings, shard=f"{k}/{n}", submissions=sorted(held),
                                cohort=cohort, cohort_size=size, not_graded=summary.statuses.get(NOT_GRADED, 0),
                                to_retry=retry))
    return CohortRun(summary, out, len(statuses) - not_graded, skipped, not_graded, others, rows, unmatched, retry)


def _cohort(out: Path, submissions: list[Submission], options: Options) -> tuple[str, int]:
    """The hash and size of the cohort this gradebook is a shard of: every submission found, or, for a regrade of
    some of them (named files, --only), what the gradebook's last full run found."""
    found = cohort_hash([submission.id for submission in submissions]), len(submissions)
    try:
        before = read_record(out)
    except UsageError:
        return found
    partial = bool(options.only) or len(submissions) < before.cohort_size
    return (before.cohort, before.cohort_size) if partial and before.shard == options.shard else found


def _selected(submissions: list[Submission], roster: gradebook.Roster | None, only: tuple[str, ...]
              ) -> list[Submission]:
    """The submissions `--only` names: by learner id with a roster (their submission), else by submission id."""
    if not only:
        return submissions
    if roster is not None:
        by_id = {learner.id: learner for learner in roster.learners}
        unknown = [name for name in only if name not in by_id]
        if unknown:
            raise UsageError(f"--only {unknown[0]}: no learner with that id in {roster.path}")
        names = {by_id[name].submission for name in only}
        chosen = [submission for submission in submissions if submission.name in names]
    else:
        unknown = sorted(set(only) - {submission.id for submission in submissions})
        if unknown:
            raise UsageError(f"--only {unknown[0]}: no such submission (ids are as grades.csv names them)")
        chosen = [submission for submission in submissions if submission.id in only]
    if not chosen:
        raise UsageError(f"--only {', '.join(only)}: nothing handed in to grade")
    return chosen


def _extra_time(roster: gradebook.Roster | None) -> dict[str, float]:
    """Each submission's extra time, by its name: the most any learner naming it has (a group shares one)."""
    extra: dict[str, float] = {}
    for learner in roster.learners if roster else []:
        if learner.submission and learner.extra_time != 1.0:
            extra[learner.submission] = max(extra.get(learner.submission, 1.0), learner.extra_time)
    return extra


def _own(settings: dict[str, Any], extra: dict[str, float], submission: Submission) -> dict[str, Any]:
    """A submission's settings: everyone's, and its extra time where it has some (part of its verdict's key)."""
    factor = extra.get(submission.name, 1.0)
    return {**settings, EXTRA_TIME: factor} if factor != 1.0 else settings


def _plan(exercise: Exercise, mine: list[Submission], settings: dict[str, Any], out: Path, options: Options,
          extra: dict[str, float]) -> tuple[list[tuple[Submission, Job, str, str]], list[tuple[Submission, str, str]], int]:
    """What to grade (submission, job, hash, key), what to record without grading (submission, reason, key),
    and how many are skipped: their results file has the key they would get now."""
    todo, records, skipped = [], [], 0
    for submission in mine:
        sha, job, reason, lasting = "", None, submission.problem, submission.lasting
        if not reason:
            try:
                sha, data = read_graded(submission, exercise.stub.name, exercise.name)
                job = Job(submission.id, submission.name, data, options.device, options.time_limit,
                          options.memory_limit_mb, options.time_budget, extra.get(submission.name, 1.0))
            except RefusedFile as error:  # a link, not a regular file, too large: this entry's row, never the run's end
                reason, lasting = error.reason, error.lasting
            except OSError as error:
                reason, lasting = f"unreadable: {error.strerror or error}", False
            except MemoryError:  # the grader's memory, not the entry's fault alone: tried again next run
                reason, lasting = "unreadable: the grader ran out of memory reading it", False
            except ArchiveError as error:  # decided by the archive's bytes: it stays while they do
                reason = str(error)
        # No key for what may be different next time (missing, unreadable): it is looked at again.
        own = _own(settings, extra, submission)
        key = _key(own, f"content {sha}" if job else f"problem {reason}") if lasting else ""
        if key and not options.force and gradebook.read_key(gradebook.results_path(out, submission.id)) == key:
            skipped += 1
        elif job is None:
            records.append((submission, reason, key))
        else:
            todo.append((submission, job, sha, key))
    return todo, records, skipped


def _about(submission: Submission, settings: dict[str, Any], key: str, sha: str = "",
           prints: CodePrints | None = None) -> SubmissionRecord:
    """What a results file records of its submission: which one, the settings and key its verdict is reached
    under, the hash of the file graded ("" for none) and its fingerprints."""
    return SubmissionRecord(id=submission.id, name=submission.name, sha256=sha, key=key, settings=settings,
                            submitted_at=submitted_at(submission) if sha else "",
                            fingerprints=prints.values if prints else None,
                            fingerprints_cut=True if prints and prints.cut else None)


def _record(out: Path, exercise: Exercise, about: SubmissionRecord, outcome: dict, listener: Listener) -> str:
    """Write one submission's results file (graded or not), tell the listener; its status."""
    results: ResultsFile | None = outcome.get("report")
    reason = "" if results else outcome.get("not_graded", "")
    if results is None:
        results = not_graded_file(exercise.name, exercise.max_score, about.name, reason)
        # A verdict the grader could not reach (its own error, a course that changed) is tried again next run.
        about = replace(about, key=about.key if outcome.get("lasting", True) else "")
    results = replace(results, extra_data=replace(results.extra_data, submission=replace(
        about, reason=reason, traceback=outcome.get("traceback") or None)))
    gradebook.write_result(out, about.id, results)
    status = verdict_of(results)  # a submission whose cases mostly crashed is 'crashed', as the gradebook says
    listener.finished(Finished(about.id, status, results.score if not reason else None,
                               results.extra_data.max_score, reason, outcome.get("seconds", 0.0)))
    return status


class _Silent:
    def start(self, total: int, skipped: int, jobs: int) -> None:
        pass

    def finished(self, item: Finished) -> None:
        pass

    def close(self) -> None:
        pass
