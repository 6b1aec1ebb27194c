"""Mistake: the max is subtracted from x in place, changing the caller's tensor."""

TITLE = "Subtracts the max from x in place"
RATIONALE = (
    "x.sub_(row_max) (or x -= row_max) saves one tensor, and the returned softmax is right, but "
    "it overwrites the caller's scores: whoever passed x in now holds x - max. A function like "
    "softmax must leave its input exactly as it was."
)
HELP = (
    "Write the shifted scores into a new tensor: shifted = x - row_max, then exp(shifted). "
    "In-place operations are fine on tensors you created yourself, never on an argument."
)
VIOLATES = "inputs-modified"


def softmax(x: torch.Tensor, dim: int) -> torch.Tensor:
    row_max = x.amax(dim=dim, keepdim=True)
    weights = torch.exp(x.sub_(row_max))
    return weights / weights.sum(dim=dim, keepdim=True)
