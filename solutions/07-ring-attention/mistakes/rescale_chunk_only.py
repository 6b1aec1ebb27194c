"""Mistake: the merge rescales the new chunk but adds the accumulator unscaled."""

TITLE = "Rescales only the new chunk"
RATIONALE = (
    "Only the incoming chunk is brought to the new max; the accumulator keeps the "
    "scale of its old max. When a later chunk raises the max, everything merged so "
    "far is weighted too heavily."
)
HELP = (
    "The accumulator was computed against the old running max, so it too must be "
    "multiplied by exp(old max minus new max) before the two are added."
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
    chunk_scale = torch.exp(chunk_max - new_max)
    output = acc_output + chunk_output * chunk_scale
    total = acc_sum + chunk_sum * chunk_scale
    return output, total, new_max
