"""Mistake: the softmax is always taken along the last dimension; the dim argument is ignored."""

TITLE = "Ignores dim and always normalizes the last dimension"
RATIONALE = (
    "Every reduction uses dim=-1, the usual choice for attention scores, whatever dim the caller "
    "asked for. The result is a valid softmax, but of the wrong slices: the rows add up to 1 "
    "where the columns (or another dimension) should."
)
HELP = (
    "Use the dim argument in both reductions: x.amax(dim=dim, keepdim=True) and "
    "weights.sum(dim=dim, keepdim=True). It may be negative or any dimension of x."
)


def softmax(x: torch.Tensor, dim: int) -> torch.Tensor:
    row_max = x.amax(dim=-1, keepdim=True)
    weights = torch.exp(x - row_max)
    return weights / weights.sum(dim=-1, keepdim=True)
