"""Mistake: the merge multiplies each side by exp(new_max - own_max), the inverse factor."""

TITLE = "Uses the inverted rescale factor exp(new_max - own_max)"
RATIONALE = (
    "The rescale factors are upside down: a side whose max is below the shared max "
    "gets multiplied by a number larger than 1 instead of smaller. That side ends "
    "up over-weighted, and with large gaps between maxes the factor overflows."
)
HELP = (
    "Check the direction of the subtraction in the exponent: every factor should be "
    "at most 1, so the side's own max comes first and the shared max is subtracted "
    "from it."
)


def merge_chunk_stats(
    acc_output: torch.Tensor,
    acc_sum: torch.Tensor,
    acc_max: torch.Tensor,
    chunk_output: torch.Tensor,
    chunk_sum: torch.Tensor,
    chunk_max: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Re-express both sides against their shared max, then add them."""
    new_max = torch.maximum(acc_max, chunk_max)
    acc_scale = torch.exp(new_max - acc_max)
    chunk_scale = torch.exp(new_max - chunk_max)
    output = acc_output * acc_scale + chunk_output * chunk_scale
    total = acc_sum * acc_scale + chunk_sum * chunk_scale
    return output, total, new_max
