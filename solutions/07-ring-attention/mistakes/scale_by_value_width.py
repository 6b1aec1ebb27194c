"""Mistake: the scores are divided by sqrt(Dv), the value width, instead of sqrt(D)."""

TITLE = "Scales scores by sqrt of the value width"
RATIONALE = (
    "The score scale uses the last dimension of the values instead of that of the "
    "query and keys. The two agree only when D equals Dv; otherwise the softmax has "
    "the wrong temperature."
)
HELP = (
    "The scale belongs to the dot product between queries and keys, so take its "
    "width from the query (or key) last dimension, not from the values."
)


def attention_chunk_stats(
    query: torch.Tensor, key_chunk: torch.Tensor, value_chunk: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Un-normalized output, softmax denominator and row max of one chunk."""
    scale = 1.0 / math.sqrt(value_chunk.shape[-1])
    scores = (query @ key_chunk.transpose(-2, -1)) * scale
    chunk_max = scores.amax(dim=-1, keepdim=True)
    weights = torch.exp(scores - chunk_max)
    chunk_sum = weights.sum(dim=-1, keepdim=True)
    chunk_output = weights @ value_chunk
    return chunk_output, chunk_sum, chunk_max
