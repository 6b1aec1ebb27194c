"""Exercise 07: ring attention with the online-softmax merge.

Fill in the three functions below. Run `grader run` to check them against the
examples, `grader hint` when you are stuck, and `grader submit` to run every test.

Shapes (``*batch`` is any number of leading dimensions, zero included):
    query        (*batch, Lq, D)
    key_chunk    (*batch, Lk, D)
    value_chunk  (*batch, Lk, Dv)       D may differ from Dv.

Scores are ``query @ key_chunk.transpose(-2, -1) / sqrt(D)``.
Every returned tensor has the query's dtype and device, and no function may
modify its inputs: a chunk received from a ring neighbour is passed on unchanged.
"""

import torch


def attention_chunk_stats(
    query: torch.Tensor, key_chunk: torch.Tensor, value_chunk: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Un-normalized attention statistics of one key/value chunk.

    Compute them as if this chunk were the only one:

    - ``chunk_max``: the row max of the scaled scores, shape ``(*batch, Lq, 1)``.
    - ``chunk_sum``: ``sum(exp(scores - chunk_max))`` over the chunk's keys,
      shape ``(*batch, Lq, 1)``.
    - ``chunk_output``: ``exp(scores - chunk_max) @ value_chunk``,
      shape ``(*batch, Lq, Dv)``.

    Nothing is divided by ``chunk_sum``: the division waits until every chunk
    has been merged.

    Returns:
        ``(chunk_output, chunk_sum, chunk_max)``
    """
    raise NotImplementedError("attention_chunk_stats is not written yet")


def merge_chunk_stats(
    acc_output: torch.Tensor,
    acc_sum: torch.Tensor,
    acc_max: torch.Tensor,
    chunk_output: torch.Tensor,
    chunk_sum: torch.Tensor,
    chunk_max: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Merge two sets of statistics that were computed against different maxes.

    ``new_max = maximum(acc_max, chunk_max)``. Each side is multiplied by
    ``exp(its_own_max - new_max)`` before the two are added, so that both are
    expressed against the same max. Shapes are those of
    ``attention_chunk_stats``.

    Returns:
        ``(output, sum, max)``: the merged statistics, still un-normalized.
    """
    raise NotImplementedError("merge_chunk_stats is not written yet")


def ring_attention(
    query: torch.Tensor,
    key_chunks: list[torch.Tensor],
    value_chunks: list[torch.Tensor],
) -> torch.Tensor:
    """Attention over all chunks, visiting them one at a time as a ring would.

    ``key_chunks`` and ``value_chunks`` have the same length (at least 1), and
    chunk ``i`` of each has the same length (at least 1). Process the chunks one
    after another, as if each arrived from the next GPU around a ring, and never
    build the full score matrix over every key at once.

    Returns:
        ``(*batch, Lq, Dv)``, equal to
        ``softmax(query @ K.transpose(-2, -1) / sqrt(D)) @ V`` over the
        concatenated keys ``K`` and values ``V``, for any split.
    """
    raise NotImplementedError("ring_attention is not written yet")
