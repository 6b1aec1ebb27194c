"""Mistake: the scores are exponentiated as they are, with no max subtracted first."""

TITLE = "Exponentiates the scores without subtracting the max"
RATIONALE = (
    "exp(x) / sum(exp(x)) is the textbook formula, but exp of a large score does not fit in a "
    "float: exp(1000) is inf in float64 and exp(100) is inf in float32, so the slice becomes "
    "inf / inf = NaN. Very negative scores fail the other way: every exp is 0 and the slice is "
    "0 / 0. Ordinary scores between about -80 and 80 hide the problem."
)
HELP = (
    "Subtract each slice's max along dim (x.amax(dim, keepdim=True)) before exp. The softmax "
    "does not change, every exponent is then at most 0, and the largest term is exactly 1."
)


def softmax(x: torch.Tensor, dim: int) -> torch.Tensor:
    weights = torch.exp(x)
    return weights / weights.sum(dim=dim, keepdim=True)
