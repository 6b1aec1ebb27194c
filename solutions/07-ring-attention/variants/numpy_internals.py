"""Correct variant: the arithmetic runs in NumPy float64 on the CPU, results go back to torch."""

import math

import numpy as np
import torch


def _np(t: torch.Tensor) -> np.ndarray:
    """float64 NumPy copy of a tensor; torch does the cast, so bfloat16 and float16 work too."""
    return t.detach().to(device="cpu", dtype=torch.float64).numpy()


def _torch(a: np.ndarray, like: torch.Tensor) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a)).to(device=like.device, dtype=like.dtype)


def _stats_np(q: np.ndarray, k: np.ndarray, v: np.ndarray):
    scores = np.matmul(q, np.swapaxes(k, -1, -2)) / math.sqrt(q.shape[-1])
    row_max = scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores - row_max)
    return np.matmul(weights, v), weights.sum(axis=-1, keepdims=True), row_max


def _merge_np(a_out, a_sum, a_max, c_out, c_sum, c_max):
    new_max = np.maximum(a_max, c_max)
    a_scale = np.exp(a_max - new_max)
    c_scale = np.exp(c_max - new_max)
    return a_out * a_scale + c_out * c_scale, a_sum * a_scale + c_sum * c_scale, new_max


def attention_chunk_stats(
    query: torch.Tensor, key_chunk: torch.Tensor, value_chunk: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Un-normalized output, softmax denominator and row max of one chunk."""
    stats = _stats_np(_np(query), _np(key_chunk), _np(value_chunk))
    return tuple(_torch(a, query) for a in stats)


def merge_chunk_stats(
    acc_output: torch.Tensor,
    acc_sum: torch.Tensor,
    acc_max: torch.Tensor,
    chunk_output: torch.Tensor,
    chunk_sum: torch.Tensor,
    chunk_max: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Re-express both sides against their shared max, then add them."""
    sides = (acc_output, acc_sum, acc_max, chunk_output, chunk_sum, chunk_max)
    merged = _merge_np(*(_np(t) for t in sides))
    return tuple(_torch(a, acc_output) for a in merged)


def ring_attention(
    query: torch.Tensor,
    key_chunks: list[torch.Tensor],
    value_chunks: list[torch.Tensor],
) -> torch.Tensor:
    """Run the whole ring on NumPy float64 arrays, converting one chunk at a time."""
    q = _np(query)
    state = _stats_np(q, _np(key_chunks[0]), _np(value_chunks[0]))
    for key_chunk, value_chunk in zip(key_chunks[1:], value_chunks[1:]):
        state = _merge_np(*state, *_stats_np(q, _np(key_chunk), _np(value_chunk)))
    output, total, _ = state
    return _torch(output / total, query)
