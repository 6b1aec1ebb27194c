"""Mistake: the scores are not divided by sqrt(D)."""

TITLE = "Forgets the 1/sqrt(D) score scale"
RATIONALE = (
    "The scores are the raw dot products, without the division by the square root "
    "of the query/key width. The softmax is then sharper than the one asked for, so "
    "the weights and the output are wrong (except when D is 1)."
)
HELP = (
    "Scale the dot products by 1/sqrt(D), where D is the last dimension of the "
    "query and keys, before taking the max and the exponential."
)


def attention_chunk_stats(
    query: torch.Tensor, key_chunk: torch.Tensor, value_chunk: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Un-normalized output, softmax denominator and row max of one chunk."""
    scores = query @ key_chunk.transpose(-2, -1)
    chunk_max = scores.amax(dim=-1, keepdim=True)
    weights = torch.exp(scores - chunk_max)
    chunk_sum = weights.sum(dim=-1, keepdim=True)
    chunk_output = weights @ value_chunk
    return chunk_output, chunk_sum, chunk_max
