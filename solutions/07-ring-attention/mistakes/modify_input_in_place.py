"""Mistake: the merge rescales the accumulator tensors it was given in place."""

TITLE = "Modifies the accumulator inputs in place"
RATIONALE = (
    "The merged values are right, but the merge multiplies and adds into the "
    "accumulator tensors that were passed in. A caller that still holds them (or a "
    "ring that forwards them) sees its data silently changed."
)
HELP = (
    "Build new tensors for the merged output and sum (out-of-place multiply and "
    "add) and leave every argument exactly as it arrived."
)
VIOLATES = "inputs-modified"


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
    chunk_scale = torch.exp(chunk_max - new_max)
    output = acc_output.mul_(acc_scale).add_(chunk_output * chunk_scale)
    total = acc_sum.mul_(acc_scale).add_(chunk_sum * chunk_scale)
    return output, total, new_max
