"""Mistake: the ring concatenates every key and value chunk and attends over them at once."""

import math

import torch

TITLE = "Concatenates all keys and values"
RATIONALE = (
    "The values are right, but concatenating every chunk builds the full key and "
    "value sequences and the full score matrix on one device, which is exactly what "
    "ring attention exists to avoid."
)
HELP = (
    "Process one key/value chunk at a time: compute its statistics, merge them into "
    "the running state, and only then move on to the next chunk."
)
VIOLATES = "materialization"


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
    all_keys = torch.cat(key_chunks, dim=-2)
    all_values = torch.cat(value_chunks, dim=-2)
    output, total, _ = attention_chunk_stats(query, all_keys, all_values)
    return output / total
