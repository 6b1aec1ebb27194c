"""Correct variant: the ring is a functools.reduce of the merge over a lazy stream of stats."""

import functools
import math

import torch


def attention_chunk_stats(
    query: torch.Tensor, key_chunk: torch.Tensor, value_chunk: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Un-normalized output, softmax denominator and row max of one chunk."""
    scale = 1.0 / math.sqrt(query.shape[-1])
    scores = (query @ key_chunk.mT) * scale
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
    """Re-express both sides against their shared max, then add them."""
    new_max = torch.maximum(acc_max, chunk_max)
    acc_scale = torch.exp(acc_max - new_max)
    chunk_scale = torch.exp(chunk_max - new_max)
    return (
        torch.addcmul(chunk_output * chunk_scale, acc_output, acc_scale),
        torch.addcmul(chunk_sum * chunk_scale, acc_sum, acc_scale),
        new_max,
    )


def ring_attention(
    query: torch.Tensor,
    key_chunks: list[torch.Tensor],
    value_chunks: list[torch.Tensor],
) -> torch.Tensor:
    """Fold the merge over the chunks; each chunk's stats are computed only when needed."""
    stream = (attention_chunk_stats(query, k, v) for k, v in zip(key_chunks, value_chunks))
    output, total, _ = functools.reduce(lambda acc, chunk: merge_chunk_stats(*acc, *chunk), stream)
    return output / total
