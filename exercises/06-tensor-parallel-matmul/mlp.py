"""Exercise 06's distributed suite: parallel_mlp on a real process group, one rank per shard (`--ranks N`).

Each case of cases/distributed.yaml lists every rank's share of the hidden layer in `hidden`, so its world
size is len(hidden). Every rank holds the same x, its column shard of W1 and its row shard of W2, and must
return the whole MLP's output, relu(x @ W1) @ W2. What each rank runs is in mlp_rank.py.

The traffic rule: the kernel counts the bytes the ranks move over their own loopback once all of them have
joined the group (payload, gloo's own framing, TCP/IP headers and acknowledgements). Any all-reduce of the
output moves at least (world - 1) outputs' worth: each rank lacks every other rank's partial sum. The ceiling
is CEILING times what one gloo all-reduce of the output moves, as `all_reduce_bytes` models it from the
reference's measured traffic, so that one all-reduce fits with room to spare while a second all-reduce or an
all-gather of the hidden activations (at least 16 times the output's width here) does not.

Measured for every case of cases/distributed.yaml on a 2-core Linux machine (gloo over the sandbox's own
loopback, torch 2.13): bytes the kernel counted, lowest and highest of 6 runs of the reference and of 3 runs
of each other file. "model" is all_reduce_bytes(); "ceiling" is max_traffic; "twice" reduces twice.

  case (output bytes)          reference        model    ceiling  RS + AG          twice            hidden gathered
  tp2-even (16,384)            35,584-35,688    35,668   64,202   53,428-53,636    70,960-71,324    563,276-563,588
  tp2-uneven-float32 (12,288)  27,340-27,704    27,476   49,456   41,036-41,192    54,576-55,096    388,728-388,988
  tp3-uneven (16,384)          74,140-74,400    74,236   133,624  111,344-114,244  148,020-148,384  1,312,632-1,346,556
  tp3-even-float32 (6,144)     33,128-34,368    33,276   59,896   49,640-49,900    66,152-66,308    570,268-570,736
  tp4-even (16,384)            114,732-115,304  115,704  208,267  172,540-174,752  229,620-230,088  1,706,628-1,742,368
  tp4-uneven-float32 (8,192)   66,256-66,828    66,552   119,793  98,916-99,132    131,992-132,312  1,927,540-1,928,268

So the reference stays at least 42% below the ceiling (one earlier run under heavy load counted 40,104 on
tp2-even, 12% above its usual figure, still far below), a second all-reduce lands at least 10% above it, and
gathering the hidden activations (the catalogued mistake) at least 7.9 times above it. RS + AG is the variant
that splits the all-reduce into reduce_scatter_tensor and all_gather_into_tensor of the output: gloo's
reduce-scatter moves as much as its all-reduce, so the pair costs 1.5 all-reduces, and passes at least 14%
under the ceiling. The list form (dist.reduce_scatter, then dist.all_gather) costs more with gloo: 1.57
all-reduces on tp2-even, 1.72 on tp3-uneven, and 1.92 to 2.2 on tp3-even-float32 and 4 ranks, which the
ceiling refuses; the statement says so.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch

from grader.api import DTYPES, Case, DistributedInputs, DistributedSuite, load_case_file

KEYS = {"hidden", "lead", "d_in", "d_out", "dtype", "seed"}
DTYPE_NAMES = ("float64", "float32")
MAX_ELEMENTS = 1 << 20
MIN_HIDDEN_RATIO = 16  # the hidden layer is at least this many times the output's width: gathering it shows
# One gloo all-reduce of B bytes over N ranks moved, as measured above, 2 (N - 1) B of payload (a ring: every
# rank sends and receives 2 (N - 1) / N of the output) plus about FRAMING bytes per ordered pair of ranks.
FRAMING = 1450
CEILING = 1.8  # one all-reduce is 1.0 of this, reduce-scatter + all-gather 1.5, two all-reduces 2.0


class ParallelMlpSuite(DistributedSuite):
    """N ranks, each with the whole x and one shard of each weight; one all-reduce of the output between them."""

    option = "ranks"
    function = "parallel_mlp"

    def __init__(self, checker: Any, folder: Path) -> None:
        self.checker = checker
        self.file = folder / "cases" / "distributed.yaml"
        self.rank_program = folder / "mlp_rank.py"

    def case_files(self) -> list[Path]:
        return [self.file] if self.file.is_file() else []

    def all_cases(self) -> list[Case]:
        return load_case_file(self.file, "distributed", (self.function,), self.validate) if self.file.is_file() else []

    def world_of(self, case: Case) -> int:
        return len(case.params["hidden"])

    def validate(self, function: str, params: dict[str, Any]) -> None:
        """Raise ValueError naming the first key that is unknown or out of range."""
        unknown = sorted(set(params) - KEYS)
        if unknown:
            raise ValueError(f"unknown key {unknown[0]!r} for {function} (allowed: {', '.join(sorted(KEYS))})")
        hidden = params.get("hidden")
        if not (isinstance(hidden, list) and len(hidden) >= 2 and all(_positive_int(n) for n in hidden)):
            raise ValueError(f"hidden must list each rank's hidden units, at least 2 positive integers, not {hidden!r}")
        lead = params.get("lead", [])
        if not (isinstance(lead, list) and all(_positive_int(n) for n in lead)):
            raise ValueError(f"lead must be a list of positive integers (possibly empty), not {lead!r}")
        for key in ("d_in", "d_out"):
            if not _positive_int(params.get(key)):
                raise ValueError(f"{key} must be a positive integer, not {params.get(key)!r}")
        if params.get("dtype", "float64") not in DTYPE_NAMES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPE_NAMES)}, not {params.get('dtype')!r}")
        seed = params.get("seed", 0)
        if not (isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0):
            raise ValueError(f"seed must be a non-negative integer, not {seed!r}")
        if sum(hidden) < MIN_HIDDEN_RATIO * params["d_out"]:
            raise ValueError(f"the hidden layer ({sum(hidden)} units) must be at least {MIN_HIDDEN_RATIO} times "
                             f"d_out ({params['d_out']}), so that gathering it moves far more than the output")
        rows = math.prod(lead)
        if max(rows * sum(hidden), params["d_in"] * sum(hidden), sum(hidden) * params["d_out"]) > MAX_ELEMENTS:
            raise ValueError(f"a tensor of this case would hold more than {MAX_ELEMENTS} elements")

    def build(self, case: Case, reference: Any) -> DistributedInputs:
        """The whole MLP made once in float64, its weights split by rank, the answer worked out in float64."""
        params = case.params
        hidden = list(params["hidden"])
        world = len(hidden)
        lead = list(params.get("lead", []))
        d_in, d_out, width = params["d_in"], params["d_out"], sum(hidden)
        dtype_name = params.get("dtype", "float64")
        dtype = DTYPES[dtype_name]
        generator = torch.Generator().manual_seed(int(params.get("seed", 0)))
        x = torch.randn(*lead, d_in, generator=generator, dtype=torch.float64).to(dtype)
        w1 = (torch.randn(d_in, width, generator=generator, dtype=torch.float64) / math.sqrt(d_in)).to(dtype)
        w2 = (torch.randn(width, d_out, generator=generator, dtype=torch.float64) / math.sqrt(width)).to(dtype)
        # Trusted grader-side code: the whole MLP in float64, from the rounded weights every rank holds a part of.
        answer = torch.relu(x.to(torch.float64) @ w1.to(torch.float64)) @ w2.to(torch.float64)
        w1_shards = [piece.contiguous() for piece in w1.split(hidden, dim=1)]
        w2_shards = [piece.contiguous() for piece in w2.split(hidden, dim=0)]
        output_bytes = answer.numel() * dtype.itemsize
        summary = (f"{world} ranks: x {(*lead, d_in)}, hidden units per rank {hidden} (of {width}), d_out {d_out}, "
                   f"{dtype_name}")
        return DistributedInputs([[x.clone(), w1_shards[rank], w2_shards[rank]] for rank in range(world)],
                           [answer.clone() for _ in range(world)], dtype, summary,
                           config={"hidden": hidden},
                           min_traffic=(world - 1) * output_bytes,
                           max_traffic=int(CEILING * all_reduce_bytes(world, output_bytes)),
                           traffic_reason=("parallel_mlp may move one all-reduce of the output's size per call; "
                                           "gathering the hidden activations, or reducing twice, moves far more"))

    def traffic_unit(self, inputs: DistributedInputs) -> tuple[int, str]:
        """`grader scale` counts each rank's bytes in one gloo all-reduce of the output (the model above)."""
        output_bytes = inputs.expected[0].numel() * inputs.dtype.itemsize
        return all_reduce_bytes(inputs.world, output_bytes), "one all-reduce"

    def table(self, stats: list[list[dict[str, float]]], inputs: DistributedInputs) -> dict[str, Any] | None:
        """Per rank: the hidden units it holds and how long its call took."""
        rows = []
        for rank, measured in enumerate(stats):
            if measured:
                rows.append({"rank": rank, "hidden": int(inputs.tensors[rank][1].shape[-1]),
                             "seconds": float(measured[0].get("seconds", 0.0))})
        if not rows:
            return None
        return {"caption": "parallel_mlp on each rank",
                "columns": ["rank", "hidden units", "time"],
                "rows": [[row["rank"], row["hidden"], f"{row['seconds'] * 1000:.2f} ms"] for row in rows],
                "data": {"world_size": inputs.world, "ranks": rows}}


def all_reduce_bytes(world: int, output_bytes: int) -> int:
    """What one gloo all-reduce of `output_bytes` moves over loopback among `world` ranks (the model above)."""
    return 2 * (world - 1) * output_bytes + FRAMING * world * (world - 1)


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1
