"""Correct variant: exp(x - logsumexp(x)), with the log-sum-exp taken in at least float32."""

import torch


def softmax(x: torch.Tensor, dim: int) -> torch.Tensor:
    # logsumexp subtracts the max internally, so it never overflows. In half precision its result
    # (a number near the largest score) would be rounded to 3 digits and that error would land in
    # every exponent, so the work is done in float32 at least and cast back at the end.
    work = x.to(torch.promote_types(x.dtype, torch.float32))
    log_total = torch.logsumexp(work, dim=dim, keepdim=True)
    return torch.exp(work - log_total).to(x.dtype)
