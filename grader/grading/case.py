"""Judging one case: inputs and expected values built here, the learner's call made in the worker, the verdict made here."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable

from grader.channel import noise, shared_inputs
from grader.channel.stack_sample import described
from grader.course import trust
from grader.course.blame import charged_to_course, course_frame, where
from grader.course.cases import Case
from grader.course.checker import Checker, Tolerance, laid_out
from grader.course.exercise import Exercise
from grader.course.rules import RULES
from grader.course.rules.memory import AUDIT
from grader.course.rules.rule import Call
from grader.errors import CourseBroken
from grader.grading import answer_cache, failure
from grader.grading.course_answers import check_answers
from grader.grading.dependencies import depends, reached
from grader.grading.warm_up import warm_up
from grader.grading.worker_client import RawResult, Task, WorkerClient, sampling
from grader.inert import inert
from grader.results import CaseResult, Outcome

MEMORY_AUDIT = AUDIT  # a case's `audit:` word for the memory rule (grader/course/rules/memory.py)
_PREPARED: dict[tuple[str, str], tuple] = {}
_PREPARING: dict[tuple[str, str], threading.Event] = {}
_LOCK = threading.Lock()
_KEEP_AUDITED = [False]  # whether a memory-audited case's inputs outlive its run (keep_audited_inputs)
PREPARE_WAIT = 120.0  # seconds to wait for the thread building a case's inputs; then they are built here as well


def keep_audited_inputs() -> None:
    """Keep memory-audited cases' inputs for the life of this process: for one that grades many files (validate,
    a cohort's grading process). A single grade lets each go once it ran: they are the largest by far (tens
    of MiB each), and Gradescope's whole container has 768 MB."""
    _KEEP_AUDITED[0] = True


class Judge:
    """Builds each case's inputs and expected values in this process and judges the worker's replies."""

    def __init__(self, exercise: Exercise, checker: Checker, learner_name: str, reference: ModuleType | None,
                 diagnose: bool = True, numbers: bool = False) -> None:
        self.exercise = exercise
        self.diagnose = diagnose  # name the catalogued mistake that explains a failure
        self.numbers = numbers  # a hidden failure says its figures: whoever reads it may read the course (Run.numbers)
        self.checker = checker
        self.learner_name = learner_name
        self.reference = reference
        self._trusted = trust.code_key(exercise)
        self.named: list[str] = []  # catalogued mistakes named so far in this run, tried first on the next failure
        self.warm_ups: dict[str, Case] = {}  # per function, the small case its first call is made on (warm_up.py)
        self.catalogue = None  # the catalogue of mistakes, looked up on the first failure (grader/grading/diagnosis.py)
        # Functions not called again in this run (grader/grading/budget.py, Budget.stopped): the worker stops a call of
        # one, and the case that made it is reported as depending on it.
        self.stopped: dict[str, Any] = {}
        self._keys: dict[int, tuple[Case, tuple[str, str]]] = {}

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
        ready.wait(PREPARE_WAIT)
        if key not in _PREPARED:  # the thread that built it failed, or is still at it: build it here too
            inputs = self._course(self.checker.build_inputs, case.function, case.params)
            expected = self._course(self.checker.expected, case.function, inputs)
            baseline = self._course(self.checker.baseline, case.function, inputs, self.reference,
                                    fallback=self.exercise.solution)
            check_answers(self, case, inputs, expected, baseline)
            _PREPARED[key] = (inputs, expected, baseline)
        return _PREPARED[key]

    def _course(self, method: Callable, *args: Any, fallback: Any = None) -> Any:
        """A checker method's result; whatever it raises is the course's bug (CourseBroken, with its file and line),
        never the learner's."""
        with charged_to_course(self.exercise.root, fallback or self.exercise.checker):
            return method(*args)

    def _key(self, case: Case) -> tuple[str, str]:
        known = self._keys.get(id(case))
        if known is None or known[0] is not case:  # the case itself is kept with its key, so its id is never reused
            # Its fields as asdict() gives them (the params are plain YAML data), without asdict's deep copy.
            fields = json.dumps(vars(case), sort_keys=True, default=str)
            known = self._keys[id(case)] = (case, (self._trusted, fields))
        return known[1]

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
        check_answers(self, case, inputs, expected, baseline)  # before anyone is judged against them
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
            audited = 0
            for case in cases:
                if stop.is_set():
                    return
                audited += MEMORY_AUDIT in case.audit
                if not wanted(case) or (MEMORY_AUDIT in case.audit and audited > 1 and not _KEEP_AUDITED[0]):
                    # A memory-audited case after the first is built when it runs, once the one before it is let go,
                    # so that two are never held at once; the first is ready before its turn.
                    continue
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
        return self.judged(case, device, self.called(case, device, worker))

    def called(self, case: Case, device: str, worker: WorkerClient) -> "Called":
        """The learner's call on one case in `worker`, not judged yet (any thread may make it: judged() judges)."""
        inputs, expected, _ = self.prepare(case)
        # A memory-audited case is measured from after the learner's first call (grader/grading/warm_up.py); a first
        # call that cost the worker its life is this case's result.
        raw = warm_up(self, case, device, worker) if MEMORY_AUDIT in case.audit else None
        modified, lines, first_call = [], self.nameable(worker), raw is not None
        if raw is None:
            raw, modified = self.call(case, inputs, expected, device, worker)
        return Called(raw, modified, lines, first_call)

    def judged(self, case: Case, device: str, called: "Called") -> CaseResult:
        """The verdict on a call `called` made, in the grader's own thread."""
        return self._verdict(case, device, called)

    def nameable(self, worker: WorkerClient) -> frozenset[int]:
        """The lines of the learner's file a hidden case may name: those of the exercise's own functions."""
        return failure.nameable_lines(worker.learner_functions, self.checker.functions)

    def send(self, case: Case, device: str, worker: WorkerClient) -> "Sending":
        """Hand a case without a memory audit to the worker now; `receive` judges it once the case before is judged,
        so that the worker computes one case while the grader judges another."""
        inputs, expected, _ = self.prepare(case)
        shared, task, reply_limit = self._task(case, inputs, expected, device, observed_call=True)
        try:
            sent = worker.send(Task(task, [shared.fd], len(shared.specs), self._limit(case), reply_limit, shared.size,
                                    output=not case.hidden))
        except BaseException:
            shared.close()
            raise
        return Sending(case, device, shared, sent, self.nameable(worker))

    def receive(self, sending: "Sending", worker: WorkerClient) -> CaseResult | None:
        """The verdict on a case `send` handed over; None if the worker it went to is gone (run it again)."""
        try:
            raw = sending.sent if isinstance(sending.sent, RawResult) else worker.finish(sending.sent)
            if raw is None:
                return None
            modified = sending.shared.changed()
        finally:
            sending.shared.close()
        return self._verdict(sending.case, sending.device, Called(raw, modified, sending.lines, False))

    def _verdict(self, case: Case, device: str, called: "Called") -> CaseResult:
        prepared = self.prepare(case)  # its inputs, expected values and baseline
        inputs, raw = prepared[0], called.raw
        result = CaseResult(case.name, case.suite, case.function, device, Outcome.FAILED, about=case.about,
                            inputs="" if case.hidden else inputs.summary, seconds=raw.seconds,
                            cpu_seconds=raw.cpu_seconds, points=case.points,
                            visibility=case.visibility, required=case.required)
        if not case.hidden:
            result.stdout = inert(raw.stdout)
            result.stderr, result.platform_output = noise.split_platform(inert(raw.stderr))
        try:
            self._judge(case, prepared, called, result)
            if result.outcome in (Outcome.FAILED, Outcome.ERROR) and self.diagnose and self.exercise.mistakes.is_dir():
                from grader.grading.diagnosis import diagnose

                result.diagnosis = diagnose(self, case, raw, result)
        except Exception as error:  # noqa: BLE001  (a reply that passed the schema yet cannot be judged)
            if course_frame(error, self.exercise.root):  # the checker's own code raised (its budget, its names)
                raise CourseBroken(where(error, self.exercise.root)) from None
            result.outcome, result.diagnosis = Outcome.CRASHED, None
            result.message = f"crashed: the worker's reply could not be judged ({type(error).__name__})"
            result.cause = "crashed (a reply that could not be judged)"
        if called.first_call:
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
        shared, task, reply_limit = self._task(case, inputs, expected, device, observed_call)
        if MEMORY_AUDIT in case.audit and observed_call:
            worker.reset_memory_peak()
        try:
            raw = worker.run(Task(task, [shared.fd], len(shared.specs), self._limit(case), reply_limit, shared.size))
            return raw, shared.changed()
        finally:
            shared.close()

    def _task(self, case: Case, inputs: Any, expected: tuple, device: str,
              observed_call: bool) -> tuple[shared_inputs.SharedInputs, dict, int]:
        """The case's inputs in shared memory, the task that names them, and the most its reply may hold."""
        shared = shared_inputs.share(laid_out(inputs.args, inputs.layout))
        try:
            task = {"kind": "case", "function": case.function, "args": shared.args, "tensors": shared.specs,
                    "size": shared.size, "device": device, "audit": list(case.audit) if observed_call else [],
                    "stopped": sorted(self.stopped),
                    **({} if case.hidden else sampling(self._limit(case))),
                    # What each rule has the worker observe; a warm-up call is watched for none.
                    **(self._course(self._asked, case, inputs) if observed_call else {})}
        except BaseException:
            shared.close()
            raise
        # Room for the expected outputs even if sent as float64, twice over, plus the message's own header.
        return shared, task, 2 * 8 * sum(tensor.numel() for tensor in expected) + (1 << 20)

    def _asked(self, case: Case, inputs: Any) -> dict[str, Any]:
        """The task's fields by which every rule has the worker observe what it judges ('forbidden': the names)."""
        call = Call(self.exercise.rules, self.checker, case, inputs)
        return {name: value for rule in RULES for name, value in rule.asks(call).items()}

    def _limit(self, case: Case) -> float:
        """The case's CPU limit: its own times a learner's extra time, or the default (already scaled by it)."""
        return case.time_limit * self.exercise.time_factor if case.time_limit else self.exercise.time_limit

    def _judge(self, case: Case, prepared: tuple, called: "Called", result: CaseResult) -> None:
        """The verdict on `called`, a call of `case` on its `prepared` inputs and answers, written into `result`."""
        from grader.grading import compare

        inputs, expected, baseline = prepared
        raw = called.raw
        reply = raw.reply
        if reply is not None:
            result.reached = reached(self.checker.functions, case.function, reply.observations.get("calls", []))
        if raw.kind == "stopped":
            if reply is not None and reply.message in self.stopped:
                depends(self.stopped, reply.message, result)
            else:  # the worker named a function the grader never stopped: not a reply the grader asked for
                result.outcome, result.cause = Outcome.CRASHED, "crashed (a malformed reply)"
                result.message = "crashed: the worker sent a malformed reply (a call stopped that was not stopped)"
            return
        if raw.kind == "returned":
            call = Call(self.exercise.rules, self.checker, case, inputs, reply.observations, called.modified,
                        raw.peak_bytes)
            unjudged = next((why for rule in RULES if (why := rule.unjudged(call))), "")
            if unjudged:
                result.outcome, result.message = Outcome.NOT_JUDGED, unjudged
                result.cause = "could not be judged on this machine"
                return
            violation = next((found for rule in RULES if (found := rule.judge(call))), None)
            if violation:
                result.message = violation.hidden_message if self._hides(case) and violation.hidden_message else \
                    inert(violation.message)
                result.extra["violates"] = violation.kind
                result.cause = f"broke the {violation.kind} rule"
                # What broke it, in the grader's own terms (operator names it listed, input indices), so that the
                # diagnosis names the mistake that broke it the same way.
                result.extra["evidence"] = violation.evidence
                return
            function = self.checker.functions[case.function]
            wanted = compare.OutputType(inputs.output_dtype(), result.device, _first_tensor_name(function, inputs))
            verdict = compare.compare_outputs(reply.value, function.outputs, expected, wanted, baseline,
                                              self.tolerance(case))
            result.outcome = Outcome.PASSED if verdict.passed else Outcome.FAILED
            # A hidden case's message is in the grader's words only: shapes, numbers or positions the learner's
            # code chose could carry the hidden inputs out. Whoever may read the course sees them (Run.numbers).
            result.message = verdict.hidden_message if self._hides(case) and not verdict.passed else \
                inert(verdict.message)
            result.details = [] if self._hides(case) else [inert(line) for line in verdict.details]
            result.cause = "" if verdict.passed else verdict.hidden_message
            return
        failure.describe(case, raw, result, called.lines, self._limit(case), self.exercise.memory_limit_mb)
        if raw.stopped_at and not case.hidden:  # a hint from beside the learner's code: a visible case's alone
            result.message += f"; {described(raw.stopped_at, self.learner_name)}"

    def _hides(self, case: Case) -> bool:
        """Whether `case`'s verdict is said in the grader's words alone: a hidden case, read by a learner."""
        return case.hidden and not self.numbers

    def load_error(self, loaded: RawResult) -> str:
        """One clear message for a file that could not be imported, naming file, line and text."""
        return failure.load_error(self.learner_name, loaded, self.exercise.time_limit)


@dataclass
class Called:
    """What the learner's call on one case gave (Judge.called), before any verdict."""

    raw: RawResult
    modified: list[int]  # the indices of the inputs it changed
    lines: frozenset[int]  # the lines of the graded file a hidden case may name (failure.nameable_lines)
    first_call: bool     # the warm-up call before a memory-audited case ended it (grader/grading/warm_up.py)


@dataclass
class Sending:
    """A case handed to the worker (Judge.send) and not yet judged: its inputs' pages stay the grader's to read back."""

    case: Case
    device: str
    shared: shared_inputs.SharedInputs
    sent: Any  # worker_client.Sent, or the RawResult of a task that could not be sent
    lines: frozenset[int]

    def discard(self) -> None:
        """Give up on it unjudged (the run stopped): its pages are released, its reply is never read."""
        self.shared.close()


def _first_tensor_name(function: Any, inputs: Any) -> str:
    """The argument whose dtype the outputs take, for messages: 'query', 'x'."""
    import torch

    for name, arg in zip(function.arguments, inputs.args):
        if isinstance(arg, torch.Tensor) or (isinstance(arg, (list, tuple)) and arg
                                             and isinstance(arg[0], torch.Tensor)):
            return name
    return "the inputs"

