"""Correct variant: the ring carries (normalized output, log-sum-exp) in at least float32."""

import math

import torch


def _work_dtype(dtype: torch.dtype) -> torch.dtype:
    """float32 for half types, the input dtype otherwise: lse needs more than 8 mantissa bits."""
    return torch.promote_types(dtype, torch.float32)


def _chunk_lse(
    query: torch.Tensor, key_chunk: torch.Tensor, value_chunk: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(softmax-normalized output, lse, row max) of one chunk, in the work dtype."""
    work = _work_dtype(query.dtype)
    q, k, v = query.to(work), key_chunk.to(work), value_chunk.to(work)
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    lse = torch.logsumexp(scores, dim=-1, keepdim=True)
    return torch.exp(scores - lse) @ v, lse, scores.amax(dim=-1, keepdim=True)


def _merge_lse(
    out_a: torch.Tensor, lse_a: torch.Tensor, out_b: torch.Tensor, lse_b: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Merge two normalized outputs by their shares exp(lse_side - lse_total) of the mass."""
    lse = torch.logaddexp(lse_a, lse_b)
    return out_a * torch.exp(lse_a - lse) + out_b * torch.exp(lse_b - lse), lse


def _to_contract(
    out: torch.Tensor, rel_lse: torch.Tensor, row_max: torch.Tensor, dtype: torch.dtype
):
    """(normalized output, lse - row_max) -> the contract's (output, sum, max)."""
    total = torch.exp(rel_lse)
    return (out * total).to(dtype), total.to(dtype), row_max.to(dtype)


def attention_chunk_stats(
    query: torch.Tensor, key_chunk: torch.Tensor, value_chunk: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Un-normalized output, softmax denominator and row max of one chunk, via its lse."""
    out, lse, row_max = _chunk_lse(query, key_chunk, value_chunk)
    return _to_contract(out, lse - row_max, row_max, query.dtype)


def merge_chunk_stats(
    acc_output: torch.Tensor,
    acc_sum: torch.Tensor,
    acc_max: torch.Tensor,
    chunk_output: torch.Tensor,
    chunk_sum: torch.Tensor,
    chunk_max: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Convert both sides to (normalized output, lse), merge, and convert back."""
    work = _work_dtype(acc_output.dtype)
    new_max = torch.maximum(acc_max, chunk_max).to(work)
    pairs = ((acc_output, acc_sum, acc_max), (chunk_output, chunk_sum, chunk_max))
    sides = []
    for output, total, row_max in pairs:
        output, total, row_max = output.to(work), total.to(work), row_max.to(work)
        # Each side's lse, measured from the shared max so that no large offset eats digits.
        sides.extend((output / total, (row_max - new_max) + torch.log(total)))
    out, rel_lse = _merge_lse(*sides)
    return _to_contract(out, rel_lse, new_max, acc_output.dtype)


def ring_attention(
    query: torch.Tensor,
    key_chunks: list[torch.Tensor],
    value_chunks: list[torch.Tensor],
) -> torch.Tensor:
    """Carry the normalized output and its lse around the ring; no final division is needed."""
    out, lse, _ = _chunk_lse(query, key_chunks[0], value_chunks[0])
    for key_chunk, value_chunk in zip(key_chunks[1:], value_chunks[1:]):
        chunk_out, chunk_lse, _ = _chunk_lse(query, key_chunk, value_chunk)
        out, lse = _merge_lse(out, lse, chunk_out, chunk_lse)
    return out.to(query.dtype)
