"""Correct variant: the running state starts empty (max -inf, sum 0); every chunk is merged."""

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
    """Merge against the shared max; an empty side (max -inf) contributes exactly nothing."""
    new_max = torch.maximum(acc_max, chunk_max)
    # If both sides are still empty, new_max is -inf and -inf - -inf would be NaN:
    # shift by 0 there instead, so that both factors are exp(-inf) = 0.
    shift = torch.where(torch.isneginf(new_max), torch.zeros_like(new_max), new_max)
    acc_scale = torch.exp(acc_max - shift)
    chunk_scale = torch.exp(chunk_max - shift)
    output = acc_output * acc_scale + chunk_output * chunk_scale
    total = acc_sum * acc_scale + chunk_sum * chunk_scale
    return output, total, new_max


def ring_attention(
    query: torch.Tensor,
    key_chunks: list[torch.Tensor],
    value_chunks: list[torch.Tensor],
) -> torch.Tensor:
    """Start from the empty state and merge every chunk, the first one included."""
    rows = query.shape[:-1]
    output = query.new_zeros(*rows, value_chunks[0].shape[-1])
    total = query.new_zeros(*rows, 1)
    running_max = query.new_full((*rows, 1), float("-inf"))
    for key_chunk, value_chunk in zip(key_chunks, value_chunks):
        stats = attention_chunk_stats(query, key_chunk, value_chunk)
        output, total, running_max = merge_chunk_stats(output, total, running_max, *stats)
    return output / total
