"""Mistake: the max is always taken over the last dimension, whatever dim is."""

TITLE = "Takes the max over the last dimension instead of dim"
RATIONALE = (
    "The exponentials and the sum are along dim, but the max that is subtracted is taken along "
    "the last dimension. Subtracting a number leaves the softmax unchanged only when it is the "
    "same for every entry of the slice being normalized; a max over another dimension varies "
    "along dim, so the slices come out skewed. With dim = -1 it happens to be right."
)
HELP = (
    "Take the max along the same dimension you normalize over: x.amax(dim=dim, keepdim=True), "
    "not x.amax(dim=-1, keepdim=True)."
)


def softmax(x: torch.Tensor, dim: int) -> torch.Tensor:
    row_max = x.amax(dim=-1, keepdim=True)
    weights = torch.exp(x - row_max)
    return weights / weights.sum(dim=dim, keepdim=True)
