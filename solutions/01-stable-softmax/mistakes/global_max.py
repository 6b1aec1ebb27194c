"""Mistake: one max over the whole tensor is subtracted, instead of one per slice."""

TITLE = "Subtracts one max for the whole tensor instead of one per slice"
RATIONALE = (
    "x.max() is a single number, so nothing overflows, and the softmax of every slice is "
    "mathematically unchanged. But a slice whose scores all sit far below the tensor's largest "
    "score (about 745 below in float64, about 100 in float32) has every exponential underflow "
    "to 0, and that slice becomes 0 / 0 = NaN, or loses its precision on the way there."
)
HELP = (
    "Take the max per slice, along dim: x.amax(dim=dim, keepdim=True). Then every slice has one "
    "entry equal to exp(0) = 1, and its sum can never underflow."
)


def softmax(x: torch.Tensor, dim: int) -> torch.Tensor:
    weights = torch.exp(x - x.max())
    return weights / weights.sum(dim=dim, keepdim=True)
