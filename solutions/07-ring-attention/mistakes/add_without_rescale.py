"""Mistake: the merge adds the two sides' statistics without rescaling either one."""

TITLE = "Adds chunk statistics without rescaling"
RATIONALE = (
    "The merge adds the accumulator and the new chunk as they are, but each side's "
    "sum and output were computed against its own max. Adding numbers measured "
    "against different maxes weights some chunks too heavily, so the final softmax "
    "is wrong whenever the chunks' maxes differ."
)
HELP = (
    "Before adding, bring both sides to the shared max: multiply each side's sum "
    "and output by exp(its own max minus the new max)."
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
    output = acc_output + chunk_output
    total = acc_sum + chunk_sum
    return output, total, new_max
