"""Mistake: the ring averages each chunk's own softmax output instead of merging statistics."""

import math

import torch

TITLE = "Averages normalized chunk outputs"
RATIONALE = (
    "Each chunk is normalized on its own and the results are averaged with equal "
    "weight. Softmax over the whole sequence weights a chunk by how much of the "
    "total exp-mass it holds, so an equal-weight average is wrong as soon as there "
    "are two chunks with different masses."
)
HELP = (
    "Keep the un-normalized sums and outputs of every chunk and combine them with "
    "the max-aware merge, dividing only once by the merged sum."
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
    result = None
    for key_chunk, value_chunk in zip(key_chunks, value_chunks):
        chunk_output, chunk_sum, _ = attention_chunk_stats(query, key_chunk, value_chunk)
        normalized = chunk_output / chunk_sum
        result = normalized if result is None else result + normalized
    return result / len(key_chunks)
