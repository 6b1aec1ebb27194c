"""Mistake: the exponentials are divided by their sum over the whole tensor, not along dim."""

TITLE = "Normalizes by the sum over the whole tensor instead of along dim"
RATIONALE = (
    "weights.sum() with no dim adds up every entry of the tensor, so the whole tensor adds up to "
    "1 instead of each slice along dim. For a 1-D tensor that is the same thing, which is why "
    "it can look right at first."
)
HELP = (
    "Sum along the dimension you normalize over, and keep it for broadcasting: "
    "weights.sum(dim=dim, keepdim=True)."
)


def softmax(x: torch.Tensor, dim: int) -> torch.Tensor:
    row_max = x.amax(dim=dim, keepdim=True)
    weights = torch.exp(x - row_max)
    return weights / weights.sum()
