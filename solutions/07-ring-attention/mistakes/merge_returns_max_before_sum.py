"""Mistake: the merge returns (output, max, sum) instead of (output, sum, max)."""

TITLE = "Returns the merged statistics in the wrong order"
RATIONALE = (
    "The merge returns the max in the sum's place and the sum in the max's place. "
    "The ring unpacks them in the same swapped order, so its result is right, but "
    "any other caller of merge_chunk_stats reads the max as the sum."
)
HELP = (
    "Return the merged statistics in the order the contract gives, (output, sum, "
    "max), the same order attention_chunk_stats uses."
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
    chunk_scale = torch.exp(chunk_max - new_max)
    output = acc_output * acc_scale + chunk_output * chunk_scale
    total = acc_sum * acc_scale + chunk_sum * chunk_scale
    return output, new_max, total


def ring_attention(
    query: torch.Tensor,
    key_chunks: list[torch.Tensor],
    value_chunks: list[torch.Tensor],
) -> torch.Tensor:
    """Visit the chunks one at a time, merging as they arrive, then normalize once."""
    output, total, running_max = attention_chunk_stats(query, key_chunks[0], value_chunks[0])
    for key_chunk, value_chunk in zip(key_chunks[1:], value_chunks[1:]):
        stats = attention_chunk_stats(query, key_chunk, value_chunk)
        output, running_max, total = merge_chunk_stats(output, total, running_max, *stats)
    return output / total
