"""Mistake: the max starts at the finite sentinel -10000 (llm.c's CPU softmax), not at the slice's own scores."""

TITLE = "Starts the max at a finite sentinel (-10000)"
RATIONALE = (
    "The max is found by starting at -10000 and keeping any score above it, as llm.c's CPU softmax does "
    "('TODO something better'). While some score of a slice is above -10000 the softmax is right. When every "
    "score is below it, the max stays -10000, every exp(score + 10000) underflows to 0, and the slice is "
    "0 / 0 = NaN. Any finite seed fails the same way further down (-1e6 below -1e6, -5e4 in float16 near its "
    "limit of -65504): the scores may be anything the dtype holds."
)
HELP = (
    "Take the max of the slice itself, x.amax(dim, keepdim=True), or start a running max at the slice's first "
    "score; never at a number that only seems small enough."
)


def softmax(x: torch.Tensor, dim: int) -> torch.Tensor:
    # maxval = -10000; for each score: if score > maxval: maxval = score
    row_max = x.amax(dim=dim, keepdim=True).clamp(min=-10000.0)
    weights = torch.exp(x - row_max)
    return weights / weights.sum(dim=dim, keepdim=True)
