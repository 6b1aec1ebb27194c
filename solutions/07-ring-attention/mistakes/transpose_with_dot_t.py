"""Mistake: the keys are transposed with .T, which reverses every dimension of a batched tensor."""

TITLE = "Transposes the keys with .T"
RATIONALE = (
    "On a 2-D key chunk .T swaps the last two dimensions as intended, but with "
    "leading batch dimensions it reverses all of them, so the matrix product either "
    "fails or pairs the wrong entries."
)
HELP = (
    "Transpose only the last two dimensions (transpose(-2, -1) or .mT) so that any "
    "number of leading batch dimensions is kept in place."
)


def attention_chunk_stats(
    query: torch.Tensor, key_chunk: torch.Tensor, value_chunk: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Un-normalized output, softmax denominator and row max of one chunk."""
    scale = 1.0 / math.sqrt(query.shape[-1])
    scores = (query @ key_chunk.T) * scale
    chunk_max = scores.amax(dim=-1, keepdim=True)
    weights = torch.exp(scores - chunk_max)
    chunk_sum = weights.sum(dim=-1, keepdim=True)
    chunk_output = weights @ value_chunk
    return chunk_output, chunk_sum, chunk_max
