"""Grading one file: case files -> inputs -> isolated run -> comparison -> results."""

from __future__ import annotations

import importlib.util
import time
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

from grader.cases import Case, load_suites
from grader.course import Exercise, check_exists
from grader.errors import UsageError
from grader.results import CaseResult, Outcome, Report
from grader.supervisor import RawResult, Worker

DEVICES = ("cpu", "cuda", "all")
OnResult = Callable[[CaseResult], None]
CRASH_HINTS = {
    "SIGSEGV": " (a segmentation fault: memory read or written through ctypes or a C extension)",
    "SIGABRT": " (the process aborted: os.abort, or a failed assertion inside a C library)",
    "SIGKILL": " (killed from outside: often the system running out of memory)",
    "exit": " (your code ended the process: os._exit, or exit in a child you forked?)",
}


def grade(exercise: Exercise, file: Path | None = None, mode: str = "run", device: str = "all",
          on_result: OnResult | None = None, time_limit: float | None = None,
          memory_limit_mb: int | None = None, ring: int | None = None) -> Report:
    """Grade `file` (the learner's stub by default) on the examples, or on every case for a submission.

    `time_limit` replaces the course's default per-case limit (cases that set their own keep it);
    `memory_limit_mb` replaces the worker's memory limit. With `ring`, a distributed suite follows:
    `ring` ranks run the learner's functions (grader/distributed.py).
    """
    started = time.monotonic()
    if time_limit is not None:
        exercise = replace(exercise, time_limit=float(time_limit))
    if memory_limit_mb is not None:
        exercise = replace(exercise, memory_limit_mb=int(memory_limit_mb))
    learner = (file or exercise.stub).resolve()
    if not learner.is_file():
        raise UsageError(f"{learner}: no such file to grade")
    if device not in DEVICES:
        raise UsageError(f"--device must be one of {', '.join(DEVICES)}")
    if ring is not None and ring < 2:
        raise UsageError(f"--ring needs at least 2 ranks, not {ring}")
    # The worker imports torch on another core while this process loads cases and builds inputs.
    worker = Worker(learner, exercise.root, exercise.memory_limit_mb, use_cuda=device != "cpu")
    worker.start()
    try:
        report = _grade(exercise, learner, mode, device, worker, on_result or (lambda result: None), started)
    finally:
        worker.stop()
    if ring is not None and not report.load_error:
        from grader.distributed import run_ring_suite

        run_ring_suite(exercise, learner, ring, device, report, on_result or (lambda result: None),
                       load_reference(exercise))
        report.seconds = time.monotonic() - started
    return report


def _grade(exercise: Exercise, learner: Path, mode: str, device: str, worker: Worker,
           on_result: OnResult, started: float) -> Report:
    from grader.checkers import get_checker

    checker = get_checker(exercise.checker)
    cases = load_suites(check_exists(exercise.examples, "the examples file"), exercise.hidden_files(),
                        checker.FUNCTIONS, checker.validate, include_hidden=mode == "submit")
    report = Report(exercise.name, mode, _display(learner, exercise.root))
    devices = _devices(device, report)
    judge = Judge(exercise, checker, learner)
    import_limit = exercise.time_limit
    for device_name in devices:
        for case in cases:
            if device_name == "skipped":
                result = CaseResult(case.name, case.suite, case.function, "cuda", Outcome.SKIPPED,
                                    "skipped: no CUDA device")
                report.results.append(result)
                on_result(result)
                continue
            if not report.load_error and not worker.alive:
                worker.start()
            # A file that cannot be imported is imported once: every case then gets the same error.
            loaded = None if report.load_error else worker.wait_ready(import_limit)
            if loaded is not None and loaded.kind != "ready":
                report.load_error = judge.load_error(loaded)
            if report.load_error:
                result = CaseResult(case.name, case.suite, case.function, device_name, Outcome.ERROR,
                                    report.load_error.splitlines()[0])
            else:
                result = judge.run(case, device_name, worker)
            report.results.append(result)
            on_result(result)
    if any(result.diagnosis for result in report.results):
        from grader.diagnosis import reconcile

        reconcile(report.results, exercise.mistakes)
    report.seconds = time.monotonic() - started
    return report


def _devices(device: str, report: Report) -> list[str]:
    if device == "cpu":
        return ["cpu"]
    import torch

    if torch.cuda.is_available():
        return ["cpu", "cuda"] if device == "all" else ["cuda"]
    report.notes.append("CUDA skipped: torch.cuda.is_available() is False on this machine.")
    return ["cpu"] if device == "all" else ["skipped"]


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
        spec.loader.exec_module(module)
        _references[path] = module
    return _references[path]


class Judge:
    """Builds each case's inputs and expected values in this process and judges the worker's replies."""

    def __init__(self, exercise: Exercise, checker: ModuleType, learner: Path) -> None:
        self.exercise = exercise
        self.checker = checker
        self.learner = learner
        self._prepared: dict[str, Any] = {}

    def prepare(self, case: Case) -> tuple[Any, tuple, tuple | None]:
        """Inputs, float64 expected values and (half precision) the reference's same-dtype answer."""
        if case.name not in self._prepared:
            inputs = self.checker.build_inputs(case.function, case.params)
            expected = self.checker.expected(case.function, inputs.args)
            baseline = self.checker.baseline(case.function, inputs.args, load_reference(self.exercise))
            self._prepared[case.name] = (inputs, expected, baseline)
        return self._prepared[case.name]

    def run(self, case: Case, device: str, worker: Worker) -> CaseResult:
        """Run one case in the worker and turn its reply into a verdict."""
        inputs, expected, baseline = self.prepare(case)
        task = {"kind": "case", "case": case.name, "function": case.function, "args": inputs.args,
                "device": device, "layout": inputs.layout, "audit": case.params.get("audit", []),
                "key_length": self.checker.total_key_length(case.function, inputs.args)}
        raw = worker.run(task, case.time_limit or self.exercise.time_limit)
        result = CaseResult(case.name, case.suite, case.function, device, Outcome.FAILED, about=case.about,
                            inputs="" if case.hidden else inputs.summary,
                            seconds=float(raw.body.get("seconds", 0.0) or 0.0))
        if not case.hidden:
            result.stdout, result.stderr = raw.stdout, raw.stderr
        self._judge(case, device, inputs, expected, baseline, raw, result)
        if result.outcome in (Outcome.FAILED, Outcome.ERROR) and self.exercise.mistakes.is_dir():
            # Loaded only when something failed (or raised), so that a passing submission stays fast.
            from grader.diagnosis import diagnose

            result.diagnosis = diagnose(self, case, raw, result)
        return result

    def _judge(self, case: Case, device: str, inputs: Any, expected: tuple, baseline: tuple | None,
               raw: RawResult, result: CaseResult) -> None:
        from grader import audits, compare

        limit = case.time_limit or self.exercise.time_limit
        if raw.kind == "returned":
            violation = audits.inputs_modified(self.checker.input_names(case.function, inputs.args),
                                               raw.body.get("inputs_modified") or []) or audits.check(
                case.params.get("audit", []), case.function, inputs.args, raw.body.get("observations") or {},
                self.checker)
            if violation:
                result.message = violation.message
                result.extra["violates"] = violation.kind
                return
            verdict = compare.compare_outputs(raw.body["value"], self.checker.OUTPUT_NAMES[case.function],
                                              expected, inputs.args[0].dtype, device, baseline)
            result.outcome = Outcome.PASSED if verdict.passed else Outcome.FAILED
            result.message = verdict.message
            result.details = [] if case.hidden else verdict.details
            return
        exception = raw.body.get("exception", "")
        if raw.kind == "not-attempted":
            result.outcome = Outcome.NOT_ATTEMPTED
            result.message = f"{case.function} raises NotImplementedError: it is not written yet"
        elif raw.kind == "raised":
            result.outcome = Outcome.ERROR
            message = raw.body.get("message", "")
            result.message = f"raised {exception}" + ("" if case.hidden or not message else f": {message}")
        elif raw.kind == "out-of-memory":
            result.outcome = Outcome.OUT_OF_MEMORY
            on = "the GPU" if exception == "OutOfMemoryError" else "memory"
            result.message = (f"ran out of {on} ({raw.detail or exception}); the limit is "
                              f"{self.exercise.memory_limit_mb} MiB per worker: look for tensors kept alive "
                              f"in a list, or a loop that allocates without end")
        elif raw.kind == "timed-out":
            result.outcome = Outcome.TIMED_OUT
            result.message = f"did not finish within the {limit:g} s limit (look for a loop that never ends)"
        else:
            result.outcome = Outcome.CRASHED
            result.message = f"crashed: {raw.detail or 'the worker process ended'}"
            result.message += CRASH_HINTS.get(raw.body.get("signal", "").split(" ")[0], "")
        if not case.hidden:
            result.traceback = raw.body.get("traceback", "")

    def load_error(self, loaded: RawResult) -> str:
        """One clear message for a file that could not be imported, naming file, line and text."""
        name = _display(self.learner, self.exercise.root)
        body = loaded.body
        if loaded.kind == "load-error":
            where = f"{name}:{body['line']}" if body.get("line") else name
            text = f"\n    {body['text']}" if body.get("text") else ""
            tail = f"\n{body['traceback']}" if body.get("traceback") else ""
            return f"{where}: your file could not be imported: {body['exception']}: {body['message']}{text}{tail}"
        if loaded.kind == "timed-out":
            return f"{name}: importing your file took longer than {self.exercise.time_limit:g} s"
        if loaded.kind == "out-of-memory":
            return f"{name}: importing your file ran out of memory ({loaded.detail})"
        return f"{name}: {loaded.detail or 'the worker process ended while importing your file'}"
