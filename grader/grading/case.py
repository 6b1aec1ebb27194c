"""Judging one case: inputs and expected values built here, the learner's call made in the worker, the verdict made here."""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import asdict
from types import ModuleType
from typing import Any, Callable

from grader.channel import shared_inputs
from grader.course import trust
from grader.course.blame import charged_to_course, course_frame, where
from grader.course.cases import Case
from grader.course.checker import Checker, Tolerance
from grader.course.exercise import Exercise
from grader.course.operators import observed
from grader.errors import CourseBroken
from grader.grading import answer_cache
from grader.grading.warm_up import warm_up
from grader.grading.worker_client import RawResult, WorkerClient
from grader.inert import inert
from grader.results import CaseResult, Outcome

# What a hidden case may name, whatever the learner's code raised: a few common types, each a fixed string of the
# grader's (about 4 bits a case, where any builtin's name carried about 6); every other type reads the same.
HIDDEN_EXCEPTIONS = ("AssertionError", "AttributeError", "IndexError", "KeyError", "MemoryError", "NameError",
                     "OutOfMemoryError", "OverflowError", "RecursionError", "RuntimeError", "TypeError",
                     "UnboundLocalError", "ValueError", "ZeroDivisionError")
OTHER_EXCEPTION = "an exception of another type"
# How a hidden case's worker ended, as its class only: the exit status or the signal the code chose never shows.
HIDDEN_ENDINGS = {"SIGSEGV": "SIGSEGV", "SIGABRT": "SIGABRT", "SIGKILL": "SIGKILL", "exit": "exit status",
                  "killed": "killed"}  # killed: by the grader, its own word
OTHER_ENDING = "a signal"
CRASH_HINTS = {
    "SIGSEGV": " (a segmentation fault: memory read or written through ctypes or a C extension)",
    "SIGABRT": " (the process aborted: os.abort, or a failed assertion inside a C library)",
    "SIGKILL": " (killed from outside: often the system running out of memory)",
    "exit": " (your code ended the process: os._exit, or exit in a child you forked?)",
}
MEMORY_AUDIT = "memory"
_PREPARED: dict[tuple[str, str], tuple] = {}
_PREPARING: dict[tuple[str, str], threading.Event] = {}
_LOCK = threading.Lock()
_KEEP_AUDITED = [False]  # whether a memory-audited case's inputs outlive its run (keep_audited_inputs)


def keep_audited_inputs() -> None:
    """Keep memory-audited cases' inputs for the life of this process: for one that grades many files (validate,
    a cohort's grading process). A single grade lets each go once it ran: they are the largest by far (hundreds
    of MiB), and Gradescope's whole container has 768 MB."""
    _KEEP_AUDITED[0] = True


class Judge:
    """Builds each case's inputs and expected values in this process and judges the worker's replies."""

    def __init__(self, exercise: Exercise, checker: Checker, learner_name: str, reference: ModuleType | None,
                 diagnose: bool = True) -> None:
        self.exercise = exercise
        self.diagnose = diagnose  # name the catalogued mistake that explains a failure
        self.checker = checker
        self.learner_name = learner_name
        self.reference = reference
        self._trusted = trust.code_key(exercise)
        self.named: list[str] = []  # catalogued mistakes named so far in this run, tried first on the next failure
        self.warm_ups: dict[str, Case] = {}  # per function, the small case its first call is made on (warm_up.py)
        self.catalogue = None  # the catalogue of mistakes, looked up on the first failure (grader/grading/diagnosis.py)

    def prepare(self, case: Case) -> tuple[Any, tuple, tuple | None]:
        """Inputs, float64 expected values and (half precision) the reference's same-dtype answer.

        Kept for the life of the process under what decides them (the exercise's code, the reference, the
        case): grading a cohort, or a catalogue, builds each case once per process, not once per file.
        """
        key = self._key(case)
        with _LOCK:
            ready = _PREPARING.setdefault(key, threading.Event())
            mine = key not in _PREPARED and not getattr(ready, "claimed", False)
            if mine:
                ready.claimed = True  # this thread builds it; another asking for it waits on the event
        if mine:
            try:
                inputs = self._course(self.checker.build_inputs, case.function, case.params)
                _PREPARED[key] = (inputs, *self._answers(case, inputs, "\0".join(key)))
            finally:
                ready.set()
        ready.wait()
        if key not in _PREPARED:  # the thread that built it failed: build it here, and raise what it raises
            inputs = self._course(self.checker.build_inputs, case.function, case.params)
            _PREPARED[key] = (inputs, self._course(self.checker.expected, case.function, inputs),
                              self._course(self.checker.baseline, case.function, inputs, self.reference,
                                           fallback=self.exercise.solution))
        return _PREPARED[key]

    def _course(self, method: Callable, *args: Any, fallback: Any = None) -> Any:
        """A checker method's result; whatever it raises is the course's bug (CourseBroken, with its file and line),
        never the learner's."""
        with charged_to_course(self.exercise.root, fallback or self.exercise.checker):
            return method(*args)

    def _key(self, case: Case) -> tuple[str, str]:
        return self._trusted, json.dumps(asdict(case), sort_keys=True, default=str)

    def _answers(self, case: Case, inputs: Any, key: str) -> tuple[Any, Any]:
        """Expected values and baseline: read back from disk when slow to compute and safe to trust there."""
        cached = answer_cache.usable()
        if cached:
            stored = answer_cache.load(self.exercise.root, key)
            if stored is not None:
                return stored
        started = time.perf_counter()
        expected = self._course(self.checker.expected, case.function, inputs)
        baseline = self._course(self.checker.baseline, case.function, inputs, self.reference,
                                fallback=self.exercise.solution)
        if cached and time.perf_counter() - started > answer_cache.SLOW_SECONDS:
            answer_cache.store(self.exercise.root, key, expected, baseline)
        return expected, baseline

    def prefetch(self, cases: list[Case], stop: threading.Event,
                 wanted: Callable[[Case], bool] = lambda case: True) -> threading.Thread:
        """Build the cases' inputs and answers on another core while the worker computes: in order, ahead,
        skipping those no longer `wanted` when their turn comes (a function given up on, grader/grading/budget.py),
        until `stop` is set. Join the thread before the process may exit: torch code still running on a
        thread at interpreter exit aborts the process (SIGABRT) after the report is printed."""

        def build() -> None:
            for case in cases:
                if stop.is_set():
                    return
                if not wanted(case) or (MEMORY_AUDIT in case.audit and not _KEEP_AUDITED[0]):
                    continue  # a memory-audited case is built when it runs, so that two are never held at once
                try:
                    self.prepare(case)
                except Exception:  # noqa: BLE001  (raised again, in the grader's own thread, when the case runs)
                    pass

        thread = threading.Thread(target=build, name="grader-prefetch", daemon=True)
        thread.start()
        return thread

    def tolerance(self, case: Case) -> Tolerance:
        """The exercise's tolerance, with the case's own changes."""
        return self.checker.tolerance.override(case.tolerance) if case.tolerance else self.checker.tolerance

    def run(self, case: Case, device: str, worker: WorkerClient) -> CaseResult:
        """Run one case in the worker and turn its reply into a verdict."""
        inputs, expected, baseline = self.prepare(case)
        # A memory-audited case is measured from after the learner's first call (grader/grading/warm_up.py); a first
        # call that cost the worker its life is this case's result.
        raw = warm_up(self, case, device, worker) if MEMORY_AUDIT in case.audit else None
        modified, lines, first_call = [], worker.learner_lines, raw is not None
        if raw is None:
            raw, modified = self.call(case, inputs, expected, device, worker)
        result = CaseResult(case.name, case.suite, case.function, device, Outcome.FAILED, about=case.about,
                            inputs="" if case.hidden else inputs.summary, seconds=raw.seconds, points=case.points,
                            visibility=case.visibility, required=case.required)
        if not case.hidden:
            result.stdout, result.stderr = inert(raw.stdout), inert(raw.stderr)
        try:
            self._judge(case, inputs, expected, baseline, raw, result, modified, device, lines)
            if result.outcome in (Outcome.FAILED, Outcome.ERROR) and self.diagnose and self.exercise.mistakes.is_dir():
                from grader.grading.diagnosis import diagnose

                result.diagnosis = diagnose(self, case, raw, result)
        except Exception as error:  # noqa: BLE001  (a reply that passed the schema yet cannot be judged)
            if course_frame(error, self.exercise.root):  # the checker's own code raised (its budget, its names)
                raise CourseBroken(where(error, self.exercise.root)) from None
            result.outcome, result.diagnosis = Outcome.CRASHED, None
            result.message = f"crashed: the worker's reply could not be judged ({type(error).__name__})"
        if first_call:
            result.message += " (in the warm-up call on a small input, made before this case's own)"
        if MEMORY_AUDIT in case.audit and not _KEEP_AUDITED[0]:
            with _LOCK:
                _PREPARED.pop(self._key(case), None)
                _PREPARING.pop(self._key(case), None)
        return result

    def call(self, case: Case, inputs: Any, expected: tuple, device: str, worker: WorkerClient,
             observed_call: bool = True) -> tuple[RawResult, list[int]]:
        """The learner's function called on the case's inputs in the worker: what came back, and the inputs it
        changed. `observed_call=False` (a warm-up): no rule is watched, nothing is measured."""
        shared = shared_inputs.share(_laid_out(inputs.args, inputs.layout))
        task = {"kind": "case", "function": case.function, "args": shared.args, "tensors": shared.specs,
                "size": shared.size, "device": device, "audit": list(case.audit) if observed_call else [],
                "key_length": self._course(self.checker.span, case.function, inputs) if observed_call else 0,
                "forbidden": sorted(observed(self.exercise.rules.forbidden)) if observed_call else []}
        # Room for the expected outputs even if sent as float64, twice over, plus the message's own header.
        reply_limit = 2 * 8 * sum(tensor.numel() for tensor in expected) + (1 << 20)
        if MEMORY_AUDIT in case.audit and observed_call:
            worker.reset_memory_peak()
        try:
            raw = worker.run(task, [shared.fd], len(shared.specs), case.time_limit or self.exercise.time_limit,
                             reply_limit, shared.size)
            return raw, shared.changed()
        finally:
            shared.close()

    def _judge(self, case: Case, inputs: Any, expected: tuple, baseline: tuple | None, raw: RawResult,
               result: CaseResult, modified: list[int], device: str, lines: int = 0) -> None:
        """`lines`: how many lines the graded file has, as the grader counted them (a hidden case names no other)."""
        from grader.grading import compare, rules

        limit = case.time_limit or self.exercise.time_limit
        reply = raw.reply
        if raw.kind == "returned" and MEMORY_AUDIT in case.audit and raw.peak_bytes is None:
            result.outcome = Outcome.NOT_JUDGED
            result.message = ("not judged here: nothing on this machine counts all of your code's memory (no cgroup, "
                              "and no seccomp to keep it to one process); submit where the grader's sandbox runs")
            return
        if raw.kind == "returned":
            names = self.checker.input_names(case.function, inputs)
            changed = sorted(set(modified) | set(reply.observations.get("version_changed", [])))
            reasons = self.checker.rule_reasons
            forbidden = self.exercise.rules.forbidden
            seen = [name for name in reply.observations.get("forbidden_seen", []) if name in observed(forbidden)]
            violation = (rules.forbidden(seen, reasons.get("forbidden", ""), forbidden)
                         or (rules.inputs_modified(names, changed, reasons.get("inputs-modified", ""))
                             if self.exercise.rules.inputs_unchanged else None)
                         or rules.memory(list(case.audit), case.function, inputs, raw.peak_bytes,
                                          reply.observations, self.checker))
            if violation:
                result.message = violation.hidden_message if case.hidden and violation.hidden_message else \
                    violation.message
                result.extra["violates"] = violation.kind
                # What broke it, in the grader's own terms (operator names it listed, input indices), so that the
                # diagnosis names the mistake that broke it the same way.
                result.extra["evidence"] = {"forbidden": seen, "inputs-modified": changed}.get(violation.kind, [])
                return
            function = self.checker.functions[case.function]
            verdict = compare.compare_outputs(reply.value, function.outputs, expected, inputs.output_dtype(), device,
                                              baseline, self.tolerance(case), _first_tensor_name(function, inputs))
            result.outcome = Outcome.PASSED if verdict.passed else Outcome.FAILED
            # A hidden case's message is in the grader's words only: shapes, numbers or positions the learner's
            # code chose could carry the hidden inputs out.
            result.message = verdict.hidden_message if case.hidden and not verdict.passed else inert(verdict.message)
            result.details = [] if case.hidden else [inert(line) for line in verdict.details]
            return
        raised = inert(reply.exception) if reply else ""
        exception = hidden_exception(raised) if case.hidden else raised
        if raw.kind == "not-attempted":
            result.outcome = Outcome.NOT_ATTEMPTED
            result.message = f"{case.function} raises NotImplementedError: it is not written yet"
        elif raw.kind == "raised":
            result.outcome = Outcome.ERROR
            message = inert(reply.message)
            # A hidden case never echoes learner text: an exception message (or a class named for the purpose)
            # could carry the hidden inputs. A type from a fixed list, and a line that is one of the file's.
            result.message = f"raised {exception}" + (_line(reply.traceback, lines) if case.hidden else
                                                      (f": {message}" if message else ""))
        elif raw.kind == "out-of-memory":
            result.outcome = Outcome.OUT_OF_MEMORY
            on = "the GPU" if raised == "OutOfMemoryError" else "memory"
            result.message = (f"ran out of {on} ({inert(raw.detail) or exception}); the limit is "
                              f"{self.exercise.memory_limit_mb} MiB for your code's processes together: look for "
                              f"tensors kept alive in a list, or a loop that allocates without end")
        elif raw.kind == "timed-out":
            result.outcome = Outcome.TIMED_OUT
            result.message = (f"did not finish within the {limit:g} s limit ({raw.detail}; look for a loop that "
                              f"never ends)")
        else:
            result.outcome = Outcome.CRASHED
            detail = raw.detail or "the worker process ended"
            if case.hidden and "malformed reply" in detail:
                detail = "the worker sent a malformed reply"  # the schema's complaint may quote the learner's bytes
            elif case.hidden and raw.signal:
                detail = detail.replace(f"({raw.signal})", f"({hidden_ending(raw.signal)})")
            result.message = f"crashed: {inert(detail)}"
            result.message += CRASH_HINTS.get(raw.signal.split(" ")[0], "")
        if not case.hidden and reply is not None:
            result.traceback = inert(reply.traceback)

    def load_error(self, loaded: RawResult) -> str:
        """One clear message for a file that could not be imported, naming file, line and text."""
        name = self.learner_name
        body = loaded.loaded
        if loaded.kind == "load-error" and body is not None:
            where = f"{name}:{body.line}" if body.line else name
            text = f"\n    {inert(body.text)}" if body.text else ""
            tail = f"\n{inert(body.traceback)}" if body.traceback else ""
            return (f"{where}: your file could not be imported: {inert(body.exception)}: {inert(body.message)}"
                    f"{text}{tail}")
        if loaded.kind == "timed-out":
            return f"{name}: importing your file took longer than {self.exercise.time_limit:g} s ({loaded.detail})"
        if loaded.kind == "out-of-memory":
            return f"{name}: importing your file ran out of memory ({loaded.detail})"
        return f"{name}: {inert(loaded.detail) or 'the worker process ended while importing your file'}"


def hidden_exception(name: str) -> str:
    """An exception's type as a hidden case shows it: one of HIDDEN_EXCEPTIONS, else one fixed phrase."""
    return name if name in HIDDEN_EXCEPTIONS else OTHER_EXCEPTION


def hidden_ending(how: str) -> str:
    """How a hidden case's worker ended ('SIGUSR1', 'exit status 35'), as its class only ('a signal', 'exit status')."""
    return HIDDEN_ENDINGS.get(how.split(" ")[0], OTHER_ENDING)


def _line(traceback: str, lines: int) -> str:
    """' (line 12)': where in the learner's file, from its own trimmed traceback; only a number that is a line
    of that file as the grader counted it (the code can still choose among them: log2(lines) bits at most)."""
    found = re.findall(r'line (\d{1,7}), in', traceback or "")
    if not found or not 1 <= int(found[-1]) <= lines:
        return ""
    return f" (line {int(found[-1])})"


def _first_tensor_name(function: Any, inputs: Any) -> str:
    """The argument whose dtype the outputs take, for messages: 'query', 'x'."""
    import torch

    for name, arg in zip(function.arguments, inputs.args):
        if isinstance(arg, torch.Tensor) or (isinstance(arg, (list, tuple)) and arg
                                             and isinstance(arg[0], torch.Tensor)):
            return name
    return "the inputs"


def _laid_out(args: list[Any], layout: str) -> list[Any]:
    """Inputs as the learner receives them: contiguous, or the same values stored transposed."""
    import torch

    def one(value: Any) -> Any:
        if isinstance(value, list):
            return [one(item) for item in value]
        if isinstance(value, torch.Tensor) and layout == "transposed" and value.dim() >= 2:
            # Same values, but stored transposed: strides that a learner's code must not assume.
            return value.transpose(-2, -1).contiguous().transpose(-2, -1)
        return value

    return [one(value) for value in args]
