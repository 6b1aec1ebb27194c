"""Mistake: each chunk's statistics replace the accumulator instead of being merged into it."""

TITLE = "Lets each chunk overwrite the accumulator"
RATIONALE = (
    "Inside the loop the new chunk's statistics are assigned to the running state, "
    "discarding everything accumulated so far. The result is attention over the "
    "last chunk only."
)
HELP = (
    "Every chunk after the first has to be combined with the running state through "
    "merge_chunk_stats, not assigned over it."
)


def ring_attention(
    query: torch.Tensor,
    key_chunks: list[torch.Tensor],
    value_chunks: list[torch.Tensor],
) -> torch.Tensor:
    """Visit the chunks one at a time, merging as they arrive, then normalize once."""
    output, total, running_max = attention_chunk_stats(query, key_chunks[0], value_chunks[0])
    for key_chunk, value_chunk in zip(key_chunks[1:], value_chunks[1:]):
        output, total, running_max = attention_chunk_stats(query, key_chunk, value_chunk)
    return output / total
