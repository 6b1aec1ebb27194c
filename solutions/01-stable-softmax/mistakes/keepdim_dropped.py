"""Mistake: the max and the sum are taken without keepdim, so they no longer line up with x."""

TITLE = "Drops the reduced dimension of the max and the sum"
RATIONALE = (
    "x.amax(dim) and weights.sum(dim) remove dimension dim. Broadcasting then lines the "
    "result up with x from the right, which is only correct when dim is the first dimension: "
    "otherwise the subtraction fails with a shape error, or, when two sizes happen to be equal "
    "(a square matrix), quietly subtracts and divides by the wrong slice's values."
)
HELP = (
    "Pass keepdim=True to amax and sum so that the reduced dimension stays in place with size "
    "1 and broadcasts along dim, whichever dim that is."
)


def softmax(x: torch.Tensor, dim: int) -> torch.Tensor:
    row_max = x.amax(dim=dim)
    weights = torch.exp(x - row_max)
    return weights / weights.sum(dim=dim)
