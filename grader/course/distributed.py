"""The interface for an exercise's distributed suite, run by a group of processes, and one case's inputs.

An exercise whose functions are meant to run across processes (ring attention's chunk functions,
with shards travelling between ranks; a tensor-parallel layer's all-reduce) subclasses `DistributedSuite`
and returns it from its checker's `suites()`, keyed by its own name: `{"ring": RingSuite(...)}`.
`grader run --ranks N` (or the suite's own name, `--ring N`) starts N ranks; where exercise.yaml
declares `distributed: {ranks: N}`, every submission runs it with N ranks, `grader grade` and the
autograder too, and its cases count toward the score unless `counts: false`.

The grader starts the ranks in one sandbox, hands each its own tensors, lets them join one
torch.distributed process group, then starts every rank's program at once and counts, with the
kernel, the bytes they move between them from then on; it supervises them as a group (time,
memory, who failed first) and judges each rank's output against the exercise's expected values,
and the traffic against the case's bounds (`min_traffic`, `max_traffic`). The exercise says what
the cases are, what each rank receives and should return, and what each rank does
(`rank_program`, a Python file that defines `run(learner, tensors, config) -> (output, stats)`,
calling the learner through `call_learner`; `config` holds `rank`, `world_size` and the case's own
`config`; the process group is torch.distributed's default one).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from grader.course.cases import Case


@dataclass
class DistributedInputs:
    """One distributed case: what each rank receives, what each should return, and how to describe it."""

    tensors: list[list[torch.Tensor]]   # per rank: the tensors handed to it (over its own pipe, no one else's)
    expected: list[torch.Tensor]        # per rank: the exact (float64) output
    dtype: torch.dtype                  # the dtype every rank's output must have
    summary: str = ""
    baseline: list[torch.Tensor] | None = None  # per rank, for half precision: the reference's own answer
    config: dict[str, Any] = field(default_factory=dict)  # given to every rank's program
    min_traffic: int = 0                # bytes the ranks must at least move between them (0: not checked)
    max_traffic: int = 0                # bytes they may move at most, once every rank has joined (0: not checked)
    traffic_reason: str = ""            # why, in the exercise's words, for a case that moves more

    @property
    def world(self) -> int:
        return len(self.tensors)


class DistributedSuite:
    """Subclass in the exercise folder; the grader runs it on a submission, or when asked (`--ranks N`)."""

    option = "ring"                 # its own name on the command line: `--ring N` as well as `--ranks N`
    function = "distributed_ring"   # the `function` its cases name
    uses: tuple[str, ...] = ()      # the learner's functions each rank calls: their failures may explain this suite's
    rank_program: Path              # the exercise's file each rank runs, inside the sandbox

    def case_files(self) -> list[Path]:
        """The files this suite's cases come from (digested with the rest of the course)."""
        return []

    def all_cases(self) -> list[Case]:
        """Every case of the suite, for `grader validate`."""
        return []

    def cases(self, world: int) -> list[Case]:
        """The cases to run with `world` ranks."""
        return [case for case in self.all_cases() if self.world_of(case) == world]

    def world_of(self, case: Case) -> int:
        """How many ranks a case needs."""
        raise NotImplementedError

    def build(self, case: Case, reference: Any) -> DistributedInputs:
        """A case's per-rank tensors and expected outputs (the reference solution, for half-precision baselines)."""
        raise NotImplementedError

    def validate(self, function: str, params: dict[str, Any]) -> None:
        """Raise ValueError naming the first key of a case that is unknown or out of range (the default: none is)."""

    def traffic_unit(self, inputs: DistributedInputs) -> tuple[int, str]:
        """What one unit of the communication a case needs moves among all its ranks, in bytes, and its name (06:
        one all-reduce of the output): `grader scale` counts each design's traffic in it. (0, ""): the reference's
        own traffic is the unit."""
        return 0, ""

    def table(self, stats: list[list[dict[str, float]]], inputs: DistributedInputs) -> dict[str, Any] | None:
        """A table for the report from what each rank measured (its `stats`: checked, finite numbers).

        Returns {"caption": str, "columns": [...], "rows": [[...]], "data": {...}} or None.
        """
        return None
