"""The learner's first call, made before a memory-audited case, so that first-call costs are not counted.

The memory rule measures what a call holds at once. What a function's first call leaves behind in
the process is another thing: a library imported on first use (torch.utils.checkpoint imports
torch._dynamo, about 71 MiB, whatever the sequence length), a cache filled once. So before a worker's
first memory-audited case of a function, that function is called once, unobserved and unjudged, on
a small visible case of it; the worker's memory is then measured from the level it settled at.

What the import and the first call left is excused up to ALLOWANCE: memory that grows with the
audited case (scores against every key, every key gathered) is allocated during the audited call
itself and is counted whatever came before. A buffer a learner's code allocates and fills during its
first call, before it can know the audited case's size, is excused only up to the allowance.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from grader.course.cases import Case
from grader.grading.worker_client import RawResult

ALLOWANCE = 128 << 20  # bytes of first-call costs excused: torch._dynamo's import is about 71 MiB of it
MEMORY_AUDIT = "memory"


def warm_up_cases(cases: list[Case]) -> dict[str, Case]:
    """Per function, the case its first call is made on: its first visible case without the memory audit (a
    hidden one only where the function has no visible case: hidden cases run in a worker of their own)."""
    chosen: dict[str, Case] = {}
    for case in sorted(cases, key=lambda case: case.hidden):  # visible cases first, each file's order kept
        if MEMORY_AUDIT not in case.audit and case.function not in chosen:
            chosen[case.function] = case
    return chosen


def warm_up(judge: Any, case: Case, device: str, worker: Any) -> Any:
    """Call `case`'s function once on its small case, unless this worker has already; then measure memory from the
    level the worker settled at. Returns None, or the first call's RawResult when it cost the worker its life
    (timed out, crashed, ran out of memory): that is then the audited case's result too."""
    small = judge.warm_ups.get(case.function)
    if small is None or case.function in worker.warmed or (small.hidden and not case.hidden):
        return None
    worker.warmed.add(case.function)
    inputs, expected, _ = judge.prepare(small)
    # Under the audited case's time limit, not the small case's: a first call's costs (an import on first use
    # takes a second or more of CPU on a busy laptop) belong to the audited case, and a visible example's limit
    # is sized for its own small call only.
    limited = replace(small, time_limit=case.time_limit)  # None: the exercise's own, as for the audited case
    raw, _ = judge.call(limited, inputs, expected, device, worker, observed_call=False)
    if not worker.alive:
        if raw.kind in ("timed-out", "crashed", "out-of-memory"):
            return raw
        return RawResult("crashed", detail="the worker was stopped after the warm-up call")
    worker.rebase_memory(ALLOWANCE)
    return None
