"""Correct variant: chunks are visited from the middle one on, as a ring rank would see them."""

import math

import torch


def attention_chunk_stats(
    query: torch.Tensor, key_chunk: torch.Tensor, value_chunk: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Un-normalized output, softmax denominator and row max of one chunk."""
    scale = 1.0 / math.sqrt(query.shape[-1])
    scores = (query @ key_chunk.transpose(-2, -1)) * scale
    chunk_max = scores.amax(dim=-1, keepdim=True)
    weights = torch.exp(scores - chunk_max)
    return weights @ value_chunk, weights.sum(dim=-1, keepdim=True), chunk_max


def merge_chunk_stats(
    acc_output: torch.Tensor,
    acc_sum: torch.Tensor,
    acc_max: torch.Tensor,
    chunk_output: torch.Tensor,
    chunk_sum: torch.Tensor,
    chunk_max: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Re-express both sides against their shared max, then add them (the merge commutes)."""
    new_max = torch.maximum(acc_max, chunk_max)
    acc_scale = torch.exp(acc_max - new_max)
    chunk_scale = torch.exp(chunk_max - new_max)
    output = acc_output * acc_scale + chunk_output * chunk_scale
    total = acc_sum * acc_scale + chunk_sum * chunk_scale
    return output, total, new_max


def ring_attention(
    query: torch.Tensor,
    key_chunks: list[torch.Tensor],
    value_chunks: list[torch.Tensor],
) -> torch.Tensor:
    """Rank r of n holds chunk r first, then receives r+1, r+2, ... wrapping around the ring."""
    n = len(key_chunks)
    rank = n // 2
    order = [(rank + step) % n for step in range(n)]
    output, total, running_max = attention_chunk_stats(
        query, key_chunks[order[0]], value_chunks[order[0]]
    )
    for index in order[1:]:
        stats = attention_chunk_stats(query, key_chunks[index], value_chunks[index])
        output, total, running_max = merge_chunk_stats(output, total, running_max, *stats)
    return output / total
