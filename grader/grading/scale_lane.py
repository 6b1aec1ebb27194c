"""The designs `grader scale` measures (the learner's file, the reference, the catalogue's naive ones), and one
design's worker: started in the sandbox as grading starts it, called at each size, each call measured.

Each call is the learner's function on inputs handed over in shared memory, as a case's call is, with no audit
watching it (the dispatch mode would cost time on every operator). Its time is what the worker measured around
the call, its memory the sandbox's peak above the level the worker settled at after a first, unmeasured call on
the smallest size (grader/grading/warm_up.py): the kernel's figure the memory-audited cases use. On CUDA both come
from torch inside the worker (grader/sandboxed/cuda_measure.py).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.channel import shared_inputs
from grader.course import mistakes
from grader.course.checker import Inputs, laid_out
from grader.course.exercise import Exercise
from grader.course.scale_spec import ScaleSpec
from grader.grading.failure import load_error
from grader.grading.warm_up import ALLOWANCE
from grader.grading.worker_client import RawResult, Task, WorkerClient
from grader.inert import fit, inert

# A size's calls are made in rounds, every design once a round, so that a moment the machine is busy costs every
# design alike; another round follows, up to ROUNDS, while a round costs less than ROUND_WITHIN seconds.
ROUNDS = 5
ROUND_WITHIN = 0.1


@dataclass(frozen=True)
class Design:
    """One implementation measured: the learner's, the reference, or a catalogued mistake composed with it."""

    key: str    # "yours", "reference", or the mistake's file stem
    title: str  # how the picture and the words name it: the mistake's TITLE
    file: Path
    help: str = ""  # a mistake's HELP

    @property
    def naive(self) -> bool:
        return self.key not in ("yours", "reference")


@dataclass
class Measured:
    """One design's call at one size: its best time and memory over the calls made, or why it failed."""

    seconds: float | None = None
    memory: int | None = None
    failed: str = ""  # why there is no figure: raised, timed out, not written yet


def designs(exercise: Exercise, spec: ScaleSpec, learner: Path, folder: Path) -> list[Design]:
    """The learner's file, the reference, then each naive design the section names, composed into `folder`."""
    from grader.grading.diagnosis import catalogue

    found = [Design("yours", "yours", learner), Design("reference", "reference", exercise.solution)]
    known = {mistake.stem: mistake for mistake in catalogue(exercise).mistakes} if exercise.mistakes.is_dir() else {}
    for stem in spec.naive:
        if stem not in known:
            have = ", ".join(sorted(known)) or "none"
            raise spec.error(f"naive: no mistake {stem!r} loads from {exercise.mistakes} (it has: {have})", "naive")
        told = known[stem].diagnosis()
        composed = mistakes.as_submission(exercise.mistakes / f"{stem}.py", exercise.solution, folder)
        found.append(Design(stem, told.title, composed, told.help))
    return found


class Lane:
    """One design's worker, for a function the checker declares."""

    def __init__(self, design: Design, exercise: Exercise, device: str) -> None:
        self.design = design
        self.exercise = exercise
        self.device = device
        self.worker = WorkerClient(design.file, exercise.root, exercise.memory_limit_mb, use_cuda=device == "cuda")
        self.memory_counted = True  # whether the kernel counts every process of the sandbox here

    def start(self) -> None:
        self.worker.start()

    def ready(self) -> str:
        """'' once the file is imported; else why it could not be."""
        loaded = self.worker.wait_ready(self.exercise.time_limit)
        if loaded.kind == "ready":
            self.memory_counted = self.worker.sandbox.memory_judged
            return ""
        if loaded.kind == "sandbox-error":
            return f"its worker could not start ({inert(loaded.detail)})"
        return load_error(self.design.file.name, loaded, self.exercise.time_limit).splitlines()[0]

    def warm_up(self, function: str, inputs: Inputs, limit: float) -> str:
        """The first call, on the smallest size, not measured; memory is measured from the level it leaves."""
        raw, _ = self._call(function, inputs, limit)
        if raw.kind != "returned":
            return _failure(raw)
        self.worker.rebase_memory(ALLOWANCE)
        return ""

    def measure(self, function: str, inputs: Inputs, limit: float, best: Measured | None = None) -> Measured:
        """One call at one size, kept with `best` (the calls before it at that size): the least time and the least
        memory any of them took, or why this one failed."""
        best = best or Measured()
        raw, memory = self._call(function, inputs, limit)
        if raw.kind != "returned":
            return Measured(failed=_failure(raw))
        seconds = raw.seconds
        if self.device == "cuda":
            observed = raw.reply.observations
            seconds = observed.get("cuda_microseconds", seconds * 1e6) / 1e6
            memory = observed.get("cuda_peak_bytes")
        best.seconds = seconds if best.seconds is None else min(best.seconds, seconds)
        if memory is not None:
            best.memory = memory if best.memory is None else min(best.memory, memory)
        return best

    def _call(self, function: str, inputs: Inputs, limit: float) -> tuple[RawResult, int | None]:
        """One call in the worker: what came back, and the sandbox's peak above the worker's level (None uncounted)."""
        shared = shared_inputs.share(laid_out(inputs.args, inputs.layout))
        try:
            task = {"kind": "case", "function": function, "args": shared.args, "tensors": shared.specs,
                    "size": shared.size, "device": self.device, "audit": [], "key_length": 0, "forbidden": []}
            if self.device == "cuda":
                task["measure"] = "cuda"
            worker = self.worker
            worker.reset_memory_peak()
            raw = worker.run(Task(task, [shared.fd], len(shared.specs), limit, 2 * shared.size + (1 << 20), shared.size))
            peak = None
            if worker.alive and raw.kind == "returned" and self.memory_counted:
                counted = shared.size if worker.sandbox.peak_counts_shared_pages else 0
                peak = max(worker.sandbox.memory_peak() - worker.baseline - counted, 0)
            return raw, peak
        finally:
            shared.close()

    def stop_at(self, deadline_in: float) -> threading.Timer:
        """A timer that ends this worker's wait once the budget is spent (cancel it when the call returns)."""
        timer = threading.Timer(max(deadline_in, 0.0), self.worker.abandon)
        timer.daemon = True
        timer.start()
        return timer

    def stop(self) -> None:
        self.worker.stop()


def _failure(raw: RawResult) -> str:
    """Why a call gave no figure, in a few words (what the learner's code raised is shown inert)."""
    if raw.kind == "not-attempted":
        return "not written yet (it raises NotImplementedError)"
    if raw.kind == "raised":
        message = fit(inert(raw.reply.message), 160) if raw.reply and raw.reply.message else ""
        return f"raised {inert(raw.reply.exception if raw.reply else 'an exception')}" + (f": {message}" if message
                                                                                             else "")
    if raw.kind == "timed-out":
        return "timed out"
    if raw.kind == "out-of-memory":
        return "ran out of memory"
    if raw.kind == "crashed" and "stopped waiting" in raw.detail:
        return "stopped: the budget ran out during this call"
    return f"{raw.kind} ({fit(inert(raw.detail), 160)})" if raw.detail else raw.kind


def check_function(spec: ScaleSpec, checker: Any, suites: dict[str, Any]) -> Any:
    """The suite whose function the section names (None: a function of the checker); ConfigError for neither, or
    for a measure the function cannot have."""
    suite = next((suite for suite in suites.values() if suite.function == spec.function), None)
    if suite is None and spec.function not in checker.functions:
        names = [*checker.functions, *(suite.function for suite in suites.values())]
        raise spec.error(f"function {spec.function!r} is neither the checker's nor a distributed suite's "
                         f"({', '.join(names)})", "function")
    wrong = [m for m in spec.measures if m == ("memory" if suite is not None else "traffic")]
    if wrong:
        where = "a distributed suite's ranks" if suite is not None else "a function of one process"
        raise spec.error(f"measure: {wrong[0]} is not measured for {where} (time, "
                         f"{'traffic' if suite is not None else 'memory'})", "measure")
    return suite
