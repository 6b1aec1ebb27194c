"""Mistake: one max over the whole score block is used for every row."""

TITLE = "Uses one scalar max for the whole block"
RATIONALE = (
    "The max is taken over every score in the block, all rows and batch entries "
    "together, instead of per query row. A row whose scores sit far below the "
    "block's largest score has all its exponentials underflow to 0, and the row "
    "becomes 0/0."
)
HELP = (
    "Take the max along the key axis only, one value per query row, so that every "
    "row has at least one exponent equal to exp(0)."
)


def attention_chunk_stats(
    query: torch.Tensor, key_chunk: torch.Tensor, value_chunk: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Un-normalized output, softmax denominator and row max of one chunk."""
    scale = 1.0 / math.sqrt(query.shape[-1])
    scores = (query @ key_chunk.transpose(-2, -1)) * scale
    chunk_max = scores.max().expand(*scores.shape[:-1], 1)
    weights = torch.exp(scores - chunk_max)
    chunk_sum = weights.sum(dim=-1, keepdim=True)
    chunk_output = weights @ value_chunk
    return chunk_output, chunk_sum, chunk_max
