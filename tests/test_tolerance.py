"""The per-dtype error bounds: exact semantics, NaN, shapes, and what half precision allows."""

from __future__ import annotations

import math

import torch
from conftest import ring_checker

from grader.channel.wire import WireTensor
from grader.grading import compare


def judged(got: torch.Tensor, want: torch.Tensor, dtype: torch.dtype, base=None) -> compare.Verdict:
    item = {"type": "tensor", "value": WireTensor(got, "cpu")}
    return compare.compare_tensor("output", item, want, compare.OutputType(dtype, "cpu"), base)


def test_error_equal_to_the_bound_passes_and_just_above_fails():
    want = torch.zeros(4, dtype=torch.float64)
    want[0] = 1.0
    bound = compare.error_bound(want, torch.float64, None)
    got = want.clone()
    got[1] = bound
    assert judged(got, want, torch.float64).passed
    got[1] = math.nextafter(bound, 1.0)
    assert not judged(got, want, torch.float64).passed


def test_nan_never_passes_even_where_the_bound_is_infinite():
    want = torch.ones(3, dtype=torch.float64)
    got = want.clone()
    got[2] = float("nan")
    verdict = judged(got, want, torch.float64)
    assert not verdict.passed and "NaN" in verdict.message
    assert not judged(got.to(torch.float16), want, torch.float16, base=torch.full((3,), math.inf)).passed


def test_shape_mismatch_names_keepdim_and_nothing_broadcasts():
    want = torch.ones(4, 1, dtype=torch.float64)
    verdict = judged(torch.ones(4, dtype=torch.float64), want, torch.float64)
    assert not verdict.passed and "keepdim=True" in verdict.message
    # (1, 3) would broadcast against (3, 3) in allclose; here it is a wrong shape.
    verdict = judged(torch.ones(1, 3, dtype=torch.float64), torch.ones(3, 3, dtype=torch.float64), torch.float64)
    assert not verdict.passed and "shape (1, 3)" in verdict.message


def bf16_state_ring(query, key_chunks, value_chunks):
    """The ring with its running state kept in bfloat16: float32 inputs, float32 output."""
    output = total = running = None
    for keys, values in zip(key_chunks, value_chunks):
        scores = query @ keys.transpose(-2, -1) / math.sqrt(query.shape[-1])
        chunk_max = scores.amax(-1, keepdim=True)
        weights = torch.exp(scores - chunk_max)
        stats = [t.to(torch.bfloat16) for t in (weights @ values, weights.sum(-1, keepdim=True), chunk_max)]
        if output is None:
            output, total, running = stats
            continue
        new = torch.maximum(running, stats[2])
        a, c = torch.exp(running - new), torch.exp(stats[2] - new)
        output, total, running = output * a + stats[0] * c, total * a + stats[1] * c, new
    return (output / total).to(query.dtype)


def test_bfloat16_accumulation_fails_float32_cases():
    for chunks in ([5, 1, 6], {"total": 64, "size": 1}):
        checker = ring_checker()
        inputs = checker.build_inputs("ring_attention", {"lq": 4, "d": 8, "chunks": chunks, "dtype": "float32"})
        (want,) = checker.expected("ring_attention", inputs)
        assert not judged(bf16_state_ring(*inputs.args), want, torch.float32).passed


def test_half_precision_bound_comes_from_the_reference_on_the_same_split():
    params = {"lq": 4, "d": 16, "dv": 8, "chunks": {"total": 256, "size": 1}, "dtype": "bfloat16"}
    checker = ring_checker()
    inputs = checker.build_inputs("ring_attention", params)
    (want,) = checker.expected("ring_attention", inputs)
    from importlib.util import module_from_spec, spec_from_file_location
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "solutions" / "07-ring-attention" / "ring_attention.py"
    spec = spec_from_file_location("reference_for_tolerance", path)
    reference = module_from_spec(spec)
    spec.loader.exec_module(reference)
    (base,) = checker.baseline("ring_attention", inputs, reference)
    assert judged(base, want, torch.bfloat16, base).passed
    # A float64 computation rounded once is far more accurate than the reference, so it passes too.
    assert judged(want.to(torch.bfloat16), want, torch.bfloat16, base).passed
    # Twice the reference's error plus rounding, and not much more: a much worse answer fails.
    worse = (want + 8 * (base.double() - want).abs().max()).to(torch.bfloat16)
    assert not judged(worse, want, torch.bfloat16, base).passed
