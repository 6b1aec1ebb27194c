"""Mistake: torch's own softmax is called instead of writing one."""

TITLE = "Calls torch.softmax"
RATIONALE = (
    "torch.softmax (and F.softmax, Tensor.softmax, log_softmax followed by exp) gives the right "
    "numbers, since it subtracts the max internally, but this exercise asks you to build the "
    "stable softmax yourself, and the grader sees the operator it runs."
)
HELP = (
    "Build it from amax, exp and sum: subtract the max along dim, exponentiate, divide by the "
    "sum along dim. torch.logsumexp is allowed if you prefer exp(x - logsumexp(x))."
)
VIOLATES = "forbidden"


def softmax(x: torch.Tensor, dim: int) -> torch.Tensor:
    return torch.softmax(x, dim=dim)
