"""Exercise 01's checker: inputs and float64 answers for softmax(x, dim).

Loaded by the grader through grader/course/checker.py's interface. A case describes one tensor `x` and the
dimension `dim` to normalize along:

    shape    list of positive sizes (at least one dimension); or `values` instead
    values   an explicit nested list of numbers, for tiny cases written by hand
    dim      the dimension to normalize along: -rank <= dim < rank (required)
    dtype    float64 (default), float32, bfloat16 or float16
    seed     the random generator's seed (random inputs are standard normal)
    scale    multiplies x (default 1; 0 makes every entry equal to `shift`)
    shift    added to x after scaling (default 0): scores near +1000 or -1000
    ramp     {dim: d, step: s}: adds s * k to every entry at index k along dimension d, so that
             slices sit at very different heights (rows far above others, or a rising row)
    layout   contiguous (default) or transposed: x arrives stored with its last two dims swapped

Inputs are made in float64 (values * scale + shift + ramp), then rounded once to the case dtype;
the expected answer is the float64 softmax of those rounded inputs.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from grader.api import DTYPES, Checker, Function, Inputs

KEYS = {"shape", "values", "dim", "dtype", "seed", "scale", "shift", "ramp", "layout"}
LAYOUTS = ("contiguous", "transposed")
MAX_ELEMENTS = 1 << 22  # a case this size already takes a noticeable share of a second to judge


class StableSoftmaxChecker(Checker):
    """softmax(x, dim): one tensor in, one tensor of the same shape, dtype and device out."""

    functions = {"softmax": Function(arguments=("x", "dim"), outputs=("output",), keys=KEYS)}
    rule_reasons = {
        "inputs-modified": ("compute x - m as a new tensor rather than x.sub_(m) or x -= m, which overwrite "
                            "the caller's x"),
        "forbidden": ("the point is to write the softmax yourself, and torch.softmax, F.softmax, Tensor.softmax, "
                      "log_softmax(...).exp() and scaled_dot_product_attention all run it. amax, exp, sum and "
                      "torch.logsumexp are allowed"),
    }

    def validate(self, function: str, params: dict[str, Any]) -> None:
        super().validate(function, params)
        if params.get("audit"):
            raise ValueError("this exercise has no memory rule: audit is not used here")
        rank = _check_shape(params)
        if "dim" not in params:
            raise ValueError("dim is required: the dimension to normalize along")
        _check_dim("dim", params["dim"], rank)
        if "seed" in params and not _is_int(params["seed"]):
            raise ValueError(f"seed must be an integer, not {params['seed']!r}")
        for key in ("scale", "shift"):
            if key in params and not _is_number(params[key]):
                raise ValueError(f"{key} must be a finite number, not {params[key]!r}")
        if "ramp" in params:
            ramp = params["ramp"]
            if not isinstance(ramp, dict) or set(ramp) != {"dim", "step"}:
                raise ValueError(f"ramp must be a mapping {{dim: D, step: S}}, not {ramp!r}")
            _check_dim("ramp dim", ramp["dim"], rank)
            if not _is_number(ramp["step"]):
                raise ValueError(f"ramp step must be a finite number, not {ramp['step']!r}")
        layout = params.get("layout", "contiguous")
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, not {layout!r}")
        if layout == "transposed" and rank < 2:
            raise ValueError("layout transposed needs at least 2 dimensions (it swaps the last two)")
        # Scores that do not fit the case dtype would test nothing but the rounding to inf.
        x = _generate(params)
        dtype = params.get("dtype", "float64")
        if not torch.isfinite(x.to(DTYPES[dtype])).all():
            raise ValueError(f"some inputs are too large for {dtype} (largest magnitude {float(x.abs().max()):g}): "
                             f"lower shift, scale or ramp")

    def build_inputs(self, function: str, params: dict[str, Any]) -> Inputs:
        dtype = params.get("dtype", "float64")
        x = _generate(params).to(DTYPES[dtype])
        dim = params["dim"]
        summary = f"x {tuple(x.shape)}, dim {dim}, {dtype}"
        if "values" in params:
            summary += ", values given by hand"
        if params.get("layout", "contiguous") == "transposed":
            summary += ", non-contiguous (stored with its last two dims swapped)"
        return Inputs([x, dim], summary, layout=params.get("layout", "contiguous"))

    def expected(self, function: str, inputs: Inputs) -> tuple[torch.Tensor, ...]:
        # Trusted grader-side code: torch's own softmax, in float64, on the already rounded inputs.
        x, dim = inputs.args
        return (torch.softmax(x.to(torch.float64), dim=dim),)

    def output_shapes(self, function: str, inputs: Inputs) -> tuple[tuple[int, ...], ...]:
        return (tuple(inputs.args[0].shape),)  # the softmax has x's shape


# ---------------------------------------------------------------- inputs

def _generate(params: dict[str, Any]) -> torch.Tensor:
    """x in float64: the given values or standard normal draws, times scale, plus shift and ramp."""
    if "values" in params:
        x = torch.tensor(params["values"], dtype=torch.float64)
    else:
        generator = torch.Generator().manual_seed(int(params.get("seed", 0)))
        x = torch.randn(*params["shape"], generator=generator, dtype=torch.float64)
    x = x * float(params.get("scale", 1.0)) + float(params.get("shift", 0.0))
    ramp = params.get("ramp")
    if ramp is not None:
        dim = ramp["dim"] % x.dim()
        steps = torch.arange(x.shape[dim], dtype=torch.float64) * float(ramp["step"])
        x = x + steps.reshape([-1 if axis == dim else 1 for axis in range(x.dim())])
    return x


# ---------------------------------------------------------------- validation helpers

def _check_shape(params: dict[str, Any]) -> int:
    """The rank of the case's x; ValueError unless exactly one of shape and values describes it well."""
    if ("shape" in params) == ("values" in params):
        raise ValueError("give exactly one of shape (random inputs) and values (inputs written out)")
    if "shape" in params:
        shape = params["shape"]
        if not (isinstance(shape, list) and shape and all(_is_int(size) and size >= 1 for size in shape)):
            raise ValueError(f"shape must be a non-empty list of positive integers, not {shape!r}")
        sizes = shape
    else:
        sizes = _nested_shape(params["values"])
    if math.prod(sizes) > MAX_ELEMENTS:
        raise ValueError(f"x would hold {math.prod(sizes)} elements; at most {MAX_ELEMENTS} per case")
    return len(sizes)


def _nested_shape(values: Any) -> list[int]:
    """The shape of a rectangular, non-empty nested list of finite numbers (at least one dimension)."""
    if not isinstance(values, list) or not values:
        raise ValueError("values must be a non-empty nested list of numbers, such as [[1.0, 2.0], [3.0, 4.0]]")
    if all(_is_number(item) for item in values):
        return [len(values)]
    odd = next((item for item in values if not isinstance(item, list) and not _is_number(item)), None)
    if odd is not None:
        raise ValueError(f"values holds {odd!r}, which is not a finite number")
    if not all(isinstance(item, list) for item in values):
        raise ValueError("values mixes numbers and lists at one level: it must be rectangular")
    inner = [_nested_shape(item) for item in values]
    if any(shape != inner[0] for shape in inner):
        raise ValueError("values is not rectangular: its rows have different shapes")
    return [len(values), *inner[0]]


def _check_dim(name: str, dim: Any, rank: int) -> None:
    if not _is_int(dim):
        raise ValueError(f"{name} must be an integer, not {dim!r}")
    if not -rank <= dim < rank:
        raise ValueError(f"{name} {dim} is out of range for a tensor of {rank} dimension"
                         f"{'s' if rank != 1 else ''} (allowed: {-rank} to {rank - 1})")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
