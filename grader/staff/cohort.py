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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from grader import PACKAGE
from grader.course import trust
from grader.course.exercise import Exercise
from grader.errors import UsageError
from grader.files import RefusedFile
from grader.inert import inert
from grader.results.cohort import NOT_GRADED, RESULTS, CohortRun, Finished, load_entries
from grader.staff import gradebook
from grader.staff.archive import ArchiveError
from grader.staff.intake import Submission, find_submissions, read_graded
from grader.staff.pool import Job, grade_all
from grader.staff.shards import cohort_hash, write_record

DEVICES = ("cpu", "all")


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
    if options.device not in DEVICES:
        raise UsageError(f"--device must be one of {', '.join(DEVICES)}")
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: not a folder")
    submissions = find_submissions(paths, exercise.stub.name, exclude=(out,))
    if not submissions:
        raise UsageError(f"no submissions in {', '.join(str(path) for path in paths)}")
    mine = [submission for submission in submissions if in_shard(submission.id, options.shard)]
    # Imported here, not above: grading brings torch, which `gradebook merge` (and this module's types) never need.
    from grader.grading.pipeline import load_trusted

    trusted = load_trusted(exercise, "submit")  # a broken course is one line now, not one "not graded" per submission
    from grader.sandbox.machine import refusal

    problem = refusal([Path(path) for path in trusted.prints if not Path(path).is_relative_to(PACKAGE)], True)
    if problem:  # this machine cannot grade anyone honestly: one line now, not one row per submission
        raise UsageError(f"not graded: {problem}")
    settings = settings_of(exercise, options)
    todo, records, skipped = _plan(exercise, mine, settings, out, options)
    listener = listener or _Silent()
    jobs = max(1, min(options.jobs, len(todo)))
    listener.start(len(todo) + len(records), skipped, jobs)
    statuses = []
    try:
        for submission, reason, key in records:
            statuses.append(_record(out, exercise, submission, settings, key, "", {"not_graded": reason}, listener))
        by_id = {job.id: (submission, sha, key) for submission, job, sha, key in todo}
        # Closed on the way out, whatever stops this loop: the grading processes are stopped with it.
        with contextlib.closing(grade_all(exercise, [job for _, job, _, _ in todo], jobs)) as finishing:
            for job_id, outcome in finishing:
                submission, sha, key = by_id[job_id]
                statuses.append(_record(out, exercise, submission, settings, key, sha, outcome, listener))
    finally:
        listener.close()
    ids = {submission.id for submission in mine}
    others = sorted(path.stem for path in (out / RESULTS).glob("*.json") if path.stem not in ids)
    (out / RESULTS).mkdir(parents=True, exist_ok=True)  # an empty shard's gradebook is a gradebook all the same
    summary = gradebook.write_gradebook(out, load_entries(out, ids), exercise.name)
    retry = gradebook.to_retry(out, ids)
    write_record(out, exercise.name, settings, options.shard, sorted(ids),
                 cohort_hash([submission.id for submission in submissions]), len(submissions),
                 summary.statuses.get(NOT_GRADED, 0), retry)
    not_graded = statuses.count(NOT_GRADED)
    return CohortRun(summary, out, len(statuses) - not_graded, skipped, not_graded, others, retry)


def _plan(exercise: Exercise, mine: list[Submission], settings: dict[str, Any], out: Path, options: Options
          ) -> tuple[list[tuple[Submission, Job, str, str]], list[tuple[Submission, str, str]], int]:
    """What to grade (submission, job, hash, key), what to record without grading (submission, reason, key),
    and how many are skipped: their results file has the key they would get now."""
    todo, records, skipped = [], [], 0
    for submission in mine:
        sha, job, reason, lasting = "", None, submission.problem, submission.lasting
        if not reason:
            try:
                sha, data = read_graded(submission, exercise.stub.name, exercise.name)
                job = Job(submission.id, submission.name, data, options.device, options.time_limit,
                          options.memory_limit_mb, options.time_budget)
            except RefusedFile as error:  # a link, not a regular file, too large: this entry's row, never the run's end
                reason, lasting = error.reason, error.lasting
            except OSError as error:
                reason, lasting = f"unreadable: {error.strerror or error}", False
            except MemoryError:  # the grader's memory, not the entry's fault alone: tried again next run
                reason, lasting = "unreadable: the grader ran out of memory reading it", False
            except ArchiveError as error:  # decided by the archive's bytes: it stays while they do
                reason = str(error)
        # No key for what may be different next time (missing, unreadable): it is looked at again.
        key = _key(settings, f"content {sha}" if job else f"problem {reason}") if lasting else ""
        if key and not options.force and gradebook.read_key(gradebook.results_path(out, submission.id)) == key:
            skipped += 1
        elif job is None:
            records.append((submission, reason, key))
        else:
            todo.append((submission, job, sha, key))
    return todo, records, skipped


def _record(out: Path, exercise: Exercise, submission: Submission, settings: dict, key: str, sha: str,
            outcome: dict, listener: Listener) -> str:
    """Write one submission's results file (graded or not), tell the listener; its status."""
    report = outcome.get("report")
    reason = "" if report else outcome.get("not_graded", "")
    if report is None:
        report = {"score": 0.0, "execution_time": 0.0, "output": inert(f"Not graded: {reason}"),
                  "output_format": "text", "visibility": "visible", "stdout_visibility": "hidden", "tests": [],
                  "extra_data": {"status": NOT_GRADED, "max_score": exercise.max_score,
                                 "exercise": exercise.name, "mode": "submit", "file": inert(submission.name)}}
        # A verdict the grader could not reach (its own error, a course that changed) is tried again next run.
        key = key if outcome.get("lasting", True) else ""
    report["extra_data"]["submission"] = {
        "id": submission.id, "name": inert(submission.name), "sha256": sha, "key": key, "settings": settings,
        "reason": inert(reason), **({"traceback": outcome["traceback"]} if outcome.get("traceback") else {})}
    gradebook.write_result(out, submission.id, report)
    status = report["extra_data"]["status"]
    listener.finished(Finished(submission.id, status, report["score"] if not reason else None,
                               report["extra_data"]["max_score"], reason, outcome.get("seconds", 0.0)))
    return status


class _Silent:
    def start(self, total: int, skipped: int, jobs: int) -> None:
        pass

    def finished(self, item: Finished) -> None:
        pass

    def close(self) -> None:
        pass
