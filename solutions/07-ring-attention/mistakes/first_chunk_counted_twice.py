"""Mistake: the first chunk seeds the accumulator and is then merged again by the loop."""

TITLE = "Counts the first chunk twice"
RATIONALE = (
    "The running state is seeded with the first chunk, and the loop then starts "
    "from the first chunk again, so its keys carry double weight in the softmax. "
    "With a single chunk this cancels out, but with two or more the result is "
    "wrong."
)
HELP = (
    "If the first chunk seeds the running state, the loop must start at the second "
    "chunk; otherwise start from an empty state and loop over every chunk once."
)


def ring_attention(
    query: torch.Tensor,
    key_chunks: list[torch.Tensor],
    value_chunks: list[torch.Tensor],
) -> torch.Tensor:
    """Visit the chunks one at a time, merging as they arrive, then normalize once."""
    output, total, running_max = attention_chunk_stats(query, key_chunks[0], value_chunks[0])
    for key_chunk, value_chunk in zip(key_chunks, value_chunks):
        stats = attention_chunk_stats(query, key_chunk, value_chunk)
        output, total, running_max = merge_chunk_stats(output, total, running_max, *stats)
    return output / total
