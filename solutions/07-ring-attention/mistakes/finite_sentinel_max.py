"""Mistake: the running max starts at the finite sentinel -1e4 instead of -inf."""

TITLE = "Starts the running max at a finite sentinel (-1e4)"
RATIONALE = (
    "The running max starts at -1e4, which is only a safe 'minus infinity' while "
    "every score is above it. When all of a row's scores are far below -1e4, each "
    "chunk is rescaled by exp(chunk_max + 1e4), which underflows to 0, and the row "
    "becomes 0/0."
)
HELP = (
    "Do not pick a 'small enough' number: seed the running max with the first "
    "chunk's max, or use -inf and handle the -inf minus -inf case."
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
    running_max = query.new_full((*batch_rows, 1), -1e4)
    for key_chunk, value_chunk in zip(key_chunks, value_chunks):
        stats = attention_chunk_stats(query, key_chunk, value_chunk)
        output, total, running_max = merge_chunk_stats(output, total, running_max, *stats)
    return output / total
