"""Correct variant: exp(x - logsumexp(x)), with the max subtracted first and the log-sum-exp taken in at least
float32."""

import torch


def softmax(x: torch.Tensor, dim: int) -> torch.Tensor:
    # logsumexp of the scores as they are is their max plus a log between 0 and log(length); far from zero
    # (-1e30, or -1e5 in float32) the max's own rounding swallows that log. So the max is subtracted first:
    # x - max is exact for the entries that matter, and logsumexp of it lies between 0 and log(length). In half
    # precision the log would be rounded to 3 digits, so the work is done in float32 at least and cast back.
    work = x.to(torch.promote_types(x.dtype, torch.float32))
    shifted = work - work.amax(dim=dim, keepdim=True)
    return torch.exp(shifted - torch.logsumexp(shifted, dim=dim, keepdim=True)).to(x.dtype)
