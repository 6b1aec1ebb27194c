"""Mistake: the shifted exponentials are returned without being divided by their sum."""

TITLE = "Returns the exponentials without dividing by their sum"
RATIONALE = (
    "exp(x - max) is the numerator of the softmax only: its largest entry in each slice is 1 and "
    "the slice adds up to more than 1. Softmax outputs are probabilities, so every slice along "
    "dim must add up to exactly 1."
)
HELP = (
    "Divide the exponentials by their sum along dim: weights / weights.sum(dim=dim, keepdim=True)."
)


def softmax(x: torch.Tensor, dim: int) -> torch.Tensor:
    row_max = x.amax(dim=dim, keepdim=True)
    return torch.exp(x - row_max)
