"""One call's time and peak memory on CUDA, as torch counts them in the worker: what `grader scale` draws there.

The kernel counts host memory only, and a wall clock around an asynchronous launch measures the launch: on
CUDA the call is timed with a pair of CUDA events and its memory is the caching allocator's peak
(`torch.cuda.max_memory_allocated`) above what was allocated when it began. Both come from inside the learner's
process, so they only draw a curve; they never decide a verdict.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator


@contextmanager
def measured(observations: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Time the call between two CUDA events and take the allocator's peak above its level before the call."""
    import torch

    torch.cuda.synchronize()
    before = int(torch.cuda.memory_allocated())
    torch.cuda.reset_peak_memory_stats()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    try:
        yield observations
    finally:
        try:
            end.record()
            end.synchronize()
            observations["cuda_peak_bytes"] = max(0, int(torch.cuda.max_memory_allocated()) - before)
            observations["cuda_microseconds"] = max(0, int(start.elapsed_time(end) * 1000))
        except Exception:  # noqa: BLE001  (a device the learner's code broke: no figure, and its own error stands)
            pass
