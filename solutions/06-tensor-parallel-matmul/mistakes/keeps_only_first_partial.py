"""Mistake: row_parallel_linear returns the first shard's partial sum alone."""

TITLE = "Returns one shard's partial sum instead of the sum of all of them"
RATIONALE = (
    "x_shards[0] @ weight_shards[0] has the right shape, but it holds only the contribution of the "
    "first shard's input features: the other shards' features are missing from every output. On "
    "GPUs this is the layer whose all-reduce was left out: each rank keeps its own partial sum."
)
HELP = (
    "Compute x_i @ w_i for every shard and add them all; only with a single shard is the first "
    "partial sum the answer."
)


def row_parallel_linear(x_shards: list[torch.Tensor], weight_shards: list[torch.Tensor]) -> torch.Tensor:
    return x_shards[0] @ weight_shards[0]
