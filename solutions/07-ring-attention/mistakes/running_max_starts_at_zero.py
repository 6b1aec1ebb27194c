"""Mistake: the running max starts at 0 instead of coming from the first chunk."""

TITLE = "Starts the running max at 0"
RATIONALE = (
    "The running max starts at 0, so every chunk is rescaled by exp(chunk_max - 0) "
    "when it is merged. For very negative scores that factor underflows to 0, the "
    "sum and output vanish, and the final division is 0/0."
)
HELP = (
    "The running max must never be larger than a real score: seed it with the first "
    "chunk's max (or with -inf, taking care of the -inf minus -inf case)."
)


def ring_attention(
    query: torch.Tensor,
    key_chunks: list[torch.Tensor],
    value_chunks: list[torch.Tensor],
) -> torch.Tensor:
    """Visit the chunks one at a time, merging as they arrive, then normalize once."""
    batch_rows = query.shape[:-1]
    output = query.new_zeros(*batch_rows, value_chunks[0].shape[-1])
    total = query.new_zeros(*batch_rows, 1)
    running_max = query.new_zeros(*batch_rows, 1)
    for key_chunk, value_chunk in zip(key_chunks, value_chunks):
        stats = attention_chunk_stats(query, key_chunk, value_chunk)
        output, total, running_max = merge_chunk_stats(output, total, running_max, *stats)
    return output / total
