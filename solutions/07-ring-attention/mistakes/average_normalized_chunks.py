"""Mistake: the ring averages each chunk's own softmax output instead of merging statistics."""

TITLE = "Averages normalized chunk outputs"
RATIONALE = (
    "Each chunk is normalized on its own and the results are averaged with equal "
    "weight. Softmax over the whole sequence weights a chunk by how much of the "
    "total exp-mass it holds, so an equal-weight average is wrong as soon as there "
    "are two chunks with different masses."
)
HELP = (
    "Keep the un-normalized sums and outputs of every chunk and combine them with "
    "the max-aware merge, dividing only once by the merged sum."
)


def ring_attention(
    query: torch.Tensor,
    key_chunks: list[torch.Tensor],
    value_chunks: list[torch.Tensor],
) -> torch.Tensor:
    """Visit the chunks one at a time, merging as they arrive, then normalize once."""
    result = None
    for key_chunk, value_chunk in zip(key_chunks, value_chunks):
        chunk_output, chunk_sum, _ = attention_chunk_stats(query, key_chunk, value_chunk)
        normalized = chunk_output / chunk_sum
        result = normalized if result is None else result + normalized
    return result / len(key_chunks)
