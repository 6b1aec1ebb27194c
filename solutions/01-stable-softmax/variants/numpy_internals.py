"""Correct variant: the arithmetic in NumPy (float64), the result back in a tensor of x's dtype and device."""

import numpy as np
import torch


def softmax(x: torch.Tensor, dim: int) -> torch.Tensor:
    # NumPy has no bfloat16, so the values go over as float64; .numpy() copies nothing x owns.
    values = x.detach().to("cpu", torch.float64).numpy()
    shifted = values - values.max(axis=dim, keepdims=True)
    weights = np.exp(shifted)
    result = weights / weights.sum(axis=dim, keepdims=True)
    return torch.from_numpy(result).to(device=x.device, dtype=x.dtype)
