"""Mistake: the ring stores every chunk's score block, then finds a global max in a second pass."""

import math

import torch

TITLE = "Keeps every chunk's score block alive"
RATIONALE = (
    "The values are right, but every chunk's score block is kept in a list until "
    "the global max is known, so peak memory holds the scores against every key at "
    "once, as if the full score matrix had been built."
)
HELP = (
    "Use the running max instead of a global one: merge each chunk as it arrives, "
    "so that only one chunk's scores are alive at any time."
)
VIOLATES = "peak-memory"


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
    scale = 1.0 / math.sqrt(query.shape[-1])
    blocks = [(query @ key_chunk.transpose(-2, -1)) * scale for key_chunk in key_chunks]
    global_max = blocks[0].amax(dim=-1, keepdim=True)
    for block in blocks[1:]:
        global_max = torch.maximum(global_max, block.amax(dim=-1, keepdim=True))
    output, total = 0, 0
    for block, value_chunk in zip(blocks, value_chunks):
        weights = torch.exp(block - global_max)
        total = total + weights.sum(dim=-1, keepdim=True)
        output = output + weights @ value_chunk
    return output / total
