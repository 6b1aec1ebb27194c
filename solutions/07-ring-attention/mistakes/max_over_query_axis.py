"""Mistake: the max is taken over the query axis (dim=-2) instead of the key axis."""

TITLE = "Takes the max over the query axis"
RATIONALE = (
    "The max is computed down each key's column instead of along each query row. A "
    "different amount is then subtracted from each key's score, which changes the "
    "softmax proportions within a row, and the returned max has shape (*batch, 1, "
    "Lk) instead of (*batch, Lq, 1)."
)
HELP = (
    "Scores have shape (*batch, Lq, Lk); the softmax runs over keys, so reduce over "
    "the last dimension and keep it as size 1."
)


def attention_chunk_stats(
    query: torch.Tensor, key_chunk: torch.Tensor, value_chunk: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Un-normalized output, softmax denominator and row max of one chunk."""
    scale = 1.0 / math.sqrt(query.shape[-1])
    scores = (query @ key_chunk.transpose(-2, -1)) * scale
    chunk_max = scores.amax(dim=-2, keepdim=True)
    weights = torch.exp(scores - chunk_max)
    chunk_sum = weights.sum(dim=-1, keepdim=True)
    chunk_output = weights @ value_chunk
    return chunk_output, chunk_sum, chunk_max
