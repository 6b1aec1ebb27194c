"""Grades run in spawned processes, one at a time in each, stopped cleanly when the run is stopped."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import tempfile
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from grader.course.exercise import Exercise
from grader.errors import GraderError

STOP_WAIT = 30.0  # seconds a grading process has, once told to stop, to close its sandboxes


@dataclass(frozen=True)
class Job:
    """One grade to run: everything a grading process needs, the file's bytes included (graded as hashed)."""

    id: str
    name: str
    data: bytes
    device: str
    time_limit: float | None
    memory_limit_mb: int | None
    time_budget: float | None = None
    time_factor: float = 1.0  # the learner's extra time: every limit and the budget times this


def grade_all(exercise: Exercise, todo: list[Job], jobs: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """(id, outcome) for every job as it finishes: here when one at a time, else in `jobs` spawned processes."""
    if jobs == 1:
        from grader.grading.case import keep_audited_inputs
        from grader.sandbox import zygote

        keep_audited_inputs()  # every submission is graded on the same cases: each case built once
        with zygote.held():  # every grade forks its workers from one preloaded process
            for job in todo:
                yield job.id, grade_one(exercise, job)
        return
    # Spawned processes, one grade each at a time: forking a process that holds threads and torch state is unsafe.
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(jobs, mp_context=context, initializer=_pool_process)
    try:
        pending: dict[Future, Job] = {pool.submit(_pooled_grade, exercise, job): job for job in todo}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                job = pending.pop(future)
                try:
                    yield job.id, future.result()
                except Exception as error:  # noqa: BLE001  (a grading process that died: graded again next run)
                    yield job.id, {"not_graded": f"grader error: the grading process ended ({type(error).__name__})",
                                   "lasting": False}
    except BaseException:
        _stop_pool(pool)
        raise
    pool.shutdown(wait=True)


def grade_one(exercise: Exercise, job: Job) -> dict[str, Any]:
    """Grade one submission's bytes as the exercise's file; its results file, or why it was not graded."""
    from grader.grading.pipeline import grade
    from grader.grading.request import Limits, Run
    from grader.results.from_report import results_file

    folder = Path(tempfile.mkdtemp(prefix="grader-cohort-"))
    try:
        # A private copy under the stub's name: what runs is what was hashed, whatever happens to the original.
        file = folder / exercise.stub.name
        file.write_bytes(job.data)
        # Named as found, never by the copy's passing path: the same submission reads the same on every run.
        limits = Limits(job.time_limit, job.memory_limit_mb, job.time_budget, job.time_factor)
        report = grade(Run(limits.on(exercise), file, "submit", job.device, display=job.name, confined=True))
        if report.integrity_error or report.not_graded:
            return {"not_graded": report.integrity_error or report.not_graded, "lasting": False}
        return {"report": results_file(report), "seconds": report.seconds}
    except GraderError as error:
        return {"not_graded": f"grader error: {error}", "lasting": False}
    except Exception as error:  # noqa: BLE001  (the grader's own failure on one submission must not stop the rest)
        return {"not_graded": f"grader error: {type(error).__name__}: {error}", "lasting": False,
                "traceback": traceback.format_exc()}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


_busy = False  # whether this grading process is inside a grade (its sandboxes must be closed before it ends)


def _pool_process() -> None:
    """Set up one grading process, with a stop that closes its sandboxes before it leaves."""
    from grader.grading.pipeline import prepare_process

    prepare_process()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _stop_signal)


def _stop_signal(signum: int, frame: object) -> None:
    for other in (signal.SIGINT, signal.SIGTERM):
        signal.signal(other, signal.SIG_IGN)  # once: a second signal must not cut the cleanup short
    if _busy:
        raise KeyboardInterrupt  # grade()'s own cleanup stops its workers and their sandboxes
    os._exit(128 + signum)


def _pooled_grade(exercise: Exercise, job: Job) -> dict[str, Any]:
    global _busy
    _busy = True
    try:
        return grade_one(exercise, job)
    except KeyboardInterrupt:
        os._exit(128 + signal.SIGTERM)  # stopped: the sandboxes are closed; the run that asked is ending
    finally:
        _busy = False


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Stop every grading process, give each time to close its sandboxes, then make sure they are gone."""
    # The executor offers no public handle on its processes before Python 3.14 (terminate_workers).
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for process in processes:
        if process.is_alive():
            process.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
    deadline = time.monotonic() + STOP_WAIT
    for process in processes:
        process.join(max(deadline - time.monotonic(), 0.1))
        if process.is_alive():
            process.kill()
