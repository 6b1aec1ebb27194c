"""Mistake: x is flattened to a matrix for the product and the result is returned flat."""

TITLE = "Flattens x's leading dimensions and never restores them"
RATIONALE = (
    "x.reshape(-1, d_in) turns any x into a matrix, which is a fine way to multiply, but the rows "
    "it makes stand for x's leading dimensions: (2, 3, d_in) becomes (6, d_in), and a vector becomes "
    "(1, d_in). Returned as they are, the results have the wrong shape whenever x is not already "
    "a matrix."
)
HELP = (
    "Reshape the product back to x.shape[:-1] + (d_out,), or skip the flattening: x @ w already "
    "multiplies along the last dimension and keeps every leading one."
)


def column_parallel_linear(x: torch.Tensor, weight_shards: list[torch.Tensor]) -> torch.Tensor:
    rows = x.reshape(-1, x.shape[-1])
    return torch.cat([rows @ shard for shard in weight_shards], dim=-1)


def row_parallel_linear(x_shards: list[torch.Tensor], weight_shards: list[torch.Tensor]) -> torch.Tensor:
    total = x_shards[0].reshape(-1, x_shards[0].shape[-1]) @ weight_shards[0]
    for x, w in zip(x_shards[1:], weight_shards[1:]):
        total = total + x.reshape(-1, x.shape[-1]) @ w
    return total
