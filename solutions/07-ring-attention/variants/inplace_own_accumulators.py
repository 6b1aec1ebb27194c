"""Correct variant: updates are in place (mul_/add_), but only on tensors this code created."""

import math

import torch


def attention_chunk_stats(
    query: torch.Tensor, key_chunk: torch.Tensor, value_chunk: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Un-normalized output, softmax denominator and row max of one chunk."""
    # The product is a fresh tensor, so scaling and exponentiating it in place is safe.
    scores = torch.matmul(query, key_chunk.transpose(-2, -1))
    scores.mul_(1.0 / math.sqrt(query.shape[-1]))
    chunk_max = scores.amax(dim=-1, keepdim=True)
    weights = scores.sub_(chunk_max).exp_()
    return weights @ value_chunk, weights.sum(dim=-1, keepdim=True), chunk_max


def merge_chunk_stats(
    acc_output: torch.Tensor,
    acc_sum: torch.Tensor,
    acc_max: torch.Tensor,
    chunk_output: torch.Tensor,
    chunk_sum: torch.Tensor,
    chunk_max: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Clone the accumulator first, then rescale and add into the clones in place."""
    new_max = torch.maximum(acc_max, chunk_max)
    acc_scale = torch.exp(acc_max - new_max)
    chunk_scale = torch.exp(chunk_max - new_max)
    output = acc_output.clone()
    output.mul_(acc_scale).add_(chunk_output * chunk_scale)
    total = acc_sum.clone()
    total.mul_(acc_scale).add_(chunk_sum * chunk_scale)
    return output, total, new_max


def ring_attention(
    query: torch.Tensor,
    key_chunks: list[torch.Tensor],
    value_chunks: list[torch.Tensor],
) -> torch.Tensor:
    """Keep one set of accumulators, owned by this function, and update it in place."""
    output, total, running_max = attention_chunk_stats(query, key_chunks[0], value_chunks[0])
    for key_chunk, value_chunk in zip(key_chunks[1:], value_chunks[1:]):
        chunk_output, chunk_sum, chunk_max = attention_chunk_stats(query, key_chunk, value_chunk)
        new_max = torch.maximum(running_max, chunk_max)
        acc_scale = running_max.sub_(new_max).exp_()
        chunk_scale = chunk_max.sub_(new_max).exp_()
        output.mul_(acc_scale).add_(chunk_output.mul_(chunk_scale))
        total.mul_(acc_scale).add_(chunk_sum.mul_(chunk_scale))
        running_max = new_max
    return output.div_(total)
