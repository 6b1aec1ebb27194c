"""Correct variant: a two-pass context-parallel ring that keeps each chunk's normalized output and log-sum-exp.

This is the design of production context-parallel attention: each step produces a chunk's
softmax-normalized output and its log-sum-exp (lse); once every chunk is in, the lse values are
combined and each partial output is corrected by exp(its lse - the total lse). As in those
libraries, the lse and the corrections are kept in float32 (or wider) whatever the inputs' dtype.
It keeps one output and one lse per chunk (small), never a score block beyond the current
chunk's, so it stays within the memory rule.
"""

import math

import torch


def attention_chunk_stats(
    query: torch.Tensor, key_chunk: torch.Tensor, value_chunk: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Un-normalized output, softmax denominator and row max of one chunk."""
    scores = (query @ key_chunk.transpose(-2, -1)) / math.sqrt(query.shape[-1])
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
    """Both sides rescaled onto the larger max, then added."""
    new_max = torch.maximum(acc_max, chunk_max)
    acc_scale, chunk_scale = torch.exp(acc_max - new_max), torch.exp(chunk_max - new_max)
    return (acc_output * acc_scale + chunk_output * chunk_scale,
            acc_sum * acc_scale + chunk_sum * chunk_scale, new_max)


def ring_attention(
    query: torch.Tensor,
    key_chunks: list[torch.Tensor],
    value_chunks: list[torch.Tensor],
) -> torch.Tensor:
    """Pass one: each chunk's normalized output and lse. Pass two: correct each by its share of the total."""
    wide = torch.promote_types(query.dtype, torch.float32)
    partials, lses = [], []
    for key_chunk, value_chunk in zip(key_chunks, value_chunks):
        output, total, row_max = attention_chunk_stats(query, key_chunk, value_chunk)
        partials.append(output.to(wide) / total.to(wide))         # this chunk's attention, as if it were alone
        lses.append(row_max.to(wide) + torch.log(total.to(wide)))  # log of the chunk's softmax denominator
    lse = torch.logsumexp(torch.cat(lses, dim=-1), dim=-1, keepdim=True)
    result = torch.zeros_like(partials[0])
    for partial, chunk_lse in zip(partials, lses):
        result += partial * torch.exp(chunk_lse - lse)  # this chunk's share of the total denominator
    return result.to(query.dtype)
