"""Grading one file: case files -> inputs -> isolated run -> comparison -> results.

Everything the grader trusts (its modules, the checker, the cases, the reference solution, the
catalogue of mistakes) is loaded and its digests taken before the worker is allowed to import the
learner's file; the digests are taken again at the end, and a run whose course files changed
meanwhile ends in an error, never a pass.
"""

from __future__ import annotations

import atexit
import importlib
import importlib.util
import os
import pkgutil
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import grader
import grader.channel
import grader.course
import grader.grading
from grader.course import trust
from grader.course.cases import Case, load_exercise_cases
from grader.course.checker import Checker, load_checker
from grader.course.blame import course_frame, where
from grader.course.exercise import Exercise, check_exists, check_forbidden
from grader.errors import ConfigError, CourseBroken, UsageError
from grader.grading.budget import Budget
from grader.grading.case import MEMORY_AUDIT, Judge
from grader.grading.devices import DEVICES
from grader.grading.phases import Schedule, phases, run_phases
from grader.grading.request import UNHEARD, Listener, Run, shown_path
from grader.grading.distributed_beside import DistributedBeside, run_suite
from grader.grading.distributed import DistributedRun, choose_suite
from grader.grading.warm_up import warm_up_cases
from grader.grading.watchdog import Stalled, Watchdog, last_resort, stall_after
from grader.grading.worker_client import WorkerClient
from grader.results import Report
from grader.sandbox.machine import sandboxes_apart



@dataclass
class Trusted:
    """What one grading run trusts, loaded before any learner code runs."""

    checker: Checker
    cases: list[Case]
    reference: ModuleType | None  # None in a learner bundle (grader/course/precomputed.py)
    digests: dict[str, str]
    suites: dict = field(default_factory=dict)  # the exercise's extra suites, by option name
    staff_notes: list[str] = field(default_factory=list)  # the course's own faults a grade works around
    warm_ups: dict[str, Case] = field(default_factory=dict)  # per function, its first call's case (warm_up.py)


def grade(run: Run, listener: Listener | None = None) -> Report:
    """Grade `run.file` on the examples, or on every case for a submission (grader/grading/request.py: what a Run
    asks, and the limits it runs under). With `run.distributed`, or for a submission whose exercise declares one, the
    exercise's distributed suite follows: that many ranks run the learner's functions together
    (grader/grading/distributed.py). `listener` hears of the run as it goes: the report once, before the first case
    runs, with what is planned and nothing graded yet, then each result as it is known, in report order.

    Workers are forked from the zygote the caller holds (grader/sandbox/zygote.py: a learner's command, a
    cohort's grading process, validate, an autograder); without one, each sandbox's launcher starts afresh."""
    started = time.monotonic()
    if run.device not in DEVICES:
        raise UsageError(f"--device must be one of {', '.join(DEVICES)}")
    budget = Budget(run.exercise.time_budget)
    from grader.sandbox import zygote
    from grader.sandbox.machine import probe_soon

    probe_soon()  # what confines learner code here, found while load_trusted imports torch
    # Every wait below has a deadline; the watchdog bounds the whole run should one still be missed.
    with Watchdog(stall_after(run.exercise), on_stall=zygote.stop) as watchdog:
        try:
            report, trusted = _graded(run, listener or UNHEARD, budget, watchdog)
        except Stalled as stalled:
            report = Report(run.exercise.name, run.mode, run.display, declared_max=run.exercise.max_score,
                            not_graded=str(stalled))
            report.seconds = time.monotonic() - started
            return report
    changed = trust.changed(trusted.digests, run.exercise)
    if changed:
        report.integrity_error = (f"the course files changed while grading ({len(changed)}: "
                                  f"{', '.join(shown_path(Path(path), run.exercise.root) for path in changed[:3])}"
                                  f"{', ...' if len(changed) > 3 else ''}): this run proves nothing")
    report.seconds = time.monotonic() - started
    return report


def _graded(run: Run, listener: Listener, budget: Budget, watchdog: Watchdog) -> tuple[Report, Trusted]:
    """Every case of the run (and the distributed suite), in isolated workers: the report and what was trusted."""
    from grader.sandbox.machine import containment, refusal

    exercise = run.exercise
    # The worker holds CUDA only where its cases will run there (an address-space limit cannot hold CUDA's).
    worker = WorkerClient(run.file, exercise.root, exercise.memory_limit_mb, use_cuda=run.device != "cpu" and _cuda())
    beside: DistributedBeside | None = None  # the distributed suite, where it runs beside the hidden cases (distributed_beside.py)
    try:
        trusted = load_trusted(exercise, run.mode, run.distributed is not None)
        watchdog.allow(stall_after(exercise, max((case.time_limit or 0.0 for case in trusted.cases), default=None)))
        suite_run = choose_suite(run, trusted.suites, trusted.reference)  # a usage error before anything runs
        if suite_run is not None and run.only is not None and run.distributed is None \
                and not {case.name for case in suite_run.suite.cases(suite_run.world)} & run.only:
            suite_run = None  # some cases by name (validate, a test), none of them the suite's
        # Where this machine cannot keep learner code from what decides its verdict, nothing of it runs.
        course = [Path(path) for path in trusted.digests if not Path(path).is_relative_to(grader.PACKAGE)]
        problem = refusal(course, run.confined)
        if problem:
            report = Report(exercise.name, run.mode, run.display, declared_max=exercise.max_score,
                            not_graded=problem, containment=containment())
            return report, trusted
        worker.start()
        if run.only is not None:
            trusted.cases = [case for case in trusted.cases if case.name in run.only]
        report = Report(exercise.name, run.mode, run.display, declared_max=exercise.max_score)
        devices = _devices(run.device, report)
        report.containment = containment()
        if run.diagnose:
            report.notes.extend(trusted.staff_notes)
        _plan(report, trusted, devices, suite_run)
        listener.start(report)

        def suite(into: Report, heard: Listener, stop: threading.Event | None = None) -> None:
            run_suite(run, heard, suite_run, into, budget, stop)

        def begin_beside() -> None:  # the hidden cases begin, the file imported: the suite may run beside them
            nonlocal beside
            if suite_run is not None and sandboxes_apart(worker.use_cuda):
                beside = DistributedBeside(suite, Report(exercise.name, run.mode, run.display)).start()

        expected = [(case.name, device) for case, device in _expected(trusted.cases, devices)]
        schedule = Schedule(devices, phases(trusted.cases, devices), worker, expected, begin_beside)
        try:
            _grade(run, listener, trusted, schedule, report, budget)
        except CourseBroken as error:  # the checker or the reference raised: nothing here is about the learner
            report.not_graded = str(error)
    except BaseException:
        if beside is not None:
            beside.abandon()
        raise
    finally:
        worker.stop()
    graded = not report.load_error and not report.not_graded
    if beside is not None and graded:
        beside.take(report, listener)
    elif beside is not None:
        beside.abandon()
    elif suite_run is not None and graded:
        suite(report, listener)
    report.notes.extend(budget.notes())
    return report, trusted


def load_trusted(exercise: Exercise, mode: str, distributed: bool = False) -> Trusted:
    """Checker, cases, reference and catalogue, imported now; later imports would come after learner code ran."""
    preload()
    digests = trust.take(exercise)
    if exercise.precomputed is not None:
        from grader.course.precomputed import load_precomputed

        # A learner bundle: answers and half-precision baselines were stored by the course; no reference ships.
        checker, reference = load_precomputed(exercise.precomputed), None
    else:
        checker, reference = load_checker(exercise.checker), load_reference(exercise)
    check_forbidden(exercise)
    cases = load_exercise_cases(exercise, checker, include_hidden=mode == "submit")
    notes = []
    if exercise.mistakes.is_dir() and exercise.precomputed is None:
        from grader.grading.diagnosis import catalogue

        notes = catalogue(exercise).staff_notes()
    # A submission runs the suite an exercise declares (exercise.yaml's `distributed`); a run only when asked.
    wanted = distributed or (mode == "submit" and exercise.distributed is not None)
    suites = checker.suites() if wanted else {}
    if wanted:
        for suite in suites.values():
            suite.all_cases()  # its case file checked now, not after the learner's code ran
    return Trusted(checker, cases, reference, digests, suites, notes, warm_up_cases(cases))


def prepare_process() -> None:
    """Set up a process that grades many files, one after another (validate's pool, a cohort's grading processes):
    one thread for torch, a zygote of its own for all its grades (gone with the process), and every case's inputs
    kept for the next file."""
    # Several graders and their workers already fill the cores; torch's thread pools on top spin against each
    # other and made a whole catalogue several times slower. Workers inherit the variable.
    os.environ["OMP_NUM_THREADS"] = "1"
    import torch

    from grader.grading.case import keep_audited_inputs
    from grader.sandbox import zygote

    torch.set_num_threads(1)
    keep_audited_inputs()
    zygote.prestart()
    # On a normal exit, stopped and waited for: its CPU time then counts in this process's, and so in the run's.
    atexit.register(zygote.stop)
    # A grade still stuck after the watchdog told it ends this process, never the pool that waits on it.
    last_resort(lambda message: os._exit(3))


def preload() -> None:
    """Every module of the layers that judge a case (grading, the course, the channel), imported now.

    Learner code may run unconfined, as the grader's own user, and could rewrite a grader module that is
    imported only later; what was imported before it ran is what judges it. The callers import the views
    they use (the results JSON, the terminal) before they grade, for the same reason."""
    for package in (grader.channel, grader.course, grader.grading):
        for found in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{package.__name__}.{found.name}")


def _plan(report: Report, trusted: Trusted, devices: list[str], suite_run: DistributedRun | None) -> None:
    """What the run will report, per suite in run order, and which functions call which, before anything runs."""
    planned = Counter(case.suite for case, device in _expected(trusted.cases, devices))
    uses = {name: function.uses for name, function in trusted.checker.functions.items() if function.uses}
    if suite_run is not None:
        suite, world = suite_run.suite, suite_run.world
        planned.update(case.suite for case in suite.cases(world))
        if suite.uses:
            uses[suite.function] = tuple(suite.uses)
    report.planned, report.uses = dict(planned), uses


def _expected(cases: list[Case], devices: list[str]) -> list[tuple[Case, str]]:
    """Every run in report order: each device in turn, the memory-audited cases on the CPU only, and on the CPU even
    where only CUDA was asked for: their rule is judged on host memory, and a submission never skips it."""
    cpu_only = [] if "cpu" in devices else [(case, "cpu") for case in cases if MEMORY_AUDIT in case.audit]
    return cpu_only + [(case, device) for device in devices for case in cases
                       if device == "cpu" or MEMORY_AUDIT not in case.audit]


def _grade(run: Run, listener: Listener, trusted: Trusted, schedule: Schedule, report: Report,
           budget: Budget) -> None:
    judge = Judge(run.exercise, trusted.checker, run.display, trusted.reference, diagnose=run.diagnose,
                  numbers=run.numbers)
    judge.warm_ups = trusted.warm_ups
    judge.stopped = budget.stopped  # the same record: a function stopped now is stopped in every task sent after
    audited = [case for case in trusted.cases if MEMORY_AUDIT in case.audit]
    devices = schedule.devices
    stop = threading.Event()
    prefetch = judge.prefetch([case for phase in schedule.phases for case, device in phase
                               if device == devices[0] or MEMORY_AUDIT in case.audit], stop,
                              wanted=budget.worth_preparing)
    try:
        run_phases(run, listener, judge, schedule, report, budget)
    finally:
        stop.set()  # a file that cannot be imported needs no more inputs: the thread ends within one case
        prefetch.join()
    if "cuda" in devices and audited:
        report.notes.append(f"{len(audited)} memory-audited cases ran on the CPU only: the kernel measures host "
                            f"memory.")
    if any(result.diagnosis for result in report.results):
        from grader.grading.diagnosis import reconcile

        reconcile(report.results, run.exercise)


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def _devices(device: str, report: Report) -> list[str]:
    """Where the cases run; asking for CUDA where there is none is a usage error, not a run of nothing."""
    if device == "cpu":
        return ["cpu"]
    import torch

    if torch.cuda.is_available():
        return ["cpu", "cuda"] if device == "all" else ["cuda"]
    if device == "cuda":
        raise UsageError("--device cuda: torch.cuda.is_available() is False on this machine; "
                         "use --device cpu or all")
    report.notes.append("CUDA skipped: torch.cuda.is_available() is False on this machine.")
    return ["cpu"]


_references: dict[Path, ModuleType] = {}


def load_reference(exercise: Exercise) -> ModuleType:
    """The instructor's reference solution, imported in this process (it is trusted code), once."""
    path = check_exists(exercise.solution, "the reference solution").resolve()
    if path not in _references:
        spec = importlib.util.spec_from_file_location(f"reference_{exercise.name.replace('-', '_')}", path)
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as error:  # noqa: BLE001  (instructor code: one line naming where it broke)
            found = course_frame(error, exercise.root)
            if found is not None and found[0].resolve() == path:  # its own line: error: PATH:LINE: ...
                raise ConfigError(f"the reference solution could not be loaded: "
                                  f"{where(error, exercise.root).split(': ', 1)[1]}", path, found[1]) from None
            raise ConfigError(f"the reference solution could not be loaded: {where(error, exercise.root, path)}",
                              path) from None
        _references[path] = module
    return _references[path]
