"""Tensor comparison: exact shape, dtype and device, no NaN or Inf, and a per-dtype error bound."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from grader.channel.wire import WireTensor, dtype_name
from grader.course.checker import Tolerance

DEFAULT = Tolerance()
TINY = 1e-30


@dataclass
class Verdict:
    """Whether the outputs matched, a one-line message, detail lines for visible cases, and for hidden ones
    a message in words the grader chose alone (no shape, number or position the learner's code controls)."""

    passed: bool
    message: str = ""
    details: list[str] = field(default_factory=list)
    hidden_message: str = ""

    def __post_init__(self) -> None:
        if not self.passed and not self.hidden_message:
            self.hidden_message = "an output is wrong"


def describe_value(returned: dict[str, Any]) -> str:
    """How a returned value that is not a tensor looks, for a message."""
    if returned.get("type") == "sequence":
        return f"a {returned['kind']} of {len(returned['items'])}"
    return returned.get("name", "something else")


@dataclass(frozen=True)
class OutputType:
    """The dtype and device every output must have, and what they are taken from, for messages ("query")."""

    dtype: torch.dtype
    device: str
    taken_from: str = "the inputs"


def compare_outputs(returned: dict[str, Any], names: tuple[str, ...], expected: tuple[torch.Tensor, ...],
                    wanted: OutputType, baseline: tuple[torch.Tensor, ...] | None = None,
                    tolerance: Tolerance = DEFAULT) -> Verdict:
    """Judge what the learner's function returned against the float64 expected values.

    `wanted` is the dtype and device every output must have; `tolerance` is the exercise's (or the case's).
    """
    if len(names) == 1:
        items = [returned]
        if returned.get("type") == "sequence":
            return Verdict(False, f"returned {describe_value(returned)} where one tensor was expected",
                           hidden_message="returned a sequence where one tensor was expected")
    else:
        if returned.get("type") != "sequence":
            return Verdict(False, f"returned {describe_value(returned)}; expected a tuple of {len(names)} tensors "
                                  f"({', '.join(names)})",
                           hidden_message=f"did not return a tuple of {len(names)} tensors ({', '.join(names)})")
        items = returned["items"]
        if len(items) != len(names):
            return Verdict(False, f"returned {len(items)} values; expected {len(names)} ({', '.join(names)})",
                           hidden_message=f"did not return {len(names)} values ({', '.join(names)})")
    for index, (name, item, want) in enumerate(zip(names, items, expected)):
        base = baseline[index] if baseline is not None else None
        verdict = compare_tensor(name, item, want, wanted, base, tolerance)
        if not verdict.passed:
            return verdict
    return Verdict(True)


def compare_tensor(name: str, item: dict[str, Any], want: torch.Tensor, wanted: OutputType,
                   base: torch.Tensor | None = None, tolerance: Tolerance = DEFAULT) -> Verdict:
    """One output: type, shape, dtype, device, finiteness, then the error bound."""
    dtype, device, dtype_from = wanted.dtype, wanted.device, wanted.taken_from
    if item.get("type") == "omitted":
        shape = tuple(item["shape"])
        if shape != tuple(want.shape):
            return Verdict(False, f"{name} has shape {shape}, expected {tuple(want.shape)}",
                           hidden_message=f"{name} has the wrong shape")
        return Verdict(False, f"{name} ({item['dtype']}, shape {shape}) could not be sent back: too large",
                       hidden_message=f"{name} could not be sent back: too large")
    if item.get("type") != "tensor":
        return Verdict(False, f"{name} is {describe_value(item)}, not a torch.Tensor",
                       hidden_message=f"{name} is not a torch.Tensor")
    wire: WireTensor = item["value"]
    got = wire.tensor
    if tuple(got.shape) != tuple(want.shape):
        hint = ""
        if tuple(got.shape) == tuple(want.shape[:-1]) and want.shape[-1] == 1:
            hint = " (the reduced dimension was dropped: keep it with keepdim=True)"
        return Verdict(False, f"{name} has shape {tuple(got.shape)}, expected {tuple(want.shape)}{hint}",
                       hidden_message=f"{name} has the wrong shape" + (" (keepdim?)" if hint else ""))
    if got.dtype != dtype:
        return Verdict(False, f"{name} has dtype {dtype_name(got.dtype)}, expected {dtype_name(dtype)} "
                              f"(the dtype of {dtype_from})",
                       hidden_message=f"{name} has the wrong dtype (it must keep the dtype of {dtype_from})")
    where = item.get("device", wire.device)
    if where.split(":")[0] != device:
        return Verdict(False, f"{name} is on {where}, expected {device} (the device of {dtype_from})",
                       hidden_message=f"{name} is on the wrong device")
    wide = got.to(torch.float64)
    exact = torch.isfinite(want)
    if not bool(exact.all()):  # a case whose answer holds NaN or Inf (nonfinite_answer): the same there, exactly
        same = (torch.isnan(wide) & torch.isnan(want)) | (wide == want) | exact
        if not bool(same.all()):
            first = _index(torch.nonzero(~same)[0])
            return Verdict(False, f"{name} is wrong at {first}: got {float(wide[tuple(first)]):.6g}, expected "
                                  f"{float(want[tuple(first)]):.6g}",
                           hidden_message=f"{name} is wrong where the answer is NaN or Inf")
        wide, want = torch.where(exact, wide, 0.0), torch.where(exact, want, 0.0)
        base = None if base is None else torch.where(exact, base, torch.zeros((), dtype=base.dtype))
    nan, inf = int(torch.isnan(wide).sum()), int(torch.isinf(wide).sum())
    if nan or inf:
        first = _index(torch.nonzero(~torch.isfinite(wide))[0])
        return Verdict(False, f"{name} has {nan} NaN and {inf} Inf values (first at {first})",
                       ["NaN or Inf never passes: look for exp of a large number, or 0/0 and inf - inf."],
                       hidden_message=f"{name} holds NaN or Inf")
    error = (wide - want).abs()
    worst = float(error.max()) if error.numel() else 0.0
    bound = error_bound(want, dtype, base, tolerance)
    if worst <= bound:
        return Verdict(True)
    where = _index(torch.nonzero(error == worst)[0])
    scale = float(want.abs().max())
    details = [
        f"{name}: largest error {worst:.3g} at {where}: got {float(wide[tuple(where)]):.6g}, "
        f"expected {float(want[tuple(where)]):.6g}",
        f"{name}: error relative to its largest value {worst / max(scale, TINY):.3g}; allowed {bound:.3g} "
        f"absolute ({_rule(dtype, tolerance)})",
        f"{name}: {int((error > bound).sum())} of {error.numel()} values are outside the bound",
    ]
    return Verdict(False, f"{name} is wrong: largest error {worst:.3g} at {where} (allowed {bound:.3g})", details,
                   hidden_message=f"{name} is wrong: outside the allowed error")


def _relative(dtype: torch.dtype, tolerance: Tolerance) -> float | None:
    return {torch.float64: tolerance.float64, torch.float32: tolerance.float32}.get(dtype)


def error_bound(want: torch.Tensor, dtype: torch.dtype, base: torch.Tensor | None,
                tolerance: Tolerance = DEFAULT) -> float:
    """The largest absolute error allowed for one output tensor."""
    scale = float(want.abs().max()) if want.numel() else 0.0
    relative = _relative(dtype, tolerance)
    if relative is not None or base is None:
        return (relative if relative is not None else 1e-2) * max(scale, TINY)
    # Half precision: a multiple of the error of the reference solution run in the same dtype on the
    # same inputs, plus the rounding of the exact answer into that dtype and one unit in the last place.
    base_error = float((base.to(torch.float64) - want).abs().max())
    rounding = float((want.to(dtype).to(torch.float64) - want).abs().max())
    return tolerance.half_factor * (base_error + rounding) + torch.finfo(dtype).eps * scale


def _rule(dtype: torch.dtype, tolerance: Tolerance) -> str:
    relative = _relative(dtype, tolerance)
    if relative is not None:
        return f"{relative:g} of the largest expected value for {dtype_name(dtype)}"
    return f"{tolerance.half_factor:g} times the reference solution's own {dtype_name(dtype)} error, plus rounding"


def _index(position: torch.Tensor) -> list[int]:
    return [int(i) for i in position.tolist()]
