"""Exercise 07's distributed suite (`--ring N`): the ring case file, per-rank inputs, answers and a table.

Each case lists every rank's key length in `shards` (so its world size is len(shards)); `--ring N`
runs the cases of world size N and one generated case with an even split. Every rank's queries
attend to every key, so each rank's expected output is its rows of ordinary attention over the
whole sequence. What each rank does with the learner's functions is in ring_rank.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from grader.api import HALF_DTYPES, Case, DistributedInputs, DistributedSuite, Inputs, load_case_file

SHARED_KEYS = {"batch", "d", "dv", "dtype", "seed", "scale"}
RING_KEYS = SHARED_KEYS | {"shards", "lq"}
EVEN_SHARD, EVEN_LQ = 4, 3


class RingSuite(DistributedSuite):
    """N ranks, each holding one query block and one key/value shard; the shards travel around the ring."""

    option = "ring"
    function = "distributed_ring"
    uses = ("attention_chunk_stats", "merge_chunk_stats")  # what ring_rank.py calls on every rank

    def __init__(self, checker: Any, folder: Path) -> None:
        self.checker = checker
        self.file = folder / "cases" / "ring.yaml"
        self.rank_program = folder / "ring_rank.py"

    def case_files(self) -> list[Path]:
        return [self.file] if self.file.is_file() else []

    def all_cases(self) -> list[Case]:
        return load_case_file(self.file, "ring", (self.function,), self.validate) if self.file.is_file() else []

    def world_of(self, case: Case) -> int:
        return len(case.params["shards"])

    def cases(self, world: int) -> list[Case]:
        """The case file's cases of this world size, then a generated even split."""
        chosen = super().cases(world)
        params = {"shards": [EVEN_SHARD] * world, "lq": EVEN_LQ, "d": 8, "dtype": "float64", "seed": 700 + world}
        chosen.append(Case(f"ring{world}-even-split", "ring", self.function,
                           f"{world} ranks, each holding {EVEN_SHARD} keys and {EVEN_LQ} queries (generated)",
                           params, None, "generated"))
        return chosen

    def validate(self, function: str, params: dict[str, Any]) -> None:
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
        # The remaining keys mean what they mean for one chunk: the exercise's checker judges them.
        self.checker.validate("attention_chunk_stats", {key: params[key] for key in SHARED_KEYS if key in params})

    def build(self, case: Case, reference: Any) -> DistributedInputs:
        """Generate the inputs as one ring_attention case, then split the queries among the ranks."""
        params = case.params
        shards = list(params["shards"])
        world = len(shards)
        lq = params.get("lq", EVEN_LQ)
        lqs = list(lq) if isinstance(lq, list) else [lq] * world
        single = {key: params[key] for key in SHARED_KEYS if key in params}
        inputs = self.checker.build_inputs("ring_attention", {**single, "lq": sum(lqs), "chunks": shards})
        query, keys, values = inputs.args
        (whole,) = self.checker.expected("ring_attention", inputs)
        queries = list(query.split(lqs, dim=-2))
        baseline = None
        if query.dtype in HALF_DTYPES:
            # The reference, in the same dtype, visiting shards in the same order as each rank does.
            baseline = [self.checker.baseline("ring_attention", Inputs(
                [queries[rank], [keys[i] for i in _order(rank, world)], [values[i] for i in _order(rank, world)]]),
                reference)[0] for rank in range(world)]
        dims = f"d {query.shape[-1]}, dv {values[0].shape[-1]}"
        batch = f"batch {tuple(query.shape[:-2])}, " if query.dim() > 2 else ""
        summary = (f"{world} ranks: key shards {shards}, queries per rank {lqs}, {batch}{dims}, "
                   f"{params.get('dtype', 'float64')}")
        shard_bytes = sum(t.numel() * t.element_size() for t in (*keys, *values))
        return DistributedInputs([[queries[rank], keys[rank], values[rank]] for rank in range(world)],
                           list(whole.split(lqs, dim=-2)), query.dtype, summary, baseline,
                           config={"shards": shards},
                           # Each rank must receive every other rank's keys and values once.
                           min_traffic=(world - 1) * shard_bytes)

    def table(self, stats: list[list[dict[str, float]]], inputs: DistributedInputs) -> dict[str, Any] | None:
        """Per rank: queries and keys held, shards computed on, bytes sent and received, mean time per shard."""
        rows = []
        for rank, steps in enumerate(stats):
            if not steps:
                continue
            rows.append({"rank": rank, "queries": int(inputs.tensors[rank][0].shape[-2]),
                         "keys": int(inputs.tensors[rank][1].shape[-2]), "steps": len(steps),
                         "bytes_sent": int(sum(step.get("sent", 0) for step in steps)),
                         "bytes_received": int(sum(step.get("received", 0) for step in steps)),
                         "seconds_per_step": sum(step.get("seconds", 0.0) for step in steps) / len(steps)})
        if not rows:
            return None
        world = inputs.world
        caption = f"{world - 1} communication step{'s' * (world - 1 != 1)}, overlapped with compute"
        # Per rank: the shards it computed on (its own, then each one received), and the time each took.
        return {"caption": caption,
                "columns": ["rank", "queries", "keys", "shards", "sent", "received", "per shard"],
                "rows": [[row["rank"], row["queries"], row["keys"], row["steps"], _bytes(row["bytes_sent"]),
                          _bytes(row["bytes_received"]), f"{row['seconds_per_step'] * 1000:.2f} ms"] for row in rows],
                "data": {"world_size": world, "communication_steps": world - 1, "ranks": rows}}


def _order(rank: int, world: int) -> list[int]:
    """The shards rank `rank` computes on, in order: its own, then its left neighbour's, and so on."""
    return [(rank - step) % world for step in range(world)]


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _bytes(count: int) -> str:
    return f"{count} B" if count < 10 * 1024 else f"{count / 1024:.1f} KiB"
