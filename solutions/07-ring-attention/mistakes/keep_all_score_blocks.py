"""Mistake: the ring stores every chunk's score block, then finds a global max in a second pass."""

TITLE = "Keeps every chunk's score block alive"
RATIONALE = (
    "The values are right, but every chunk's score block is kept in a list until "
    "the global max is known, so peak memory holds the scores against every key at "
    "once, as if the full score matrix had been built."
)
HELP = (
    "Use the running max instead of a global one: merge each chunk as it arrives, "
    "so that only one chunk's scores are alive at any time."
)
VIOLATES = "peak-memory"


def ring_attention(
    query: torch.Tensor,
    key_chunks: list[torch.Tensor],
    value_chunks: list[torch.Tensor],
) -> torch.Tensor:
    """Visit the chunks one at a time, merging as they arrive, then normalize once."""
    scale = 1.0 / math.sqrt(query.shape[-1])
    blocks = [(query @ key_chunk.transpose(-2, -1)) * scale for key_chunk in key_chunks]
    global_max = blocks[0].amax(dim=-1, keepdim=True)
    for block in blocks[1:]:
        global_max = torch.maximum(global_max, block.amax(dim=-1, keepdim=True))
    output, total = 0, 0
    for block, value_chunk in zip(blocks, value_chunks):
        weights = torch.exp(block - global_max)
        total = total + weights.sum(dim=-1, keepdim=True)
        output = output + weights @ value_chunk
    return output / total
