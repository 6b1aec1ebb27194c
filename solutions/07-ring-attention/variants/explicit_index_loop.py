"""Correct variant: an explicit index loop over the ring, chunk 0 seeding the state inside it."""

import math

import torch


def attention_chunk_stats(
    query: torch.Tensor, key_chunk: torch.Tensor, value_chunk: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Un-normalized output, softmax denominator and row max of one chunk."""
    inv_sqrt_d = 1.0 / math.sqrt(key_chunk.shape[-1])
    scores = torch.matmul(query, key_chunk.transpose(-1, -2)) * inv_sqrt_d
    row_max = torch.max(scores, dim=-1, keepdim=True).values
    weights = torch.exp(scores - row_max)
    row_sum = torch.sum(weights, dim=-1, keepdim=True)
    return torch.matmul(weights, value_chunk), row_sum, row_max


def merge_chunk_stats(
    acc_output: torch.Tensor,
    acc_sum: torch.Tensor,
    acc_max: torch.Tensor,
    chunk_output: torch.Tensor,
    chunk_sum: torch.Tensor,
    chunk_max: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Re-express both sides against their shared max, then add them."""
    shared_max = torch.max(acc_max, chunk_max)
    alpha = torch.exp(acc_max - shared_max)
    beta = torch.exp(chunk_max - shared_max)
    return (
        alpha * acc_output + beta * chunk_output,
        alpha * acc_sum + beta * chunk_sum,
        shared_max,
    )


def ring_attention(
    query: torch.Tensor,
    key_chunks: list[torch.Tensor],
    value_chunks: list[torch.Tensor],
) -> torch.Tensor:
    """Step i of the ring handles chunk i; step 0 seeds the running state."""
    state = None
    for step in range(len(key_chunks)):
        stats = attention_chunk_stats(query, key_chunks[step], value_chunks[step])
        if step == 0:
            state = stats
        else:
            state = merge_chunk_stats(*state, *stats)
    output, total, _ = state
    return output / total
