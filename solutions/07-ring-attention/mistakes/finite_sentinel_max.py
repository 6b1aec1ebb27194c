"""Mistake: the running max starts at the finite sentinel -1e4 instead of -inf."""

import math

import torch

TITLE = "Starts the running max at a finite sentinel (-1e4)"
RATIONALE = (
    "The running max starts at -1e4, which is only a safe 'minus infinity' while "
    "every score is above it. When all of a row's scores are far below -1e4, each "
    "chunk is rescaled by exp(chunk_max + 1e4), which underflows to 0, and the row "
    "becomes 0/0."
)
HELP = (
    "Do not pick a 'small enough' number: seed the running max with the first "
    "chunk's max, or use -inf and handle the -inf minus -inf case."
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
    batch_rows = query.shape[:-1]
    output = query.new_zeros(*batch_rows, value_chunks[0].shape[-1])
    total = query.new_zeros(*batch_rows, 1)
    running_max = query.new_full((*batch_rows, 1), -1e4)
    for key_chunk, value_chunk in zip(key_chunks, value_chunks):
        stats = attention_chunk_stats(query, key_chunk, value_chunk)
        output, total, running_max = merge_chunk_stats(output, total, running_max, *stats)
    return output / total
