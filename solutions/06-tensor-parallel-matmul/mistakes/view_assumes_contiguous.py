"""Mistake: the leading dimensions are merged with view, which needs contiguous memory."""

TITLE = "Merges x's leading dimensions with view, which fails on a non-contiguous x"
RATIONALE = (
    "x.view(-1, d_in) reinterprets x's memory without copying, which works only when the leading "
    "dimensions lie one after another in memory. An x that is a transposed view, or a slice of a "
    "larger tensor (as activations often are), is not laid out that way, and view raises."
)
HELP = (
    "Use reshape, which copies only when it must, or skip the flattening: x @ w multiplies along the "
    "last dimension whatever x's layout and leading dimensions."
)


def column_parallel_linear(x: torch.Tensor, weight_shards: list[torch.Tensor]) -> torch.Tensor:
    rows = x.view(-1, x.shape[-1])
    flat = torch.cat([rows @ shard for shard in weight_shards], dim=-1)
    return flat.view(*x.shape[:-1], flat.shape[-1])


def row_parallel_linear(x_shards: list[torch.Tensor], weight_shards: list[torch.Tensor]) -> torch.Tensor:
    total = x_shards[0].view(-1, x_shards[0].shape[-1]) @ weight_shards[0]
    for x, w in zip(x_shards[1:], weight_shards[1:]):
        total = total + x.view(-1, x.shape[-1]) @ w
    return total.view(*x_shards[0].shape[:-1], total.shape[-1])
