"""Mistake: the ring keeps its running statistics in bfloat16 and casts back at the end."""

TITLE = "Accumulates the running state in bfloat16"
RATIONALE = (
    "The running output, sum and max are stored in bfloat16, which keeps only about "
    "three significant digits. The result has the right dtype but loses far more "
    "precision than a float32 or float64 input allows."
)
HELP = (
    "Keep the running state in the query's dtype; do not cast to a lower precision "
    "to save memory."
)


def ring_attention(
    query: torch.Tensor,
    key_chunks: list[torch.Tensor],
    value_chunks: list[torch.Tensor],
) -> torch.Tensor:
    """Visit the chunks one at a time, merging as they arrive, then normalize once."""
    stats = attention_chunk_stats(query, key_chunks[0], value_chunks[0])
    output, total, running_max = (t.to(torch.bfloat16) for t in stats)
    for key_chunk, value_chunk in zip(key_chunks[1:], value_chunks[1:]):
        stats = attention_chunk_stats(query, key_chunk, value_chunk)
        stats = [t.to(torch.bfloat16) for t in stats]
        output, total, running_max = merge_chunk_stats(output, total, running_max, *stats)
    return (output / total).to(query.dtype)
