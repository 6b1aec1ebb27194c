"""Mistake: the ring concatenates every key and value chunk and attends over them at once."""

TITLE = "Concatenates all keys and values"
RATIONALE = (
    "The values are right, but concatenating every chunk builds the full key and "
    "value sequences and the full score matrix on one device, which is exactly what "
    "ring attention exists to avoid."
)
HELP = (
    "Process one key/value chunk at a time: compute its statistics, merge them into "
    "the running state, and only then move on to the next chunk."
)
VIOLATES = "materialization"


def ring_attention(
    query: torch.Tensor,
    key_chunks: list[torch.Tensor],
    value_chunks: list[torch.Tensor],
) -> torch.Tensor:
    """Visit the chunks one at a time, merging as they arrive, then normalize once."""
    all_keys = torch.cat(key_chunks, dim=-2)
    all_values = torch.cat(value_chunks, dim=-2)
    output, total, _ = attention_chunk_stats(query, all_keys, all_values)
    return output / total
