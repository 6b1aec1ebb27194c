"""Mistake: each chunk's output is divided by its own sum before it is merged."""

TITLE = "Normalizes each chunk before merging"
RATIONALE = (
    "The chunk output is divided by the chunk's own sum, so it is already a "
    "weighted average, while the merge and the final division still treat it as an "
    "un-normalized sum. Each chunk ends up divided twice and weighted by "
    "1/chunk_sum instead of by its share of the total."
)
HELP = (
    "Keep chunk_output un-normalized: it should be exp(scores - chunk_max) times "
    "the values, and the only division happens once, at the end of the ring."
)


def attention_chunk_stats(
    query: torch.Tensor, key_chunk: torch.Tensor, value_chunk: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Un-normalized output, softmax denominator and row max of one chunk."""
    scale = 1.0 / math.sqrt(query.shape[-1])
    scores = (query @ key_chunk.transpose(-2, -1)) * scale
    chunk_max = scores.amax(dim=-1, keepdim=True)
    weights = torch.exp(scores - chunk_max)
    chunk_sum = weights.sum(dim=-1, keepdim=True)
    chunk_output = (weights / chunk_sum) @ value_chunk
    return chunk_output, chunk_sum, chunk_max
