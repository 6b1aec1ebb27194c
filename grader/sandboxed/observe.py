"""What the worker observes around the learner's call: an explanation for the grader, never a verdict.

The learner's code runs in this same process and could switch this off; the grader decides
from what the kernel measured and what it handed over (grader/course/rules/), and uses these
observations only to say what was held.
"""

from __future__ import annotations

import functools
import threading
import types
import weakref
from contextlib import contextmanager
from typing import Any, Iterator

MAX_REPORTED = 5  # offending ops listed per case: enough to point at the line, short enough to read
MAX_CALLS = 16    # calls between the learner's functions reported per case (the reply schema's bound)
MAX_NAME = 100    # characters of a function's name: a longer one is not watched


class StoppedCall(BaseException):
    """Raised where the learner's code calls a function the grader stopped for this run (it timed out, or ran out of
    memory, on a case before): the case is reported as depending on it, and the function does not run again."""

    def __init__(self, function: str) -> None:
        super().__init__(function)
        self.function = function


class Calls:
    """Which of the learner's own functions called which during one call, seen by wrapping each module-level
    function of the learner's file once it is imported, and the functions the grader stopped for this run.

    A hint, never a verdict: the learner's code can hide a call (by keeping a reference of its own) or make one up,
    and what is seen here only lets the report say that one failure may follow from another."""

    def __init__(self) -> None:
        self.seen: set[tuple[str, str]] = set()
        self.stopped: frozenset[str] = frozenset()
        self._local = threading.local()

    def install(self, module: Any, path: str) -> None:
        """Wrap every plain function defined in the learner's file (`path`) at the top of `module`."""
        for name, value in list(vars(module).items()):
            if isinstance(value, types.FunctionType) and len(name) <= MAX_NAME \
                    and getattr(value.__code__, "co_filename", None) == path:
                setattr(module, name, self._wrapped(name, value))

    def begin(self, task: dict[str, Any]) -> None:
        """A new task: nothing seen yet, and the functions it says are stopped."""
        self.seen = set()
        stopped = task.get("stopped") or []
        self.stopped = frozenset(name for name in stopped if isinstance(name, str))

    def reported(self) -> list[str]:
        """What was seen, as the reply carries it: 'caller>callee', sorted, at most MAX_CALLS."""
        return sorted(f"{caller}>{callee}" for caller, callee in self.seen)[:MAX_CALLS]

    def _wrapped(self, name: str, function: Any) -> Any:
        calls = self

        @functools.wraps(function)
        def watched(*args: Any, **kwargs: Any) -> Any:
            if name in calls.stopped:
                raise StoppedCall(name)
            stack = calls._stack()
            if stack and stack[-1] != name and len(calls.seen) < MAX_CALLS:
                calls.seen.add((stack[-1], name))
            stack.append(name)
            try:
                return function(*args, **kwargs)
            finally:
                stack.pop()

        return watched

    def _stack(self) -> list[str]:
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack


@contextmanager
def sampled(task: dict[str, Any], fd: int | None) -> Iterator[None]:
    """While one call runs: where it is, written every `sample_every` seconds to `fd` by faulthandler's own thread
    (it reads the stack even while the call is stuck in C), so that a call stopped for its time says where it was."""
    every = task.get("sample_every")
    if fd is None or type(every) not in (int, float) or not 0.05 <= every <= 3600:
        yield
        return
    import faulthandler

    try:
        faulthandler.dump_traceback_later(every, repeat=True, file=fd)
    except (OSError, ValueError, RuntimeError):
        yield
        return
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


@contextmanager
def observe(task: dict[str, Any], calls: Calls | None = None) -> Iterator[dict[str, Any]]:
    """Watch one call; the grader reads the observations and decides what they mean."""
    observations: dict[str, Any] = {}
    if calls is not None:
        calls.begin(task)
        try:
            with _observed(task, observations):
                yield observations
        finally:
            if calls.seen:
                observations["calls"] = calls.reported()
        return
    with _observed(task, observations):
        yield observations


@contextmanager
def _observed(task: dict[str, Any], observations: dict[str, Any]) -> Iterator[None]:
    """What the task's rules (or grader scale) ask to be observed around the call, into `observations`."""
    if task.get("measure") == "cuda":  # `grader scale` on CUDA: the call's time and memory, and nothing else
        from grader.sandboxed.cuda_measure import measured

        with measured(observations):
            yield
        return
    memory = "memory" in (task.get("audit") or [])
    forbidden = frozenset(task.get("forbidden") or [])
    if not memory and not forbidden:
        yield
        return
    # Only when asked for: the dispatch mode costs time on every op it sees.
    mode = _audit_mode(int(task.get("key_length", 0)) if memory else 0, memory, forbidden)
    try:
        with mode:
            yield
    finally:
        if memory:
            observations["materialized"] = mode.materialized[:MAX_REPORTED]
            observations["materialized_count"] = len(mode.materialized)
            observations["peak_bytes"] = mode.peak
        if forbidden:
            observations["forbidden_seen"] = sorted(mode.forbidden_seen)[:MAX_REPORTED]


def _audit_mode(key_length: int, track_memory: bool, forbidden: frozenset[str] = frozenset()) -> Any:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    def tensors(value: Any) -> list:
        # aten ops take flat arguments and at most lists of tensors: cheaper than a general pytree walk.
        if isinstance(value, torch.Tensor):
            return [value]
        if isinstance(value, (list, tuple)):
            return [t for item in value for t in tensors(item)]
        if isinstance(value, dict):
            return tensors(list(value.values()))
        return []

    class AuditMode(TorchDispatchMode):
        """Sees every aten op the learner's code runs (and only those: entered around the call alone)."""

        def __init__(self) -> None:
            super().__init__()
            self.materialized: list[str] = []
            self.forbidden_seen: set[str] = set()
            self.live = 0
            self.peak = 0
            self._counted: set[int] = set()

        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            # Otherwise the first op under the mode imports torch._dynamo: about 2.5 s, for nothing here.
            return False

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if forbidden:
                name = f"{func.namespace}.{func.overloadpacket.__name__}"
                if name in forbidden:
                    self.forbidden_seen.add(name)
            out = func(*args, **(kwargs or {}))
            outputs = tensors(out)
            if key_length:
                for tensor in outputs:
                    if tensor.dim() and key_length in tuple(tensor.shape):
                        self.materialized.append(f"{func.overloadpacket.__name__} -> {tuple(tensor.shape)}")
            if track_memory:
                inputs = {t.untyped_storage().data_ptr() for t in tensors((args, kwargs))}
                for tensor in outputs:
                    self._track(tensor.untyped_storage(), inputs)
            return out

        def _track(self, storage: Any, inputs: set[int]) -> None:
            # Only storage an op allocated counts: views and in-place results share an input's storage,
            # and the inputs were allocated before the call. Each storage counts once, until it is freed.
            pointer, size = storage.data_ptr(), storage.nbytes()
            if pointer in inputs or pointer in self._counted or size == 0:
                return
            self._counted.add(pointer)
            self.live += size
            self.peak = max(self.peak, self.live)
            weakref.finalize(storage, self._free, pointer, size)

        def _free(self, pointer: int, size: int) -> None:
            self._counted.discard(pointer)
            self.live -= size

    return AuditMode()
