"""Mistake: the ring starts from an empty state but loops from the second chunk on."""

TITLE = "Skips the first chunk"
RATIONALE = (
    "The running state starts empty (zero sum, -inf max), yet the loop starts at "
    "index 1, as if the first chunk had already seeded it. The first chunk's keys "
    "never enter the softmax, and with a single chunk the result is 0/0."
)
HELP = (
    "Either seed the running state with the first chunk's statistics, or start from "
    "the empty state and loop over every chunk; do not mix the two."
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
    running_max = query.new_full((*batch_rows, 1), float("-inf"))
    for key_chunk, value_chunk in zip(key_chunks[1:], value_chunks[1:]):
        stats = attention_chunk_stats(query, key_chunk, value_chunk)
        output, total, running_max = merge_chunk_stats(output, total, running_max, *stats)
    return output / total
