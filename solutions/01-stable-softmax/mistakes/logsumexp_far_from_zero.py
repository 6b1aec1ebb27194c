"""Mistake: exp(x - logsumexp(x)) with the scores as they are, in float32 at least: exact near zero only."""

TITLE = "Subtracts the log-sum-exp from scores far from zero"
RATIONALE = (
    "logsumexp(x) is the slice's max plus the log of a sum between 1 and the slice's length. Far from "
    "zero the max itself is rounded more coarsely than that log: at -1e30 in float64, -1e30 + log(5) is "
    "-1e30 again, so every exp(x - logsumexp) is 1 and a slice of five sums to 5; near -100000 in float32 "
    "the numbers are 0.008 apart, and every exponent is off by up to that much. Widening to float32 or "
    "float64 only moves the point where it breaks."
)
HELP = (
    "Subtract the max first, m = x.amax(dim, keepdim=True): x - m is exact for the scores that matter, and "
    "logsumexp(x - m) lies between 0 and log(length). Then exp((x - m) - logsumexp(x - m)), or simply "
    "exp(x - m) / its sum."
)


def softmax(x: torch.Tensor, dim: int) -> torch.Tensor:
    work = x.to(torch.promote_types(x.dtype, torch.float32))
    log_total = torch.logsumexp(work, dim=dim, keepdim=True)
    return torch.exp(work - log_total).to(x.dtype)
