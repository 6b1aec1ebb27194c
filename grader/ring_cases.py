"""Distributed-ring cases: the ring case file, generated even splits, per-rank inputs and expected values."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from grader.cases import Case, load_case_file
from grader.checkers import ring_attention as checker

FUNCTION = "distributed_ring"
# Keys a ring case may have besides the generic ones; the shared ones are range-checked by the checker.
SHARED_KEYS = {"batch", "d", "dv", "dtype", "seed", "scale"}
RING_KEYS = SHARED_KEYS | {"shards", "lq"}
EVEN_SHARD, EVEN_LQ = 4, 3


def validate(function: str, params: dict[str, Any]) -> None:
    """Raise ValueError naming the first ring parameter that is unknown or out of range."""
    unknown = sorted(set(params) - RING_KEYS)
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r} for {function} (allowed: {', '.join(sorted(RING_KEYS))})")
    shards = params.get("shards")
    if not (isinstance(shards, list) and len(shards) >= 2 and all(_positive_int(n) for n in shards)):
        raise ValueError(f"shards must list each rank's key length, at least 2 positive integers, not {shards!r}")
    lq = params.get("lq", EVEN_LQ)
    if not (_positive_int(lq) or (isinstance(lq, list) and len(lq) == len(shards)
                                  and all(_positive_int(n) for n in lq))):
        raise ValueError(f"lq must be a positive integer or one per rank ({len(shards)} of them), not {lq!r}")
    # The remaining keys mean what they mean for one chunk: let the exercise's checker judge them.
    checker.validate("attention_chunk_stats", {key: params[key] for key in SHARED_KEYS if key in params})


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def ring_cases(path: Path | None, world: int) -> list[Case]:
    """The case file's cases whose world size (len(shards)) is `world`, then a generated even split."""
    cases = load_case_file(path, "ring", (FUNCTION,), validate) if path is not None else []
    chosen = [case for case in cases if len(case.params["shards"]) == world]
    params = {"shards": [EVEN_SHARD] * world, "lq": EVEN_LQ, "d": 8, "dtype": "float64", "seed": 700 + world}
    chosen.append(Case(f"ring{world}-even-split", "ring", FUNCTION,
                       f"{world} ranks, each holding {EVEN_SHARD} keys and {EVEN_LQ} queries (generated)",
                       params, None, "generated"))
    return chosen


@dataclass
class RingInputs:
    """Each rank's query, key and value shard, the float64 expected outputs and the half baseline."""

    queries: list[torch.Tensor]
    keys: list[torch.Tensor]
    values: list[torch.Tensor]
    expected: list[torch.Tensor]
    baseline: list[torch.Tensor] | None
    dtype: torch.dtype
    summary: str


def visiting_order(rank: int, world: int) -> list[int]:
    """The shards rank `rank` computes on, in order: its own, then its left neighbour's, and so on."""
    return [(rank - step) % world for step in range(world)]


def build(params: dict[str, Any], solution: Any) -> RingInputs:
    """Generate a ring case's inputs with the checker (as one ring_attention case), then split the queries."""
    shards = list(params["shards"])
    world = len(shards)
    lq = params.get("lq", EVEN_LQ)
    lqs = list(lq) if isinstance(lq, list) else [lq] * world
    single = {key: params[key] for key in SHARED_KEYS if key in params}
    inputs = checker.build_inputs("ring_attention", {**single, "lq": sum(lqs), "chunks": shards})
    query, keys, values = inputs.args
    # Every rank's queries attend to every key: the expected output is ordinary attention, split by rank.
    (whole,) = checker.expected("ring_attention", [query, keys, values])
    queries = list(query.split(lqs, dim=-2))
    expected = list(whole.split(lqs, dim=-2))
    baseline = None
    if query.dtype in checker.HALF_DTYPES:
        # The reference, in the same dtype, visiting shards in the same order as each rank does.
        baseline = [checker.baseline("ring_attention", [queries[rank], [keys[i] for i in visiting_order(rank, world)],
                                                        [values[i] for i in visiting_order(rank, world)]],
                                     solution)[0] for rank in range(world)]
    dims = f"d {query.shape[-1]}, dv {values[0].shape[-1]}"
    batch = f"batch {tuple(query.shape[:-2])}, " if query.dim() > 2 else ""
    summary = (f"{world} ranks: key shards {shards}, queries per rank {lqs}, {batch}{dims}, "
               f"{params.get('dtype', 'float64')}")
    return RingInputs(queries, list(keys), list(values), expected, baseline, query.dtype, summary)
