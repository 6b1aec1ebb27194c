"""Mistake: the merge rescales the accumulator but adds the new chunk unscaled."""

TITLE = "Rescales only the accumulator"
RATIONALE = (
    "Only the running accumulator is brought to the new max; the incoming chunk is "
    "added as if its own max were already the shared one. When the accumulator "
    "holds the larger max, the chunk's weights come out too large by exp(chunk_max "
    "- new_max)."
)
HELP = (
    "Both sides need the same treatment: the incoming chunk also has to be "
    "multiplied by exp(its own max minus the new max)."
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
    acc_scale = torch.exp(acc_max - new_max)
    output = acc_output * acc_scale + chunk_output
    total = acc_sum * acc_scale + chunk_sum
    return output, total, new_max
