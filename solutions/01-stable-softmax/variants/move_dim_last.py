"""Correct variant: move dim to the end, normalize the last dimension, move it back."""

import torch


def softmax(x: torch.Tensor, dim: int) -> torch.Tensor:
    last = x.movedim(dim, -1)                      # a view: dim is now the last dimension
    shifted = last - last.max(dim=-1, keepdim=True).values
    weights = shifted.exp()
    result = weights / weights.sum(dim=-1, keepdim=True)
    return result.movedim(-1, dim)                 # the same dimension order as x
