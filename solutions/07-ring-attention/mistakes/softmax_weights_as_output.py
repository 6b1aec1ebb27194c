"""Mistake: the chunk output uses softmax-normalized weights instead of exp(scores - max)."""

TITLE = "Uses softmax weights for the chunk output"
RATIONALE = (
    "The chunk output is built from torch.softmax of the scores, which already "
    "divides by the chunk's sum, while the sum returned alongside it is "
    "un-normalized. Each chunk's average is then merged with its rescale factor "
    "alone, not with its share of the exp-mass, and divided by the total once more "
    "at the end."
)
HELP = (
    "chunk_output must be the un-normalized exp(scores - chunk_max) times the "
    "values; the softmax division waits until every chunk is merged."
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
    chunk_output = torch.softmax(scores, dim=-1) @ value_chunk
    return chunk_output, chunk_sum, chunk_max
