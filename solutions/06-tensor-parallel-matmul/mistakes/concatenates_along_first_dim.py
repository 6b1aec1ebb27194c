"""Mistake: the column shards' outputs are concatenated along dim 0 instead of the last dimension."""

TITLE = "Concatenates the column shards' outputs along the wrong dimension"
RATIONALE = (
    "Each shard's product x @ w_i holds some of the output's columns for every row of x, so the pieces "
    "belong side by side, along the last dimension. torch.cat's default, dim=0, stacks them along the "
    "first dimension instead: the rows of x are repeated once per shard and the columns never line up "
    "(with shards of different widths, torch.cat refuses outright)."
)
HELP = (
    "Concatenate along the output-feature dimension, dim=-1, which stays right whatever the number of "
    "leading dimensions of x."
)


def column_parallel_linear(x: torch.Tensor, weight_shards: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat([x @ shard for shard in weight_shards])
