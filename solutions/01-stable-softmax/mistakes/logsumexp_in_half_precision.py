"""Mistake: exp(x - logsumexp(x)) computed in x's own dtype, half precision included."""

TITLE = "Takes the log-sum-exp in half precision"
RATIONALE = (
    "exp(x - logsumexp(x)) is an overflow-safe softmax, and in float32 or float64 it passes on "
    "scores of moderate size. But logsumexp returns a number about as large as the biggest score, and bfloat16 "
    "or float16 round it to 3 or 4 significant digits: near 100 a bfloat16 number is 0.5 away "
    "from the next. That rounding error lands inside every exponent, so every output is off by "
    "the same factor, and the slices no longer add up to 1."
)
HELP = (
    "For bfloat16 and float16 inputs, widen first (x.float()), take logsumexp and exp there, and "
    "cast the result back with .to(x.dtype). Or subtract the max instead: x - max is exact for "
    "the entries that matter, and the sum only has to be accurate relative to itself."
)


def softmax(x: torch.Tensor, dim: int) -> torch.Tensor:
    return torch.exp(x - torch.logsumexp(x, dim=dim, keepdim=True))
