"""Mistake: the min of each slice is subtracted instead of the max."""

TITLE = "Subtracts the min instead of the max"
RATIONALE = (
    "Subtracting any per-slice constant leaves the softmax unchanged, so the answer is right on "
    "ordinary scores. But after subtracting the min every exponent is at least 0 and can be as "
    "large as the slice's spread: a slice holding -1000 and +1000 exponentiates 2000 and "
    "overflows to inf. The point of the shift is to make every exponent at most 0."
)
HELP = (
    "Subtract the max, x.amax(dim=dim, keepdim=True): the largest exponent is then exactly 0, "
    "nothing can overflow, and the sum is at least 1."
)


def softmax(x: torch.Tensor, dim: int) -> torch.Tensor:
    row_min = x.amin(dim=dim, keepdim=True)
    weights = torch.exp(x - row_min)
    return weights / weights.sum(dim=dim, keepdim=True)
