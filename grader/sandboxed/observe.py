"""What the worker observes around the learner's call: an explanation for the grader, never a verdict.

The learner's code runs in this same process and could switch this off; the grader decides
from what the kernel measured and what it handed over (grader/course/rules/), and uses these
observations only to say what was held.
"""

from __future__ import annotations

import weakref
from contextlib import contextmanager
from typing import Any, Iterator

MAX_REPORTED = 5  # offending ops listed per case: enough to point at the line, short enough to read


@contextmanager
def observe(task: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Watch one call; the grader reads the observations and decides what they mean."""
    observations: dict[str, Any] = {}
    if task.get("measure") == "cuda":  # `grader scale` on CUDA: the call's time and memory, and nothing else
        from grader.sandboxed.cuda_measure import measured

        with measured(observations):
            yield observations
        return
    memory = "memory" in (task.get("audit") or [])
    forbidden = frozenset(task.get("forbidden") or [])
    if not memory and not forbidden:
        yield observations
        return
    # Only when asked for: the dispatch mode costs time on every op it sees.
    mode = _audit_mode(int(task.get("key_length", 0)) if memory else 0, memory, forbidden)
    try:
        with mode:
            yield observations
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
