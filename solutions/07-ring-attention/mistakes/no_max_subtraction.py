"""Mistake: the exponentials are taken of the raw scores, without subtracting the row max."""

TITLE = "Exponentiates scores without subtracting the max"
RATIONALE = (
    "The chunk's weights are exp(scores) rather than exp(scores - chunk_max), so "
    "the sum and output do not match the max that is returned with them and the "
    "merge rescales them wrongly. With large scores exp overflows to infinity and "
    "the result becomes NaN."
)
HELP = (
    "Subtract the row max from the scores before exponentiating; every exponent is "
    "then at most 0 and the statistics are expressed against the max you return."
)


def attention_chunk_stats(
    query: torch.Tensor, key_chunk: torch.Tensor, value_chunk: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Un-normalized output, softmax denominator and row max of one chunk."""
    scale = 1.0 / math.sqrt(query.shape[-1])
    scores = (query @ key_chunk.transpose(-2, -1)) * scale
    chunk_max = scores.amax(dim=-1, keepdim=True)
    weights = torch.exp(scores)
    chunk_sum = weights.sum(dim=-1, keepdim=True)
    chunk_output = weights @ value_chunk
    return chunk_output, chunk_sum, chunk_max
