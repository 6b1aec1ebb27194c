"""Mistake: the ring keeps its running statistics in bfloat16 and casts back at the end."""

import math

import torch

TITLE = "Accumulates the running state in bfloat16"
RATIONALE = (
    "The running output, sum and max are stored in bfloat16, which keeps only about "
    "three significant digits. The result has the right dtype but loses far more "
    "precision than a float32 or float64 input allows."
)
HELP = (
    "Keep the running state in the query's dtype; do not cast to a lower precision "
    "to save memory."
)


def attention_chunk_stats(
    query: torch.Tensor, key_chunk: torch.Tensor, value_chunk: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Un-normalized output, softmax denominator and row max of one chunk."""
    scale = 1.0 / math.sqrt(query.shape[-1])
    scores = (query @ key_chunk.transpose(-2, -1)) * scale
    chunk_max = scores.amax(dim=-1, keepdim=True)
    weights = torch.exp(scores - chunk_max)
    chunk_sum = weights.sum(dim=-1, keepdim=True)
    chunk_output = weights @ value_chunk
    return chunk_output, chunk_sum, chunk_max


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
    output = acc_output * acc_scale + chunk_output * chunk_scale
    total = acc_sum * acc_scale + chunk_sum * chunk_scale
    return output, total, new_max


def ring_attention(
    query: torch.Tensor,
    key_chunks: list[torch.Tensor],
    value_chunks: list[torch.Tensor],
) -> torch.Tensor:
    """Visit the chunks one at a time, merging as they arrive, then normalize once."""
    stats = attention_chunk_stats(query, key_chunks[0], value_chunks[0])
    output, total, running_max = (t.to(torch.bfloat16) for t in stats)
    for key_chunk, value_chunk in zip(key_chunks[1:], value_chunks[1:]):
        stats = attention_chunk_stats(query, key_chunk, value_chunk)
        stats = [t.to(torch.bfloat16) for t in stats]
        output, total, running_max = merge_chunk_stats(output, total, running_max, *stats)
    return (output / total).to(query.dtype)
