"""Grading one file: case files -> inputs -> isolated run -> comparison -> results.

Everything the grader trusts (its modules, the checker, the cases, the reference solution, the
catalogue of mistakes) is loaded and fingerprinted before the worker is allowed to import the
learner's file; the fingerprint is taken again at the end, and a run whose course files changed
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
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Callable

import grader
import grader.channel
import grader.course
import grader.grading
from grader.course import trust
from grader.course.cases import Case, load_exercise_cases
from grader.course.checker import Checker, load_checker
from grader.course.blame import where
from grader.course.exercise import Exercise, check_exists, check_forbidden, learner_file
from grader.errors import ConfigError, CourseBroken, UsageError
from grader.grading.budget import Budget, checked_seconds
from grader.grading.case import MEMORY_AUDIT, Judge
from grader.grading.devices import DEVICES
from grader.grading.phases import phases, run_phases
from grader.grading.suite_beside import SuiteBeside, run_suite
from grader.grading.group import choose_suite
from grader.grading.warm_up import warm_up_cases
from grader.grading.worker_client import WorkerClient
from grader.results import CaseResult, Report
from grader.sandbox.machine import sandboxes_apart

OnResult = Callable[[CaseResult], None]
OnStart = Callable[[Report], None]


@dataclass
class Trusted:
    """What one grading run trusts, loaded before any learner code runs."""

    checker: Checker
    cases: list[Case]
    reference: ModuleType | None  # None in a learner bundle (grader/course/precomputed.py)
    prints: dict[str, str]
    suites: dict = field(default_factory=dict)  # the exercise's extra suites, by option name
    staff_notes: list[str] = field(default_factory=list)  # the course's own faults a grade works around
    warm_ups: dict[str, Case] = field(default_factory=dict)  # per function, its first call's case (warm_up.py)


def grade(exercise: Exercise, file: Path | None = None, mode: str = "run", device: str = "all",
          on_result: OnResult | None = None, time_limit: float | None = None,
          memory_limit_mb: int | None = None, group: tuple[str, int] | None = None,
          only: set[str] | None = None, time_budget: float | None = None,
          display: str | None = None, on_start: OnStart | None = None, diagnose: bool = True,
          confined: bool = False) -> Report:
    """Grade `file` (the learner's stub by default) on the examples, or on every case for a submission.

    `time_limit` replaces the course's default per-case limit (cases that set their own keep it);
    `memory_limit_mb` replaces the memory limit of the learner's processes. With `group` (an option
    and a world size, such as ("ring", 4)), the exercise's suite of that name follows: that many ranks
    run the learner's functions together (grader/grading/group.py). With `only`, just the cases of those
    names run (what `grader validate` has not graded before). `time_budget` replaces the exercise's
    budget for the whole command (grader/grading/budget.py): cases left when it is used up are not run.
    `display` names the file in messages and the report (by default, its path from the course's root).
    `on_result` gets each result as it is known, in report order; `on_start` gets the report once,
    before the first case runs, with what is planned (`Report.planned`, `Report.uses`) and nothing
    graded yet. `diagnose=False` names no catalogued mistake on failures (validate works those out itself).
    `confined`: grade only where learner code is kept from the course and the results (a cohort, an autograder),
    never on a machine where it would run as the grader's own user with nothing to hold it.
    """
    started = time.monotonic()
    if time_limit is not None:
        exercise = replace(exercise, time_limit=float(time_limit))
    if memory_limit_mb is not None:
        exercise = replace(exercise, memory_limit_mb=int(memory_limit_mb))
    if checked_seconds(time_budget) is not None:
        exercise = replace(exercise, time_budget=float(time_budget))
    learner = learner_file(file or exercise.stub)
    shown = display or _display(learner, exercise.root)
    if device not in DEVICES:
        raise UsageError(f"--device must be one of {', '.join(DEVICES)}")
    on_result = on_result or (lambda result: None)
    budget = Budget(exercise.time_budget)
    on_start = on_start or (lambda report: None)
    # The zygote imports torch on another core while this process loads what it trusts; workers are then
    # forked from it, torch and all, in milliseconds.
    from grader.sandbox import zygote
    from grader.sandbox.machine import probe_soon

    probe_soon()  # what confines learner code here, found while load_trusted imports torch
    with zygote.held():
        report, trusted = _graded(exercise, learner, shown, mode, device, group, only, on_result, budget, on_start,
                                  diagnose, confined)
    changed = trust.changed(trusted.prints, exercise)
    if changed:
        report.integrity_error = (f"the course files changed while grading ({len(changed)}: "
                                  f"{', '.join(_display(Path(path), exercise.root) for path in changed[:3])}"
                                  f"{', ...' if len(changed) > 3 else ''}): this run proves nothing")
    report.seconds = time.monotonic() - started
    return report


def _graded(exercise: Exercise, learner: Path, shown: str, mode: str, device: str, group: tuple[str, int] | None,
            only: set[str] | None, on_result: OnResult, budget: Budget,
            on_start: OnStart, diagnose: bool = True, confined: bool = False) -> tuple[Report, Trusted]:
    """Every case of the run (and the group suite), in isolated workers: the report and what was trusted."""
    from grader.sandbox.machine import containment, refusal

    # The worker holds CUDA only where its cases will run there (an address-space limit cannot hold CUDA's).
    worker = WorkerClient(learner, exercise.root, exercise.memory_limit_mb, use_cuda=device != "cpu" and _cuda())
    beside: SuiteBeside | None = None  # the group suite, where it runs beside the hidden cases (suite_beside.py)
    try:
        trusted = load_trusted(exercise, mode, group is not None)
        suite_run = choose_suite(exercise, trusted.suites, group, mode)  # a usage error before anything runs
        if suite_run is not None and only is not None and group is None \
                and not {case.name for case in suite_run[0].cases(suite_run[1])} & only:
            suite_run = None  # some cases by name (validate, a test), none of them the suite's
        # Where this machine cannot keep learner code from what decides its verdict, nothing of it runs.
        course = [Path(path) for path in trusted.prints if not Path(path).is_relative_to(grader.PACKAGE)]
        problem = refusal(course, confined)
        if problem:
            report = Report(exercise.name, mode, shown, declared_max=exercise.max_score, not_graded=problem,
                            containment=containment())
            return report, trusted
        worker.start()
        if only is not None:
            trusted.cases = [case for case in trusted.cases if case.name in only]
        report = Report(exercise.name, mode, shown, declared_max=exercise.max_score)
        devices = _devices(device, report)
        report.containment = containment()
        if diagnose:
            report.notes.extend(trusted.staff_notes)
        _plan(report, trusted, devices, suite_run)
        on_start(report)

        def suite(into: Report, on: OnResult, stop: threading.Event | None = None) -> None:
            run_suite(exercise, suite_run, learner, device, trusted.reference, budget, only, into, on, stop)

        def begin_beside() -> None:  # the hidden cases begin, the file imported: the suite may run beside them
            nonlocal beside
            if suite_run is not None and sandboxes_apart(worker.use_cuda):
                beside = SuiteBeside(suite, Report(exercise.name, mode, shown)).start()

        try:
            _grade(exercise, shown, trusted, devices, worker, on_result, report, budget, diagnose, begin_beside)
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
        beside.take(report, on_result)
    elif beside is not None:
        beside.abandon()
    elif suite_run is not None and graded:
        suite(report, on_result)
    report.notes.extend(budget.notes())
    return report, trusted


def load_trusted(exercise: Exercise, mode: str, group: bool = False) -> Trusted:
    """Checker, cases, reference and catalogue, imported now; later imports would come after learner code ran."""
    preload()
    prints = trust.take(exercise)
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
    wanted = group or (mode == "submit" and exercise.distributed is not None)
    suites = checker.suites() if wanted else {}
    if wanted:
        for suite in suites.values():
            suite.all_cases()  # its case file checked now, not after the learner's code ran
    return Trusted(checker, cases, reference, prints, suites, notes, warm_up_cases(cases))


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


def preload() -> None:
    """Every module of the layers that judge a case (grading, the course, the channel), imported now.

    Learner code may run unconfined, as the grader's own user, and could rewrite a grader module that is
    imported only later; what was imported before it ran is what judges it. The callers import the views
    they use (the results JSON, the terminal) before they grade, for the same reason."""
    for package in (grader.channel, grader.course, grader.grading):
        for found in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{package.__name__}.{found.name}")


def _plan(report: Report, trusted: Trusted, devices: list[str], suite_run: tuple | None) -> None:
    """What the run will report, per suite in run order, and which functions call which, before anything runs."""
    planned = Counter(case.suite for case, device in _expected(trusted.cases, devices))
    uses = {name: function.uses for name, function in trusted.checker.functions.items() if function.uses}
    if suite_run is not None:
        suite, world = suite_run
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


def _grade(exercise: Exercise, shown: str, trusted: Trusted, devices: list[str], worker: WorkerClient,
           on_result: OnResult, report: Report, budget: Budget, diagnose: bool = True,
           on_hidden: Callable[[], None] | None = None) -> None:
    judge = Judge(exercise, trusted.checker, shown, trusted.reference, diagnose=diagnose)
    judge.warm_ups = trusted.warm_ups
    audited = [case for case in trusted.cases if MEMORY_AUDIT in case.audit]
    expected = [(case.name, device) for case, device in _expected(trusted.cases, devices)]
    runs = phases(trusted.cases, devices)
    stop = threading.Event()
    prefetch = judge.prefetch([case for phase in runs for case, device in phase
                               if device == devices[0] or MEMORY_AUDIT in case.audit], stop,
                              wanted=budget.worth_preparing)
    try:
        run_phases(exercise, worker, on_result, report, judge, runs, expected, budget, on_hidden)
    finally:
        stop.set()  # a file that cannot be imported needs no more inputs: the thread ends within one case
        prefetch.join()
    if "cuda" in devices and audited:
        report.notes.append(f"{len(audited)} memory-audited cases ran on the CPU only: the kernel measures host "
                            f"memory.")
    if any(result.diagnosis for result in report.results):
        from grader.grading.diagnosis import reconcile

        reconcile(report.results, exercise)


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


def _display(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


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
            raise ConfigError(f"the reference solution could not be loaded: {where(error, exercise.root, path)}"
                              ) from None
        _references[path] = module
    return _references[path]
