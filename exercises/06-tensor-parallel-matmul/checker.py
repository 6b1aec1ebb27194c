"""Exercise 06's checker: inputs and float64 answers for column_parallel_linear and row_parallel_linear.

Loaded by the grader through grader/api.py's interface; the distributed suite, where parallel_mlp runs on
a real process group, is in mlp.py beside it. A case describes one product `x @ W` with the weight
already cut into shards, one shard per (imagined) GPU:

    lead          the leading dimensions of x, a list of positive sizes (default []: x is a vector)
    shards        one size per shard: for column_parallel_linear the output columns each shard holds,
                  for row_parallel_linear the input rows each holds (and so the width of its x shard)
    d_in          column_parallel_linear: the width of x (every shard's rows)
    d_out         row_parallel_linear: the width of the output (every shard's columns)
    dtype         float64 (default), float32, bfloat16 or float16
    seed          the random generator's seed (inputs are standard normal draws)
    scale         multiplies x (default 1; 0 makes x all zeros)
    weight_scale  multiplies the weight (default 1/sqrt(the full d_in), so outputs stay near 1)
    layout        contiguous (default) or transposed: every tensor of two or more dimensions arrives
                  stored with its last two dimensions swapped

Inputs are made in float64, then rounded once to the case dtype; the expected answer is the float64
product of those rounded inputs.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import torch

from grader.api import DTYPES, Checker, Function, Inputs

COMMON = {"lead", "shards", "dtype", "seed", "scale", "weight_scale", "layout"}
KEYS = {"column_parallel_linear": COMMON | {"d_in"}, "row_parallel_linear": COMMON | {"d_out"}}
ARGUMENTS = {"column_parallel_linear": ("x", "weight_shards"), "row_parallel_linear": ("x_shards", "weight_shards")}
WIDTH = {"column_parallel_linear": "d_in", "row_parallel_linear": "d_out"}  # the size every shard shares
LAYOUTS = ("contiguous", "transposed")
MAX_ELEMENTS = 1 << 21  # per tensor: a case this size is already slow to judge on a small machine
# Inputs and answers stay this far inside the dtype's range, so that no honest order of the sums overflows.
HEADROOM = 4.0


class TensorParallelChecker(Checker):
    """Two single-process functions; the third, parallel_mlp, runs in the distributed suite (mlp.py)."""

    functions = {name: Function(ARGUMENTS[name], ("y",), KEYS[name]) for name in KEYS}
    rule_reasons = {
        "inputs-modified": ("x and every shard must come back exactly as they were handed over: they are the "
                            "caller's activations and weights. Compute into new tensors (or into tensors you "
                            "created yourself) instead of writing into an argument"),
    }

    def validate(self, function: str, params: dict[str, Any]) -> None:
        super().validate(function, params)
        if params.get("audit"):
            raise ValueError("this exercise has no memory rule: audit is not used here")
        validate_shapes(function, params)
        if "seed" in params and not _is_int(params["seed"]):
            raise ValueError(f"seed must be an integer, not {params['seed']!r}")
        for key in ("scale", "weight_scale"):
            if key in params and not _is_number(params[key]):
                raise ValueError(f"{key} must be a finite number, not {params[key]!r}")
        layout = params.get("layout", "contiguous")
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, not {layout!r}")
        # A case whose inputs or answer do not fit its dtype would test nothing but the rounding to inf.
        dtype = DTYPES[params.get("dtype", "float64")]
        inputs = self.build_inputs(function, params)
        (answer,) = self.expected(function, inputs)
        check_range(params.get("dtype", "float64"), [*_flat(inputs.args), answer, *partials(function, inputs)],
                    torch.finfo(dtype).max / HEADROOM)

    def build_inputs(self, function: str, params: dict[str, Any]) -> Inputs:
        dtype_name = params.get("dtype", "float64")
        x, weight = generate(params, function)
        shards = list(params["shards"])
        lead = tuple(params.get("lead", []))
        dtype = DTYPES[dtype_name]
        if function == "column_parallel_linear":
            pieces = [piece.contiguous().to(dtype) for piece in weight.split(shards, dim=1)]
            args = [x.to(dtype), pieces]
            summary = (f"x {(*lead, weight.shape[0])}, {len(shards)} weight shards (d_in, d_out_i) with d_out_i "
                       f"{shards}, {dtype_name}")
        else:
            args = [[piece.contiguous().to(dtype) for piece in x.split(shards, dim=-1)],
                    [piece.contiguous().to(dtype) for piece in weight.split(shards, dim=0)]]
            summary = (f"{len(shards)} x shards {lead} + (d_in_i,) and weight shards (d_in_i, d_out) with d_in_i "
                       f"{shards}, d_out {weight.shape[1]}, {dtype_name}")
        layout = params.get("layout", "contiguous")
        if layout == "transposed":
            summary += ", every matrix stored with its last two dims swapped"
        return Inputs(args, summary, layout=layout)

    def expected(self, function: str, inputs: Inputs) -> tuple[torch.Tensor, ...]:
        # Trusted grader-side code: the whole product in float64, from the already rounded shards.
        first, weights = inputs.args
        if function == "column_parallel_linear":
            return (first.to(torch.float64) @ torch.cat([w.to(torch.float64) for w in weights], dim=1),)
        return (torch.cat([x.to(torch.float64) for x in first], dim=-1)
                @ torch.cat([w.to(torch.float64) for w in weights], dim=0),)

    def suites(self) -> dict[str, Any]:
        sys.path.insert(0, str(Path(__file__).parent))
        try:
            from mlp import ParallelMlpSuite
        finally:
            sys.path.remove(str(Path(__file__).parent))
        return {"ranks": ParallelMlpSuite(self, Path(__file__).parent)}


# ---------------------------------------------------------------- inputs

def generate(params: dict[str, Any], function: str) -> tuple[torch.Tensor, torch.Tensor]:
    """x (lead..., d_in) and the whole weight (d_in, d_out) in float64, before the split and the rounding."""
    shards = list(params["shards"])
    if function == "column_parallel_linear":
        d_in, d_out = params["d_in"], sum(shards)
    else:
        d_in, d_out = sum(shards), params["d_out"]
    generator = torch.Generator().manual_seed(int(params.get("seed", 0)))
    x = torch.randn(*params.get("lead", []), d_in, generator=generator, dtype=torch.float64)
    weight = torch.randn(d_in, d_out, generator=generator, dtype=torch.float64)
    x = x * float(params.get("scale", 1.0))
    weight = weight * float(params.get("weight_scale", 1.0 / math.sqrt(d_in)))
    return x, weight


def partials(function: str, inputs: Inputs) -> list[torch.Tensor]:
    """What a row-parallel sum adds up, one shard at a time, and its running totals (float64)."""
    if function != "row_parallel_linear":
        return []
    products = [x.to(torch.float64) @ w.to(torch.float64) for x, w in zip(*inputs.args)]
    running = [sum(products[:count]) for count in range(2, len(products) + 1)]
    return products + running


def check_range(dtype: str, tensors: list[torch.Tensor], limit: float) -> None:
    largest = max((float(t.to(torch.float64).abs().max()) for t in tensors if t.numel()), default=0.0)
    if not largest <= limit:
        raise ValueError(f"values reach {largest:g}, too close to {dtype}'s largest ({limit * HEADROOM:g}): "
                         f"lower scale or weight_scale")


def _flat(args: list[Any]) -> list[torch.Tensor]:
    found = []
    for arg in args:
        found += arg if isinstance(arg, list) else [arg]
    return found


# ---------------------------------------------------------------- validation helpers

def validate_shapes(function: str, params: dict[str, Any]) -> None:
    """ValueError unless lead, shards and the shared width describe tensors this exercise can judge."""
    lead = params.get("lead", [])
    if not (isinstance(lead, list) and all(_is_int(size) and size >= 1 for size in lead)):
        raise ValueError(f"lead must be a list of positive integers (possibly empty), not {lead!r}")
    shards = params.get("shards")
    if not (isinstance(shards, list) and shards and all(_is_int(size) and size >= 1 for size in shards)):
        raise ValueError(f"shards must list each shard's size, at least one positive integer, not {shards!r}")
    width = WIDTH[function]
    if width not in params:
        raise ValueError(f"{width} is required for {function}")
    if not (_is_int(params[width]) and params[width] >= 1):
        raise ValueError(f"{width} must be a positive integer, not {params[width]!r}")
    rows = math.prod(lead)
    column = function == "column_parallel_linear"
    x_width, out_width = (params[width], sum(shards)) if column else (sum(shards), params[width])
    for name, count in (("x", rows * x_width), ("the weight", x_width * out_width), ("the output", rows * out_width)):
        if count > MAX_ELEMENTS:
            raise ValueError(f"{name} would hold {count} elements; at most {MAX_ELEMENTS} per case")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
