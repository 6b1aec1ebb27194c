"""Correct variant: one pass along dim with a running max and a rescaled running sum (the online softmax).

This is the normalizer FlashAttention and ring attention use: when a larger max turns up, the sum
gathered so far is multiplied by exp(old_max - new_max) so that it is expressed against the new max.
"""

import torch


def softmax(x: torch.Tensor, dim: int) -> torch.Tensor:
    # float32 at least for the running state: a long row summed in half precision drifts.
    work = x.to(torch.promote_types(x.dtype, torch.float32))
    slices = work.unbind(dim)                      # the entries along dim, one tensor per index
    running_max = slices[0]
    running_sum = torch.ones_like(running_max)     # exp(first - first)
    for score in slices[1:]:
        new_max = torch.maximum(running_max, score)
        running_sum = running_sum * torch.exp(running_max - new_max) + torch.exp(score - new_max)
        running_max = new_max
    weights = torch.exp(work - running_max.unsqueeze(dim))
    return (weights / running_sum.unsqueeze(dim)).to(x.dtype)
