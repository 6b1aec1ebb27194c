"""Correct variant: all arithmetic runs in float64; results are cast back to the input dtype."""

import math

import torch


def _wide(*tensors: torch.Tensor) -> list[torch.Tensor]:
    return [t.to(torch.float64) for t in tensors]


def attention_chunk_stats(
    query: torch.Tensor, key_chunk: torch.Tensor, value_chunk: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Un-normalized output, softmax denominator and row max of one chunk."""
    q, k, v = _wide(query, key_chunk, value_chunk)
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    chunk_max = scores.amax(dim=-1, keepdim=True)
    weights = torch.exp(scores - chunk_max)
    stats = (weights @ v, weights.sum(dim=-1, keepdim=True), chunk_max)
    return tuple(t.to(query.dtype) for t in stats)


def merge_chunk_stats(
    acc_output: torch.Tensor,
    acc_sum: torch.Tensor,
    acc_max: torch.Tensor,
    chunk_output: torch.Tensor,
    chunk_sum: torch.Tensor,
    chunk_max: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Re-express both sides against their shared max, then add them, in float64."""
    a_out, a_sum, a_max, c_out, c_sum, c_max = _wide(
        acc_output, acc_sum, acc_max, chunk_output, chunk_sum, chunk_max
    )
    new_max = torch.maximum(a_max, c_max)
    a_scale = torch.exp(a_max - new_max)
    c_scale = torch.exp(c_max - new_max)
    merged = (a_out * a_scale + c_out * c_scale, a_sum * a_scale + c_sum * c_scale, new_max)
    return tuple(t.to(acc_output.dtype) for t in merged)


def _stats64(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor):
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    row_max = scores.amax(dim=-1, keepdim=True)
    weights = torch.exp(scores - row_max)
    return weights @ v, weights.sum(dim=-1, keepdim=True), row_max


def ring_attention(
    query: torch.Tensor,
    key_chunks: list[torch.Tensor],
    value_chunks: list[torch.Tensor],
) -> torch.Tensor:
    """The running state stays in float64 for the whole ring; one cast at the very end."""
    (q,) = _wide(query)
    output, total, running_max = _stats64(q, *_wide(key_chunks[0], value_chunks[0]))
    for key_chunk, value_chunk in zip(key_chunks[1:], value_chunks[1:]):
        chunk_output, chunk_sum, chunk_max = _stats64(q, *_wide(key_chunk, value_chunk))
        new_max = torch.maximum(running_max, chunk_max)
        acc_scale = torch.exp(running_max - new_max)
        chunk_scale = torch.exp(chunk_max - new_max)
        output = output * acc_scale + chunk_output * chunk_scale
        total = total * acc_scale + chunk_sum * chunk_scale
        running_max = new_max
    return (output / total).to(query.dtype)
