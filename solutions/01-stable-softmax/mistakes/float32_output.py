"""Mistake: the work is done in float32 and the float32 result is returned, whatever x's dtype."""

TITLE = "Returns float32 whatever the input's dtype"
RATIONALE = (
    "Converting x to float32 first (x.float()) is a fine way to compute a half-precision softmax "
    "accurately, but the result has to go back to x's dtype. A float64 caller gets float32 "
    "numbers, and a bfloat16 or float16 caller gets a tensor twice the size in a dtype it did "
    "not ask for."
)
HELP = (
    "Return a tensor of x's dtype: cast back at the end with .to(x.dtype), or compute in x's "
    "dtype from the start."
)


def softmax(x: torch.Tensor, dim: int) -> torch.Tensor:
    wide = x.float()
    row_max = wide.amax(dim=dim, keepdim=True)
    weights = torch.exp(wide - row_max)
    return weights / weights.sum(dim=dim, keepdim=True)
