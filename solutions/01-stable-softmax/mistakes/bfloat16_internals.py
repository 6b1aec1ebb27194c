"""Mistake: the softmax is computed in bfloat16 and cast back to x's dtype at the end."""

TITLE = "Computes in bfloat16 and casts back"
RATIONALE = (
    "bfloat16 keeps about 3 significant digits. The result has x's dtype, but a float32 or "
    "float64 caller gets answers a thousand times less accurate than its dtype allows, and large "
    "scores are rounded before the max is even subtracted: near 1000, bfloat16 numbers are 4 "
    "apart."
)
HELP = (
    "Compute in x's own dtype (or wider, then cast back); never narrow the input to save memory "
    "or time before the arithmetic."
)


def softmax(x: torch.Tensor, dim: int) -> torch.Tensor:
    narrow = x.to(torch.bfloat16)
    row_max = narrow.amax(dim=dim, keepdim=True)
    weights = torch.exp(narrow - row_max)
    return (weights / weights.sum(dim=dim, keepdim=True)).to(x.dtype)
