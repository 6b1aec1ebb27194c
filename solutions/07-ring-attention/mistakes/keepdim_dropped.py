"""Mistake: the chunk max and sum are returned without their trailing size-1 dimension."""

TITLE = "Drops keepdim on the chunk max and sum"
RATIONALE = (
    "The max and sum are returned with shape (*batch, Lq) instead of (*batch, Lq, "
    "1). The ring adds the dimension back itself, so its result is right, but any "
    "caller of attention_chunk_stats gets statistics that do not broadcast against "
    "the output."
)
HELP = (
    "Return chunk_max and chunk_sum with shape (*batch, Lq, 1), as the contract "
    "says, instead of patching the shape up later in the ring."
)


def attention_chunk_stats(
    query: torch.Tensor, key_chunk: torch.Tensor, value_chunk: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Un-normalized output, softmax denominator and row max of one chunk."""
    scale = 1.0 / math.sqrt(query.shape[-1])
    scores = (query @ key_chunk.transpose(-2, -1)) * scale
    chunk_max = scores.amax(dim=-1)
    weights = torch.exp(scores - chunk_max.unsqueeze(-1))
    chunk_sum = weights.sum(dim=-1)
    chunk_output = weights @ value_chunk
    return chunk_output, chunk_sum, chunk_max


def ring_attention(
    query: torch.Tensor,
    key_chunks: list[torch.Tensor],
    value_chunks: list[torch.Tensor],
) -> torch.Tensor:
    """Visit the chunks one at a time, merging as they arrive, then normalize once."""
    output, total, running_max = attention_chunk_stats(query, key_chunks[0], value_chunks[0])
    total, running_max = total.unsqueeze(-1), running_max.unsqueeze(-1)
    for key_chunk, value_chunk in zip(key_chunks[1:], value_chunks[1:]):
        chunk_output, chunk_sum, chunk_max = attention_chunk_stats(query, key_chunk, value_chunk)
        output, total, running_max = merge_chunk_stats(
            output, total, running_max,
            chunk_output, chunk_sum.unsqueeze(-1), chunk_max.unsqueeze(-1),
        )
    return output / total
